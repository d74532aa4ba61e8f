// Sampler chain: each filter's exact effect on small hand-made logit rows, the penalty formula, the
// RNG contract (std::mt19937_64 as fixed by the C++ standard) and seed reproducibility.
#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <limits>
#include <vector>

#include "core/error.h"

using namespace ignis::sample;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<Candidate> cands(const std::vector<float>& logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({static_cast<TokenId>(i), logits[i], 0.0f});
  return c;
}

std::vector<TokenId> ids(const std::vector<Candidate>& c) {
  std::vector<TokenId> out;
  for (const auto& x : c) out.push_back(x.id);
  return out;
}

// log of probabilities: softmax gives back exactly these probabilities (they sum to 1).
std::vector<float> log_probs(const std::vector<float>& p) {
  std::vector<float> l;
  for (float x : p) l.push_back(std::log(x));
  return l;
}

SamplingParams plain(float temp) {
  SamplingParams p;
  p.temperature = temp;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

}  // namespace

TEST(Argmax, TiesGoToLowestId) {
  std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(argmax(l), 1);
}

TEST(Argmax, SkipsNanAndRejectsAllMinusInf) {
  std::vector<float> l = {std::nanf(""), -3.0f, -kInf};
  EXPECT_EQ(argmax(l), 1);
  std::vector<float> none = {-kInf, std::nanf("")};
  EXPECT_THROW(argmax(none), ignis::Error);
}

TEST(Penalties, LlamaCppFormula) {
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f};
  std::unordered_map<TokenId, int> counts = {{0, 2}, {1, 1}};
  apply_penalties(l, counts, 2.0f, 0.1f, 0.5f);
  EXPECT_FLOAT_EQ(l[0], 2.0f / 2.0f - 2 * 0.1f - 0.5f);   // positive: divided
  EXPECT_FLOAT_EQ(l[1], -1.0f * 2.0f - 1 * 0.1f - 0.5f);  // negative: multiplied
  EXPECT_FLOAT_EQ(l[2], 0.5f);                            // unseen: untouched
  EXPECT_FLOAT_EQ(l[3], 3.0f);
}

TEST(Penalties, HistoryWindowForgetsOldTokens) {
  SamplingParams p = plain(0.0f);
  p.repeat_penalty = 10.0f;
  p.repeat_last_n = 2;
  Sampler s(p, 4);
  std::vector<float> l = {5.0f, 4.0f, 1.0f, 0.0f};
  s.accept(0);
  EXPECT_EQ(s.sample(l), 1);  // 0 penalised to 0.5
  s.accept(2);
  s.accept(3);                // 0 leaves the 2-token window
  EXPECT_EQ(s.sample(l), 0);
}

TEST(Penalties, PresenceAndFrequencyChangeGreedyChoice) {
  SamplingParams p = plain(0.0f);
  p.frequency_penalty = 1.0f;
  Sampler s(p, 3);
  std::vector<float> l = {3.0f, 1.5f, 0.0f};
  s.accept(0);
  EXPECT_EQ(s.sample(l), 0);  // 3 - 1 = 2 > 1.5
  s.accept(0);
  EXPECT_EQ(s.sample(l), 1);  // 3 - 2 = 1 < 1.5
  SamplingParams q = plain(0.0f);
  q.presence_penalty = 1.0f;
  Sampler t(q, 3);
  for (int i = 0; i < 5; ++i) t.accept(0);
  EXPECT_EQ(t.sample(l), 0);  // presence counts once: 3 - 1 = 2 > 1.5
}

TEST(TopK, KeepsKHighestSortedTiesByLowerId) {
  auto c = cands({1.0f, 3.0f, 2.0f, 3.0f, 0.0f});
  apply_top_k(c, 2);
  EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 3}));
  auto d = cands({1.0f, 3.0f, 2.0f});
  apply_top_k(d, 0);  // disabled
  EXPECT_EQ(ids(d), (std::vector<TokenId>{0, 1, 2}));
  apply_top_k(d, 10);  // larger than the row: all kept, sorted
  EXPECT_EQ(ids(d), (std::vector<TokenId>{1, 2, 0}));
}

TEST(TopP, KeepsSmallestPrefixReachingP) {
  const auto l = log_probs({0.1f, 0.5f, 0.2f, 0.2f});
  auto run = [&](float p) {
    auto c = cands(l);
    apply_top_p(c, p);
    return ids(c);
  };
  EXPECT_EQ(run(0.3f), (std::vector<TokenId>{1}));
  EXPECT_EQ(run(0.65f), (std::vector<TokenId>{1, 2}));
  EXPECT_EQ(run(0.75f), (std::vector<TokenId>{1, 2, 3}));
  EXPECT_EQ(run(0.95f), (std::vector<TokenId>{1, 2, 3, 0}));
  EXPECT_EQ(run(1.0f), (std::vector<TokenId>{0, 1, 2, 3}));  // disabled: untouched order
}

TEST(TopP, LargeRowsBeyondThePartiallySortedHead) {
  // 1000 equal logits: top-p 0.5 needs 500 tokens, more than the first sorted block; ties -> lower ids.
  auto c = cands(std::vector<float>(1000, 0.25f));
  apply_top_p(c, 0.5f);
  ASSERT_EQ(c.size(), 500u);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i].id, static_cast<TokenId>(i));
  std::vector<float> l(5000, 0.0f);
  l[4321] = 30.0f;  // holds nearly all the mass
  auto d = cands(l);
  apply_top_p(d, 0.9f);
  EXPECT_EQ(ids(d), (std::vector<TokenId>{4321}));
}

TEST(TopP, HistogramHeadMatchesAFullSort) {
  // Random rows large enough for the histogram path; the reference sorts everything.
  std::mt19937 rng(1234);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (float p : {0.5f, 0.9f, 0.95f, 0.999f}) {
    std::vector<float> l(20000);
    for (auto& x : l) x = nd(rng);
    std::vector<std::pair<float, TokenId>> ref;
    double total = 0.0;
    const float mx = *std::max_element(l.begin(), l.end());
    for (size_t i = 0; i < l.size(); ++i) {
      ref.push_back({l[i], static_cast<TokenId>(i)});
      total += std::exp(l[i] - mx);
    }
    std::sort(ref.begin(), ref.end(), [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::vector<TokenId> want;
    double cum = 0.0;
    for (auto& [x, id] : ref) {
      want.push_back(id);
      cum += std::exp(x - mx) / total;
      if (cum >= p) break;
    }
    auto c = cands(l);
    apply_top_p(c, p);
    EXPECT_EQ(ids(c), want) << "p = " << p;
  }
}

TEST(MinP, KeepsTokensAtLeastPTimesTheBestInOrder) {
  const auto l = log_probs({0.1f, 0.5f, 0.2f, 0.2f});
  auto c = cands(l);
  apply_min_p(c, 0.3f);  // threshold 0.15
  EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 2, 3}));
  auto d = cands(l);
  apply_min_p(d, 0.5f);  // threshold 0.25
  EXPECT_EQ(ids(d), (std::vector<TokenId>{1}));
  auto e = cands(l);
  apply_min_p(e, 0.0f);
  EXPECT_EQ(e.size(), 4u);
}

TEST(Temperature, DividesLogits) {
  auto c = cands({2.0f, -4.0f});
  apply_temperature(c, 2.0f);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, -2.0f);
}

TEST(Draw, InverseCdfOverCandidateOrder) {
  const auto l = log_probs({0.5f, 0.3f, 0.2f});
  auto pick = [&](double u) {
    auto c = cands(l);
    return draw(c, u);
  };
  EXPECT_EQ(pick(0.0), 0u);
  EXPECT_EQ(pick(0.49), 0u);
  EXPECT_EQ(pick(0.51), 1u);
  EXPECT_EQ(pick(0.79), 1u);
  EXPECT_EQ(pick(0.81), 2u);
  EXPECT_EQ(pick(0.999999), 2u);
  auto c = cands(l);
  draw(c, 0.5);
  EXPECT_NEAR(c[0].p, 0.5f, 1e-6);
  EXPECT_NEAR(c[2].p, 0.2f, 1e-6);
}

TEST(Rng, IsStandardMt19937_64) {
  // [rand.predef]: the 10000th consecutive output of a default-constructed std::mt19937_64 (seed 5489)
  // is 9981545732273789042. The uniform value is its top 53 bits scaled by 2^-53.
  SamplingParams p = plain(1.0f);
  p.seed = 5489;
  Sampler s(p, 2);
  double u = 0;
  for (int i = 0; i < 10000; ++i) u = s.next_uniform();
  EXPECT_EQ(u, static_cast<double>(9981545732273789042ULL >> 11) * 0x1.0p-53);
}

TEST(Seed, SameSeedSameTokensDifferentSeedDifferentTokens) {
  std::vector<float> l;
  for (int i = 0; i < 64; ++i) l.push_back(std::sin(i * 0.7f) * 2.0f);
  auto run = [&](uint64_t seed) {
    SamplingParams p;  // llama.cpp defaults: top-k 40, top-p 0.95, min-p 0.05, temp 0.8
    p.seed = seed;
    Sampler s(p, 64);
    std::vector<TokenId> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.sample(l));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Seed, ResetReplaysTheSameSequence) {
  std::vector<float> l = {0.0f, 0.1f, 0.2f, 0.3f};
  SamplingParams p = plain(1.0f);
  p.seed = 7;
  Sampler s(p, 4);
  std::vector<TokenId> a, b;
  for (int i = 0; i < 50; ++i) a.push_back(s.sample(l));
  s.reset();
  for (int i = 0; i < 50; ++i) b.push_back(s.sample(l));
  EXPECT_EQ(a, b);
}

TEST(Chain, FrequenciesFollowSoftmax) {
  SamplingParams p = plain(1.0f);
  p.seed = 1;
  Sampler s(p, 3);
  const auto l = log_probs({0.5f, 0.3f, 0.2f});
  int n[3] = {0, 0, 0};
  const int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) ++n[s.sample(l)];
  EXPECT_NEAR(n[0] / double(kDraws), 0.5, 0.02);
  EXPECT_NEAR(n[1] / double(kDraws), 0.3, 0.02);
  EXPECT_NEAR(n[2] / double(kDraws), 0.2, 0.02);
}

TEST(Chain, TopPIsAppliedBeforeTemperature) {
  // With temperature first, 100 would flatten the row and top-p 0.6 would keep all three tokens.
  SamplingParams p = plain(100.0f);
  p.top_p = 0.6f;
  p.seed = 3;
  Sampler s(p, 3);
  const auto l = log_probs({0.5f, 0.3f, 0.2f});
  int n[3] = {0, 0, 0};
  for (int i = 0; i < 2000; ++i) ++n[s.sample(l)];
  EXPECT_EQ(n[2], 0);
  EXPECT_GT(n[0], 800);
  EXPECT_GT(n[1], 800);
}

TEST(Chain, TopKOneIsGreedyAtAnyTemperature) {
  SamplingParams p = plain(5.0f);
  p.top_k = 1;
  p.seed = 9;
  Sampler s(p, 5);
  std::vector<float> l = {0.1f, 0.3f, 0.2f, 0.3f, -1.0f};
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.sample(l), 1);
}

TEST(Chain, LogitBiasBansAndPromotes) {
  SamplingParams p = plain(0.0f);
  p.logit_bias = {{2, -kInf}, {0, 1.5f}};
  Sampler s(p, 3);
  std::vector<float> l = {1.0f, 2.0f, 9.0f};
  EXPECT_EQ(s.sample(l), 0);  // 2 banned, 0 lifted to 2.5 > 2
  SamplingParams q = plain(1.0f);
  q.logit_bias = {{2, -kInf}};
  q.seed = 11;
  Sampler t(q, 3);
  for (int i = 0; i < 200; ++i) EXPECT_NE(t.sample(l), 2);
}

TEST(Chain, RejectsWrongRowSizeAndAllBanned) {
  Sampler s(plain(1.0f), 3);
  std::vector<float> two = {1.0f, 2.0f};
  EXPECT_THROW(s.sample(two), ignis::Error);
  std::vector<float> banned = {-kInf, -kInf, std::nanf("")};
  EXPECT_THROW(s.sample(banned), ignis::Error);
}

TEST(Params, ValidateRejectsOutOfRange) {
  auto bad = [](auto edit) {
    SamplingParams p;
    edit(p);
    EXPECT_THROW(p.validate(10), ignis::Error);
  };
  bad([](SamplingParams& p) { p.temperature = -0.1f; });
  bad([](SamplingParams& p) { p.temperature = std::nanf(""); });
  bad([](SamplingParams& p) { p.top_k = -1; });
  bad([](SamplingParams& p) { p.top_p = 0.0f; });
  bad([](SamplingParams& p) { p.top_p = 1.01f; });
  bad([](SamplingParams& p) { p.min_p = -0.01f; });
  bad([](SamplingParams& p) { p.min_p = 1.5f; });
  bad([](SamplingParams& p) { p.repeat_penalty = 0.0f; });
  bad([](SamplingParams& p) { p.repeat_last_n = -1; });
  bad([](SamplingParams& p) { p.frequency_penalty = kInf; });
  bad([](SamplingParams& p) { p.logit_bias = {{10, 1.0f}}; });
  bad([](SamplingParams& p) { p.logit_bias = {{1, kInf}}; });
  SamplingParams ok;
  EXPECT_NO_THROW(ok.validate(10));
}

TEST(Logprobs, LogSoftmaxOfRawLogitsAndTopEntries) {
  std::vector<float> l = {1.0f, 2.0f, 3.0f, 3.0f, -kInf};
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + 2 * std::exp(3.0));
  Logprobs lp = log_softmax_top(l, 1, 3);
  EXPECT_NEAR(lp.chosen, 2.0 - lse, 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].id, 2);  // tie with 3 -> lower id first
  EXPECT_EQ(lp.top[1].id, 3);
  EXPECT_EQ(lp.top[2].id, 1);
  EXPECT_NEAR(lp.top[0].logprob, 3.0 - lse, 1e-6);
  EXPECT_NEAR(lp.top[2].logprob, 2.0 - lse, 1e-6);
  Logprobs all = log_softmax_top(l, 0, 10);  // more than the finite entries: -inf left out
  EXPECT_EQ(all.top.size(), 4u);
  EXPECT_THROW(log_softmax_top(l, 5, 1), ignis::Error);
}
