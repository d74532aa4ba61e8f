// Model::forward_batch: several sequences in one step give bit-identical logits to each sequence run
// alone (batch invariance), across ubatch boundaries, for float and quantized weights.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace ignis::model {
namespace {

std::string data(const std::string& name) { return std::string(IGNIS_TEST_DATA) + "/models/" + name; }

class BatchInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchInvariance, ManySequencesEqualEachAlone) {
  auto m = Model::load(GetParam());
  const int64_t n_vocab = m->hparams().n_vocab;
  ThreadPool pool(2);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> tok(0, int32_t(std::min<int64_t>(n_vocab, 500) - 1));
  // Each sequence: a cached history (h tokens) then a step of n tokens (prefill chunk or decode).
  const std::vector<std::pair<int, int>> shapes = {{0, 7}, {5, 1}, {12, 1}, {0, 1}, {3, 20}, {30, 1}};
  std::vector<std::vector<int32_t>> hist, step;
  for (auto [h, n] : shapes) {
    hist.emplace_back(h);
    step.emplace_back(n);
    for (auto& t : hist.back()) t = tok(rng);
    for (auto& t : step.back()) t = tok(rng);
  }
  // Alone.
  std::vector<std::vector<float>> alone;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto c = m->new_cache(64);
    if (!hist[i].empty()) m->forward(*c, hist[i], nullptr, false, pool);
    alone.emplace_back(size_t(step[i].size() * n_vocab));
    m->forward(*c, step[i], alone.back().data(), /*all_logits=*/true, pool);
  }
  // Together, with and without all-logit rows.
  for (bool all : {true, false}) {
    std::vector<std::unique_ptr<KvCache>> caches;
    std::vector<SeqBatch> batch;
    std::vector<std::vector<float>> got;
    for (size_t i = 0; i < shapes.size(); ++i) {
      caches.push_back(m->new_cache(64));
      if (!hist[i].empty()) m->forward(*caches.back(), hist[i], nullptr, false, pool);
      got.emplace_back(size_t((all ? step[i].size() : 1) * n_vocab));
    }
    for (size_t i = 0; i < shapes.size(); ++i) batch.push_back({caches[i].get(), step[i], got[i].data(), all});
    m->forward_batch(batch, pool);
    for (size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_EQ(caches[i]->n_past(), int64_t(hist[i].size() + step[i].size()));
      const float* want = alone[i].data() + (all ? 0 : (step[i].size() - 1) * n_vocab);
      for (size_t j = 0; j < got[i].size(); ++j)
        ASSERT_EQ(got[i][j], want[j]) << "sequence " << i << " element " << j << (all ? " (all rows)" : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, BatchInvariance,
                         ::testing::Values(std::string(IGNIS_SHARED_DIR) + "/models/stories260K.gguf",
                                           data("tiny-qwen2-f32.gguf"), data("tiny-qwen2-f16.gguf"), data("tiny-qwen2-q4_0.gguf"),
                                           data("tiny-llama-q8_0.gguf"), data("small-qwen3-q4_k_m.gguf")));

TEST(ForwardBatch, RejectsASharedCacheAndBadTokensBeforeComputing) {
  auto m = Model::load(std::string(IGNIS_SHARED_DIR) + "/models/stories260K.gguf");
  ThreadPool pool(1);
  auto c = m->new_cache(16);
  std::vector<int32_t> a = {1, 2}, b = {3};
  std::vector<SeqBatch> batch = {{c.get(), a, nullptr, false}, {c.get(), b, nullptr, false}};
  EXPECT_THROW(m->forward_batch(batch, pool), Error);
  auto d = m->new_cache(16);
  std::vector<int32_t> bad = {1, 100000};
  batch = {{c.get(), a, nullptr, false}, {d.get(), bad, nullptr, false}};
  EXPECT_THROW(m->forward_batch(batch, pool), Error);
  EXPECT_EQ(c->n_past(), 0);  // nothing ran
}

}  // namespace
}  // namespace ignis::model
