// TokenMap: text -> id over the vocabulary's own strings, with std::unordered_map's first-wins rule
// and Normal tokens ahead of the others where texts repeat.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/token_map.h"
#include "text/vocab.h"

namespace ignis::text {
namespace {

TEST(TokenMap, FindsEveryTextAndNothingElse) {
  std::mt19937 rng(3);
  std::vector<TokenEntry> tokens;
  std::unordered_map<std::string, TokenId> want;
  for (int i = 0; i < 20000; ++i) {  // short and long texts, bytes of every value, some repeated
    std::string t(1 + rng() % (i % 50 == 0 ? 60 : 6), '\0');
    for (char& c : t) c = static_cast<char>(rng() % 40 + (i % 3 ? 'a' : 0));
    tokens.push_back({t, 0.0f, TokenType::Normal});
    want.try_emplace(t, TokenId(i));
  }
  const TokenMap map(tokens, true);
  for (const auto& [text, id] : want) ASSERT_EQ(map.find(text), id) << text;
  for (int i = 0; i < 2000; ++i) {
    const std::string absent = "absent" + std::to_string(i);
    EXPECT_EQ(map_find(map, absent), -1);
  }
  EXPECT_EQ(map.find(""), -1);
  EXPECT_EQ(TokenMap().find("a"), -1);
}

TEST(TokenMap, NormalTokensWinRepeatedTexts) {
  const std::vector<TokenEntry> tokens = {{"<s>", 0, TokenType::Control},
                                          {"a", 0, TokenType::Normal},
                                          {"<s>", 0, TokenType::Normal},
                                          {"a", 0, TokenType::Normal},
                                          {"b", 0, TokenType::UserDefined},
                                          {"b", 0, TokenType::Control}};
  const TokenMap normal_first(tokens, true), in_order(tokens, false);
  EXPECT_EQ(normal_first.find("<s>"), 2);
  EXPECT_EQ(in_order.find("<s>"), 0);
  EXPECT_EQ(normal_first.find("a"), 1);
  EXPECT_EQ(normal_first.find("b"), 4);  // no Normal one: the lowest id
  EXPECT_EQ(in_order.find("b"), 4);
}

// MergeList: pairs kept end to end in one buffer come back as they went in, empty sides included.
TEST(MergeList, PairsComeBackInRankOrder) {
  MergeList m;
  EXPECT_TRUE(m.empty());
  std::vector<std::pair<std::string, std::string>> want;
  for (int i = 0; i < 3000; ++i) {
    std::string a = i % 11 ? "a" + std::to_string(i) : std::string(), b = std::string(size_t(i % 37), char('b' + i % 20));
    want.emplace_back(a, b);
    m.emplace_back(a, b);
  }
  ASSERT_EQ(m.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const auto [a, b] = m[i];
    EXPECT_EQ(a, want[i].first) << i;
    EXPECT_EQ(b, want[i].second) << i;
  }
}

}  // namespace
}  // namespace ignis::text
