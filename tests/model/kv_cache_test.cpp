// KV cache consistency: a prompt run as one batch (matrix-matrix, causal mask) gives the same logits
// as the same tokens run one by one through the cache, on every architecture path; truncate() rolls
// back exactly; results do not depend on the thread count or the ubatch split.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "core/error.h"
#include "model/model.h"
#include "model_test_util.h"

namespace ignis::model::test {
namespace {

struct Case {
  std::string name;
  std::function<std::string()> path;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  return {
      {"stories260K", [] { return stories_path(); }},
      {"llama2_tiny_f16", [] { return shared_path("models/llama-2-tiny-random.gguf"); }},
      {"llama_tied_biases_ropefreqs",
       [] {
         RandomModelSpec s;
         s.arch = "llama";
         s.tied = true;
         s.biases = true;
         s.rope_freqs = true;
         s.seed = 11;
         return write_random_model(s, "llama_rf");
       }},
      {"qwen2",
       [] {
         RandomModelSpec s;
         s.arch = "qwen2";
         s.biases = true;
         s.tied = true;
         s.seed = 12;
         return write_random_model(s, "qwen2");
       }},
      {"qwen3_head_dim_16",
       [] {
         RandomModelSpec s;
         s.arch = "qwen3";
         s.qk_norm = true;
         s.head_dim = 16;  // != n_embd / n_head = 8
         s.seed = 13;
         return write_random_model(s, "qwen3");
       }},
      {"qwen3_f16",
       [] {
         RandomModelSpec s;
         s.arch = "qwen3";
         s.qk_norm = true;
         s.n_embd = 64;
         s.n_head = 4;
         s.n_head_kv = 4;
         s.head_dim = 16;
         s.matrix_type = DType::F16;
         s.seed = 14;
         return write_random_model(s, "qwen3_f16");
       }},
  };
}

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = dist(rng);
  return t;
}

// max |a - b| relative to the largest |b| (at least 1).
float max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float diff = 0, scale = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}

class KvConsistency : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    model_ = Model::load(GetParam().path());
    n_vocab_ = model_->hparams().n_vocab;
  }
  // All logits of `tokens` run as one batch on a fresh cache.
  std::vector<float> batch_logits(const std::vector<int32_t>& tokens, ThreadPool& pool) {
    auto cache = model_->new_cache(static_cast<int64_t>(tokens.size()));
    std::vector<float> logits(tokens.size() * n_vocab_);
    model_->forward(*cache, tokens, logits.data(), true, pool);
    EXPECT_EQ(cache->n_past(), static_cast<int64_t>(tokens.size()));
    return logits;
  }
  std::unique_ptr<Model> model_;
  int64_t n_vocab_ = 0;
};

TEST_P(KvConsistency, BatchEqualsTokenByToken) {
  ThreadPool pool(2);
  const std::vector<int32_t> tokens = random_tokens(24, n_vocab_, 7);
  const std::vector<float> batch = batch_logits(tokens, pool);

  // NOTE: one thread for the many small steps: waking workers dominates on a loaded 2-core machine.
  ThreadPool one(1);
  auto cache = model_->new_cache(32);
  std::vector<float> seq(tokens.size() * n_vocab_);
  for (size_t i = 0; i < tokens.size(); ++i) {
    model_->forward(*cache, std::span(&tokens[i], 1), seq.data() + i * n_vocab_, false, one);
  }
  EXPECT_EQ(cache->n_past(), 24);
  for (float x : batch) ASSERT_TRUE(std::isfinite(x));
  EXPECT_LT(max_rel_diff(seq, batch), 2e-5f);
  // The logits are not degenerate (a model ignoring its input would pass the comparison too).
  EXPECT_GT(max_rel_diff(std::vector<float>(batch.begin(), batch.begin() + n_vocab_),
                         std::vector<float>(batch.end() - n_vocab_, batch.end())),
            1e-3f);
}

TEST_P(KvConsistency, LastLogitsEqualAllLogitsRow) {
  ThreadPool pool(2);
  const std::vector<int32_t> tokens = random_tokens(9, n_vocab_, 8);
  const std::vector<float> all = batch_logits(tokens, pool);
  auto cache = model_->new_cache(9);
  std::vector<float> last(n_vocab_);
  model_->forward(*cache, tokens, last.data(), false, pool);
  EXPECT_EQ(std::vector<float>(all.end() - n_vocab_, all.end()), last);
}

TEST_P(KvConsistency, TruncateThenRerunReproducesLogits) {
  ThreadPool pool(2);
  const std::vector<int32_t> tokens = random_tokens(16, n_vocab_, 9);
  auto cache = model_->new_cache(16);
  std::vector<float> first(8 * n_vocab_), again(8 * n_vocab_);
  model_->forward(*cache, std::span(tokens).first(8), nullptr, false, pool);
  model_->forward(*cache, std::span(tokens).subspan(8), first.data(), true, pool);
  cache->truncate(8);
  EXPECT_EQ(cache->n_past(), 8);
  model_->forward(*cache, std::span(tokens).subspan(8), again.data(), true, pool);
  EXPECT_EQ(first, again);
  // A different continuation after the rollback changes the logits.
  cache->truncate(8);
  std::vector<int32_t> other(tokens.begin() + 8, tokens.end());
  other[0] = (other[0] + 1) % static_cast<int32_t>(n_vocab_);
  model_->forward(*cache, other, again.data(), true, pool);
  EXPECT_NE(first, again);
  EXPECT_THROW(cache->truncate(17), Error);  // beyond what it holds
}

TEST_P(KvConsistency, ThreadCountDoesNotChangeLogits) {
  const std::vector<int32_t> tokens = random_tokens(12, n_vocab_, 10);
  ThreadPool one(1), three(3);
  EXPECT_LT(max_rel_diff(batch_logits(tokens, three), batch_logits(tokens, one)), 1e-6f);
}

INSTANTIATE_TEST_SUITE_P(Models, KvConsistency, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A prompt longer than one ubatch (512 tokens) gives the same logits as token-by-token decoding.
TEST(KvUbatch, LongPromptAcrossUbatchBoundary) {
  auto model = Model::load(stories_path());
  const int64_t n_vocab = model->hparams().n_vocab;
  const std::vector<int32_t> tokens = random_tokens(530, n_vocab, 3);
  ThreadPool pool(2);
  auto batch_cache = model->new_cache(530);
  std::vector<float> batch(tokens.size() * n_vocab);
  model->forward(*batch_cache, tokens, batch.data(), true, pool);

  ThreadPool one(1);
  auto cache = model->new_cache(530);
  std::vector<float> seq(tokens.size() * n_vocab);
  for (size_t i = 0; i < tokens.size(); ++i) {
    model->forward(*cache, std::span(&tokens[i], 1), seq.data() + i * n_vocab, false, one);
  }
  EXPECT_LT(max_rel_diff(seq, batch), 2e-5f);
}

}  // namespace
}  // namespace ignis::model::test

namespace ignis::model::test {
namespace {

// Two threads run forward() at once on one Model with their own caches and pools (model.h's
// contract): each gets the logits of a run alone.
TEST(KvConcurrency, DistinctCachesRunConcurrently) {
  auto model = Model::load(stories_path());
  const int64_t n_vocab = model->hparams().n_vocab;
  const std::vector<int32_t> a = random_tokens(40, n_vocab, 21), b = random_tokens(40, n_vocab, 22);
  auto run = [&](const std::vector<int32_t>& tokens, std::vector<float>& out) {
    ThreadPool pool(1);
    auto cache = model->new_cache(40);
    out.resize(tokens.size() * n_vocab);
    model->forward(*cache, std::span(tokens).first(20), out.data(), true, pool);
    for (size_t i = 20; i < tokens.size(); ++i) {
      model->forward(*cache, std::span(&tokens[i], 1), out.data() + i * n_vocab, false, pool);
    }
  };
  std::vector<float> alone_a, alone_b, conc_a, conc_b;
  run(a, alone_a);
  run(b, alone_b);
  std::thread ta([&] { run(a, conc_a); });
  std::thread tb([&] { run(b, conc_b); });
  ta.join();
  tb.join();
  EXPECT_EQ(conc_a, alone_a);
  EXPECT_EQ(conc_b, alone_b);
}

}  // namespace
}  // namespace ignis::model::test
