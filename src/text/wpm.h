// WordPiece: each word becomes the longest vocabulary pieces from left to right; a word with a
// part that matches nothing becomes one unk token (BERT).
//
// Immutable after construction; encode_word is const and thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "text/token_map.h"
#include "text/vocab.h"

namespace ignis::text {

class WpmModel {
 public:
  WpmModel(const TokenizerConfig& cfg, const TokenMap& map);
  void encode_word(std::string_view word, std::vector<TokenId>* out) const;

 private:
  const TokenMap& map_;
  std::string word_prefix_, cont_prefix_;
  TokenId unk_ = -1;
  size_t max_chars_ = 100;
  size_t max_token_len_ = 0;
};

}  // namespace ignis::text
