// The engine's greedy path: argmax over a row plus a logit-bias map (the padded-vocabulary ban) must pick
// exactly what biasing a copy of the row and taking argmax picks, ties and non-finite values included.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "core/error.h"
#include "sample/sampler.h"

using namespace ignis::sample;

namespace {

TokenId reference(std::vector<float> row, const std::map<TokenId, float>& bias) {
  for (const auto& [id, b] : bias) row[size_t(id)] += b;
  return argmax(row);
}

}  // namespace

TEST(GreedyBias, MatchesBiasingACopyOnRandomRows) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + int(rng() % 300);
    std::vector<float> row(static_cast<size_t>(n), 0.0f);
    // Few distinct values, so ties are common.
    for (auto& x : row) x = std::round(u(rng));
    if (trial % 7 == 0) row[rng() % n] = std::nanf("");
    std::map<TokenId, float> bias;
    const int nb = int(rng() % 6);
    for (int k = 0; k < nb; ++k) {
      const TokenId id = TokenId(rng() % n);
      const int kind = int(rng() % 3);
      bias[id] = kind == 0 ? -std::numeric_limits<float>::infinity() : (kind == 1 ? 1.0f : -1.0f);
    }
    if (trial % 5 == 0)  // ban a whole tail, as the engine does for padded rows
      for (TokenId id = TokenId(n * 3 / 4); id < n; ++id) bias[id] = -std::numeric_limits<float>::infinity();
    bool all_banned = true;
    std::vector<float> biased = row;
    for (const auto& [id, b] : bias) biased[size_t(id)] += b;
    for (float x : biased)
      if (x > -std::numeric_limits<float>::infinity()) all_banned = false;
    if (all_banned) {
      EXPECT_THROW(argmax_biased(row, bias), ignis::Error);
      continue;
    }
    EXPECT_EQ(argmax_biased(row, bias), reference(row, bias)) << "trial " << trial;
  }
}

TEST(GreedyBias, BiasCanLiftATokenAboveTheMaximum) {
  std::vector<float> row = {0.0f, 3.0f, 1.0f, 3.0f};
  EXPECT_EQ(argmax_biased(row, {}), 1);
  EXPECT_EQ(argmax_biased(row, {{2, 2.0f}}), 1);  // tie at 3: the lower id wins
  EXPECT_EQ(argmax_biased(row, {{2, 2.5f}}), 2);
  EXPECT_EQ(argmax_biased(row, {{1, -std::numeric_limits<float>::infinity()}}), 3);
}

TEST(GreedyBias, SamplerGreedyWithBanNeverPicksABannedId) {
  SamplingParams p;
  p.temperature = 0.0f;
  for (TokenId id = 6; id < 10; ++id) p.logit_bias[id] = -std::numeric_limits<float>::infinity();
  Sampler s(p, 10);
  std::vector<float> row = {0, 1, 2, 3, 4, 5, 9, 9, 9, 9};
  EXPECT_EQ(s.sample(row), 5);
}
