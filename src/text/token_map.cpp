#include "text/token_map.h"

#include <functional>

namespace ignis::text {

// NOTE: open addressing over (id, hash tag) slots, the texts compared in the vocabulary itself. It
// replaced std::unordered_map<std::string, TokenId>, which allocated a node with a copy of each text:
// Qwen3-0.6B's 151,936 tokens made 9 MB of nodes, and on these VMs faulting in fresh memory was most of
// the time to load a tokenizer (BENCHMARKS.md, thirtieth session).
TokenMap::TokenMap(std::span<const TokenEntry> tokens, bool normal_first) : tokens_(tokens.data()) {
  size_t cap = 16;
  while (cap < tokens.size() * 2) cap <<= 1;  // at most half full
  slots_.assign(cap, Slot{});
  shift_ = 64 - __builtin_ctzll(cap);
  // (With normal_first, the Normal tokens are all in after the first pass, so the second takes only
  // the others: inserting a Normal token again found its text and kept the first.)
  if (normal_first)
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].type == TokenType::Normal) insert(TokenId(i));
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!normal_first || tokens[i].type != TokenType::Normal) insert(TokenId(i));
}

uint64_t TokenMap::hash(std::string_view s) { return std::hash<std::string_view>{}(s) * 0x9E3779B97F4A7C15ull; }

void TokenMap::insert(TokenId id) {
  const std::string_view s = tokens_[id].text;
  const uint64_t h = hash(s);
  const size_t mask = slots_.size() - 1;
  for (size_t i = size_t(h >> shift_);; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.id1 == 0) {
      slot = {uint32_t(id) + 1, uint32_t(h)};
      return;
    }
    if (slot.tag == uint32_t(h) && tokens_[slot.id1 - 1].text == s) return;  // the first one stays
  }
}

TokenId TokenMap::find(std::string_view s) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash(s);
  const size_t mask = slots_.size() - 1;
  for (size_t i = size_t(h >> shift_);; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.id1 == 0) return -1;
    if (slot.tag == uint32_t(h) && tokens_[slot.id1 - 1].text == s) return TokenId(slot.id1 - 1);
  }
}

}  // namespace ignis::text
