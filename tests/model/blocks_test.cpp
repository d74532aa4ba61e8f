// Building blocks against direct formulas: RoPE (normal and NEOX pairing, frequency factors, linear
// scaling), RMSNorm, and attention over a paged cache against a naive dense softmax attention.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>

#include "core/fp16.h"
#include "model/blocks.h"
#include "model/kv_cache.h"
#include "model_test_util.h"

namespace ignis::model::test {
namespace {

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// RopeTable::apply against the rotation by angles computed in double. head_dim and n_rot vary so
// that the vector kernels see whole vectors, tails and unrotated dims.
void check_rope(bool neox, const float* factors, float freq_scale, int64_t head_dim = 12, int64_t n_rot = 8) {
  const int64_t n_heads = 2, n_tokens = 3, pos0 = 5;
  RopeConfig cfg{head_dim, n_rot, 500.0f, freq_scale, neox, factors};
  const std::vector<float> x = randn(n_tokens * n_heads * head_dim, 1);
  std::vector<float> y = x;
  RopeTable(cfg, pos0, n_tokens).apply(y.data(), n_tokens, n_heads);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t h = 0; h < n_heads; ++h) {
      const float* xh = x.data() + (t * n_heads + h) * head_dim;
      const float* yh = y.data() + (t * n_heads + h) * head_dim;
      for (int64_t i = 0; i < n_rot / 2; ++i) {
        const int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
        double angle = (pos0 + t) * freq_scale * std::pow(500.0, -2.0 * i / n_rot);
        if (factors) angle /= factors[i];
        EXPECT_NEAR(yh[i0], xh[i0] * std::cos(angle) - xh[i1] * std::sin(angle), 1e-5);
        EXPECT_NEAR(yh[i1], xh[i0] * std::sin(angle) + xh[i1] * std::cos(angle), 1e-5);
      }
      for (int64_t i = n_rot; i < head_dim; ++i) EXPECT_EQ(yh[i], xh[i]);  // not rotated
    }
  }
}

TEST(Rope, AdjacentPairs) { check_rope(false, nullptr, 1.0f); }
TEST(Rope, NeoxHalves) { check_rope(true, nullptr, 1.0f); }
TEST(Rope, FrequencyFactorsAndLinearScaling) {
  const float factors[4] = {1.0f, 2.0f, 4.0f, 8.0f};
  check_rope(false, factors, 0.25f);
  check_rope(true, factors, 0.25f);
}
TEST(Rope, WideHeadsWithTails) {
  std::vector<float> factors(64);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.25f * static_cast<float>(i % 7);
  for (const bool neox : {false, true}) {
    for (const auto& [head_dim, n_rot] : {std::pair<int64_t, int64_t>{64, 64}, {80, 48}, {128, 128}, {72, 70}}) {
      check_rope(neox, nullptr, 1.0f, head_dim, n_rot);
      check_rope(neox, factors.data(), 0.5f, head_dim, n_rot);
    }
  }
}

TEST(RmsNorm, MatchesFormula) {
  ThreadPool pool(2);
  const int64_t rows = 20, n = 37;
  const std::vector<float> x = randn(rows * n, 2), w = randn(n, 3);
  std::vector<float> y(rows * n);
  rms_norm(pool, x.data(), w.data(), rows, n, 1e-5f, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
    const double scale = 1.0 / std::sqrt(ss / n + 1e-5);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[r * n + i], x[r * n + i] * scale * w[i], 1e-5);
  }
}

// A KvCache whose pages are separate allocations handed out in scrambled order, like a block pool.
class ScatteredCache final : public KvCache {
 public:
  ScatteredCache(int64_t n_layer, int64_t kv_width, int64_t page_size, int64_t n_pages)
      : n_layer_(n_layer), width_(kv_width), page_(page_size), n_pages_(n_pages) {
    for (int64_t i = 0; i < n_layer * n_pages * 2; ++i) blocks_.emplace_back(page_size * kv_width, uint16_t{0x7e00});  // NaN
    for (int64_t p = 0; p < n_pages; ++p) order_.push_back((p * 7 + 3) % n_pages);  // n_pages coprime to 7
  }
  int64_t n_ctx() const override { return page_ * n_pages_; }
  int64_t n_past() const override { return n_past_; }
  void truncate(int64_t n) override { n_past_ = n; }
  int64_t n_layer() const override { return n_layer_; }
  int64_t kv_width() const override { return width_; }
  int64_t page_size() const override { return page_; }
  DType kv_type() const override { return DType::F16; }
  void* k_page(int64_t il, int64_t p) override { return blocks_[(il * n_pages_ + order_[p]) * 2].data(); }
  void* v_page(int64_t il, int64_t p) override { return blocks_[(il * n_pages_ + order_[p]) * 2 + 1].data(); }
  void advance(int64_t n) override { n_past_ += n; }

 private:
  int64_t n_layer_, width_, page_, n_pages_, n_past_ = 0;
  std::vector<std::vector<uint16_t>> blocks_;
  std::vector<int64_t> order_;
};

TEST(Attention, PagedCacheMatchesNaiveSoftmaxAttention) {
  const AttentionShape sh{6, 2, 16, 0.25f};
  const int64_t width = sh.n_head_kv * sh.head_dim, n_q = sh.n_head * sh.head_dim;
  // 5 tokens (a prompt) and 1 token (decode: the query heads of a KV head are split into slices,
  // unevenly for 2 threads).
  for (const int64_t n_tokens : {5, 1})
  for (int threads : {1, 2, 3}) {
    const int64_t pos0 = 9, n = pos0 + n_tokens;
    ScatteredCache cache(1, width, 4, 4);
    std::vector<float> k = randn(n * width, 4), v = randn(n * width, 5);
    const std::vector<float> q = randn(n_tokens * n_q, 6);
    kv_store(cache, 0, 0, n, sh.head_dim, k.data(), v.data());
    for (float* x : {k.data(), v.data()})  // the reference uses what the f16 cache holds
      for (int64_t i = 0; i < n * width; ++i) x[i] = f16_to_f32(f32_to_f16(x[i]));
    ThreadPool pool(threads);
    std::vector<float> out(n_tokens * n_q);
    attention(pool, cache, 0, sh, q.data(), n_tokens, pos0, out.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t h = 0; h < sh.n_head; ++h) {
        const int64_t kvh = h / (sh.n_head / sh.n_head_kv);
        const int64_t n_kv = pos0 + t + 1;
        std::vector<double> p(n_kv);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < n_kv; ++j) {
          double s = 0;
          for (int64_t i = 0; i < sh.head_dim; ++i) {
            s += double(q[t * n_q + h * sh.head_dim + i]) * k[j * width + kvh * sh.head_dim + i];
          }
          p[j] = s * sh.scale;
          mx = std::max(mx, p[j]);
        }
        for (double& x : p) sum += (x = std::exp(x - mx));
        for (int64_t i = 0; i < sh.head_dim; ++i) {
          double o = 0;
          for (int64_t j = 0; j < n_kv; ++j) o += p[j] / sum * v[j * width + kvh * sh.head_dim + i];
          EXPECT_NEAR(out[t * n_q + h * sh.head_dim + i], o, 1e-5) << t << " " << h << " " << i;
        }
      }
    }
  }
}

// The whole model over a scattered paged cache equals the dense cache.
TEST(Attention, ModelOnPagedCacheMatchesDenseCache) {
  auto model = Model::load(stories_path());
  const HParams& hp = model->hparams();
  ThreadPool pool(2);
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 11, 300, 42, 17, 99};
  auto dense = model->new_cache(16);
  ScatteredCache paged(hp.n_layer, hp.n_head_kv * hp.head_dim, 3, 5);
  std::vector<float> a(tokens.size() * hp.n_vocab), b(a.size());
  model->forward(*dense, std::span(tokens).first(6), a.data(), true, pool);
  model->forward(*dense, std::span(tokens).subspan(6), a.data() + 6 * hp.n_vocab, true, pool);
  model->forward(paged, std::span(tokens).first(6), b.data(), true, pool);
  model->forward(paged, std::span(tokens).subspan(6), b.data() + 6 * hp.n_vocab, true, pool);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5f) << i;
}

}  // namespace
}  // namespace ignis::model::test
