// SentencePiece BPE: adjacent pieces are merged while the merged text is a vocabulary piece,
// highest score first (ties: leftmost); characters left without a piece become <0xNN> byte tokens
// (or unk). This is the algorithm of sentencepiece's bpe_model and of llama.cpp's SPM tokenizer.
//
// Immutable after construction; encode is const and thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "text/token_map.h"
#include "text/vocab.h"

namespace ignis::text {

class SpmModel {
 public:
  SpmModel(const TokenizerConfig& cfg, const TokenMap& map);
  // `text` is already escaped (spaces as U+2581) and prefixed as configured.
  void encode(std::string_view text, std::vector<TokenId>* out) const;

 private:
  const TokenMap& map_;
  std::vector<float> scores_;
  TokenId unk_ = -1;
  TokenId byte_ids_[256];
};

}  // namespace ignis::text
