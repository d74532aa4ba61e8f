// The fused blocks give the same bits as the unfused ones: qkv_rope (Q/K/V split with bias, per-head
// norm and RoPE in one pass) against linear_parts + rms_norm + RopeTable::apply, swiglu_ffn on a fused
// gate/up product against separate gate and up products, and whole models with the fused path against
// the unfused one the debug dump forces. Also the reuse of activations across forward calls.
//
// NOTE: equality is exact (bit for bit): the fused paths run the same row kernels on the same inputs
// in the same order (the bias add rounds to float before the norm or rotation in both), and the fused
// product's rows are the same dot products as the separate products'.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "model/blocks.h"
#include "model/elementwise_kernel.h"
#include "model/model.h"
#include "model_test_util.h"

namespace ignis::model::test {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct QkvCase {
  const char* name;
  bool neox, biases, norms, freq_factors;
  int64_t head_dim, n_rot;
};

TEST(QkvRope, FusedEqualsUnfusedBlocks) {
  const QkvCase cases[] = {
      {"llama", false, false, false, true, 16, 16},  {"llama-biases", false, true, false, true, 40, 34},
      {"qwen2", true, true, false, false, 24, 24},    {"qwen3", true, false, true, false, 20, 20},
      {"norm+bias", true, true, true, false, 36, 20},
  };
  const int64_t n_embd = 40, n_head = 4, n_head_kv = 2, n_tokens = 9;
  for (const QkvCase& c : cases) {
    const int64_t hd = c.head_dim, n_q = n_head * hd, n_kv = n_head_kv * hd, n_out = n_q + 2 * n_kv;
    // One weight array holding the rows of Q, K and V: the fused view and the three parts share it.
    const std::vector<float> wdata = randn(n_out * n_embd, 1, 0.3f), x = randn(n_tokens * n_embd, 2);
    const std::vector<float> bias = randn(n_out, 3), qn = randn(hd, 4), kn = randn(hd, 5);
    const std::vector<float> factors = {1.0f, 2.0f, 3.0f, 5.0f, 8.0f, 1.5f, 1.25f, 4.0f, 6.0f, 7.0f,
                                        9.0f, 1.0f, 2.0f, 3.0f, 5.0f, 8.0f, 1.5f, 1.25f, 4.0f, 6.0f};
    const cpu::WeightView wq{DType::F32, wdata.data(), n_embd, n_q};
    const cpu::WeightView wk{DType::F32, wdata.data() + n_q * n_embd, n_embd, n_kv};
    const cpu::WeightView wv{DType::F32, wdata.data() + (n_q + n_kv) * n_embd, n_embd, n_kv};
    const cpu::WeightView wqkv{DType::F32, wdata.data(), n_embd, n_out};
    const cpu::WeightView unfused{};
    const float* bq = c.biases ? bias.data() : nullptr;
    const float* bk = c.biases ? bias.data() + n_q : nullptr;
    const float* bv = c.biases ? bias.data() + n_q + n_kv : nullptr;
    const RopeConfig cfg{hd, c.n_rot, 1000.0f, 0.5f, c.neox, c.freq_factors ? factors.data() : nullptr};
    const std::vector<SeqSpan> spans = {{nullptr, 0, 3, 4}, {nullptr, 4, 40, 5}};
    const RopeTable rope(cfg, spans);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      // Unfused: the blocks one after the other, as the models run them under the debug dump.
      std::vector<float> q0(n_tokens * n_q), k0(n_tokens * n_kv), v0(n_tokens * n_kv);
      linear_parts(pool, unfused, {{&wq, bq, q0.data()}, {&wk, bk, k0.data()}, {&wv, bv, v0.data()}}, x.data(),
                   n_tokens);
      if (c.norms) {
        rms_norm(pool, q0.data(), qn.data(), n_tokens * n_head, hd, 1e-6f, q0.data());
        rms_norm(pool, k0.data(), kn.data(), n_tokens * n_head_kv, hd, 1e-6f, k0.data());
      }
      rope.apply(q0.data(), n_tokens, n_head);
      rope.apply(k0.data(), n_tokens, n_head_kv);
      // Fused weights, and separate weights (the pass then runs in place).
      for (const cpu::WeightView* fused : {&wqkv, &unfused}) {
        std::vector<float> q1(q0.size(), NAN), k1(k0.size(), NAN), v1(v0.size(), NAN);
        const QkvWeights w{&wq, &wk, &wv, fused, bq, bk, bv, c.norms ? qn.data() : nullptr,
                           c.norms ? kn.data() : nullptr};
        qkv_rope(pool, w, rope, 1e-6f, x.data(), n_tokens, n_head, n_head_kv, q1.data(), k1.data(), v1.data());
        const std::string where = std::string(c.name) + (fused->data ? " fused" : " separate") + " threads=" +
                                  std::to_string(threads);
        EXPECT_TRUE(same_bits(q0, q1)) << where;
        EXPECT_TRUE(same_bits(k0, k1)) << where;
        EXPECT_TRUE(same_bits(v0, v1)) << where;
      }
    }
  }
}

TEST(SwigluFfn, FusedGateUpEqualsSeparateProducts) {
  // n_ff above the kernel's column slice (2048) with a tail, so rows split into uneven slices; tokens
  // over two of swiglu_ffn's 192-token blocks and a part of a third.
  const int64_t n_embd = 24, n_ff = 2100, n_tokens = 450;
  const std::vector<float> gu = randn(2 * n_ff * n_embd, 1, 0.5f), down = randn(n_embd * n_ff, 2, 0.05f);
  const std::vector<float> x = randn(n_tokens * n_embd, 3), b = randn(2 * n_ff + n_embd, 4);
  for (const bool biases : {false, true}) {
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      FfnWeights w;
      w.gate = {DType::F32, gu.data(), n_embd, n_ff};
      w.up = {DType::F32, gu.data() + n_ff * n_embd, n_embd, n_ff};
      w.down = {DType::F32, down.data(), n_ff, n_embd};
      if (biases) {
        w.gate_b = b.data();
        w.up_b = b.data() + n_ff;
        w.down_b = b.data() + 2 * n_ff;
      }
      std::vector<float> scratch(n_tokens * n_ff, NAN), out0(n_tokens * n_embd, NAN);
      swiglu_ffn(pool, w, x.data(), n_tokens, scratch.data(), out0.data());
      // The formula, from the separate products over all tokens at once: the gate values (the row
      // kernel, checked against the formula in double), then the down projection of all of them.
      std::vector<float> gr(n_tokens * n_ff), ur(n_tokens * n_ff), h(n_tokens * n_ff);
      linear(pool, w.gate, w.gate_b, x.data(), n_tokens, gr.data());
      linear(pool, w.up, w.up_b, x.data(), n_tokens, ur.data());
      for (int64_t t = 0; t < n_tokens; ++t)
        elementwise_kernels().swiglu_row(gr.data() + t * n_ff, ur.data() + t * n_ff, nullptr, nullptr, n_ff,
                                         h.data() + t * n_ff);
      for (int64_t i = 0; i < n_tokens * n_ff; ++i) {
        const double want = gr[i] / (1.0 + std::exp(-double(gr[i]))) * ur[i];
        ASSERT_NEAR(h[i], want, 1e-6 * std::fabs(want) + 1e-30) << i;
      }
      std::vector<float> out_ref(out0.size());
      linear(pool, w.down, w.down_b, h.data(), n_tokens, out_ref.data());
      EXPECT_TRUE(same_bits(out0, out_ref)) << "biases=" << biases << " threads=" << threads;
      w.gate_up = {DType::F32, gu.data(), n_embd, 2 * n_ff};
      std::vector<float> out1(out0.size(), NAN);
      swiglu_ffn(pool, w, x.data(), n_tokens, scratch.data(), out1.data());
      EXPECT_TRUE(same_bits(out0, out1)) << "biases=" << biases << " threads=" << threads;
    }
  }
}

std::string data_model(const std::string& name) { return std::string(IGNIS_TEST_DATA) + "/models/" + name; }

std::vector<float> run_logits(const Model& m, const std::vector<int32_t>& tokens, ThreadPool& pool) {
  auto cache = m.new_cache(64);
  std::vector<float> logits(tokens.size() * m.hparams().n_vocab);
  m.forward(*cache, tokens, logits.data(), true, pool);
  return logits;
}

void expect_fused_equals_unfused(const std::string& path) {
  namespace fs = std::filesystem;
  auto m = Model::load(path);
  ThreadPool pool(2);
  const std::vector<int32_t> tokens = {1, 17, 42, 99, 3, 65, 12, 7, 81, 5, 33};
  const std::vector<float> fused = run_logits(*m, tokens, pool);
  const fs::path dir = temp_path("fused_dump");
  fs::remove_all(dir);
  setenv("IGNIS_DUMP", dir.c_str(), 1);
  const std::vector<float> unfused = run_logits(*m, tokens, pool);
  unsetenv("IGNIS_DUMP");
  fs::remove_all(dir);
  EXPECT_TRUE(same_bits(fused, unfused)) << path;
}

// The models' normal path (fused QKV + RoPE) against the unfused one the debug dump selects.
class FusedForward : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedForward, EqualsTheUnfusedDumpPath) { expect_fused_equals_unfused(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Models, FusedForward,
                         ::testing::Values(std::string(IGNIS_SHARED_DIR) + "/models/stories260K.gguf",
                                           data_model("tiny-qwen2-q4_0.gguf"), data_model("tiny-llama-q8_0.gguf"),
                                           data_model("tiny-qwen3-f32.gguf"), data_model("small-qwen3-q4_k_m.gguf")));

// Llama 3.1 rope factors and Q/K/V biases, which the committed models do not have.
TEST(FusedForwardRandom, LlamaWithRopeFactorsAndBiases) {
  RandomModelSpec s;
  s.arch = "llama";
  s.biases = true;
  s.rope_freqs = true;
  s.matrix_type = DType::Q8_0;
  s.n_embd = 64;
  s.n_head = 4;
  s.head_dim = 16;
  expect_fused_equals_unfused(write_random_model(s, "fused_llama"));
}

// Activations are reused between calls: a short step after a long one (stale rows in the buffers) and
// concurrent calls on one model give what a fresh model gives.
TEST(Activations, ReuseAcrossCallsAndThreads) {
  const std::string path = data_model("tiny-qwen2-q4_0.gguf");
  const std::vector<int32_t> long_prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  const std::vector<int32_t> short_prompt = {21, 22, 23};
  std::vector<float> want_long, want_short;
  {
    auto fresh = Model::load(path);
    ThreadPool pool(1);
    want_short = run_logits(*fresh, short_prompt, pool);
    want_long = run_logits(*fresh, long_prompt, pool);
  }
  auto m = Model::load(path);
  {
    ThreadPool pool(1);
    run_logits(*m, long_prompt, pool);
    EXPECT_TRUE(same_bits(run_logits(*m, short_prompt, pool), want_short));
  }
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      ThreadPool pool(1);
      bool all = true;
      for (int r = 0; r < 5; ++r) {
        all = all && same_bits(run_logits(*m, i % 2 ? long_prompt : short_prompt, pool), i % 2 ? want_long : want_short);
      }
      ok[i] = all;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ok[i]) << "thread " << i;
}

}  // namespace
}  // namespace ignis::model::test
