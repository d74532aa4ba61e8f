// Byte-pair encoding of one pre-tokenized word: merges ranked by priority, applied lowest rank
// first with a priority queue (O(n log n) per word), on token ids.
//
// Immutable after construction; encode_word is const and thread-safe.
#pragma once

#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/flat_map.h"
#include "text/token_map.h"
#include "text/vocab.h"

namespace ignis::text {

class BpeModel {
 public:
  // `map` is the model vocabulary (model-space text -> id); it must outlive the model.
  BpeModel(const TokenizerConfig& cfg, const TokenMap& map);
  void encode_word(std::string_view word, std::vector<TokenId>* out) const;

 private:
  void initial_symbols(std::string_view word, std::vector<TokenId>* ids) const;

  const TokenMap& map_;
  MergeTable merges_;
  bool ignore_merges_ = false;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  TokenId unk_ = -1;
  bool byte_level_ = false;  // words start as single bytes
  std::string cont_prefix_, end_suffix_;
  TokenId byte_ids_[256];
  TokenId fallback_ids_[256];  // <0xNN> tokens
};

}  // namespace ignis::text
