// TokenMap: a vocabulary's text -> token id, looked up by string_view without allocating. It keeps no
// strings: it points into the vocabulary's own TokenEntry array, which must stay in place (not be
// resized) while the map is used. Built once, then read-only and safe to read from many threads.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"
#include "text/vocab.h"

namespace ignis::text {

class TokenMap {
 public:
  TokenMap() = default;
  // Maps every token's text to its id. Where texts repeat, a Normal token wins over the others when
  // normal_first, and otherwise (and among equals) the lowest id.
  TokenMap(std::span<const TokenEntry> tokens, bool normal_first);
  TokenId find(std::string_view s) const;

 private:
  struct Slot {
    uint32_t id1 = 0;  // the token id + 1; 0: empty
    uint32_t tag = 0;  // the text's hash, low 32 bits
  };
  static uint64_t hash(std::string_view s);
  void insert(TokenId id);
  const TokenEntry* tokens_ = nullptr;
  std::vector<Slot> slots_;
  int shift_ = 64;
};

inline TokenId map_find(const TokenMap& m, std::string_view s) { return m.find(s); }

}  // namespace ignis::text
