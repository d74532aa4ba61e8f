// TokenMap: text -> token id, with string_view lookups (no allocation per lookup).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "text/tokenizer.h"

namespace ignis::text {

struct StrHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using TokenMap = std::unordered_map<std::string, TokenId, StrHash, std::equal_to<>>;

inline TokenId map_find(const TokenMap& m, std::string_view s) {
  auto it = m.find(s);
  return it == m.end() ? -1 : it->second;
}

}  // namespace ignis::text
