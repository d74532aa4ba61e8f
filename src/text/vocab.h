// TokenizerConfig: everything a tokenizer is made of, filled in by the loaders (GGUF metadata,
// tokenizer.json, vocab.json + merges.txt, SentencePiece .model, tiktoken) and then turned into an
// immutable tokenizer by make_tokenizer(). Loaders convert byte-level vocabularies (GPT-2's
// printable-character alphabet) to raw bytes up front, so the models and decoders work on bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/pretokenizer.h"
#include "text/tokenizer.h"

namespace ignis::text {

enum class ModelKind { Spm, Bpe, Wpm };

// How a normal token's text becomes decoded text.
enum class PieceMode {
  Raw,         // the text is the bytes (byte-level BPE after conversion, tiktoken)
  SpaceMarker, // U+2581 stands for a space (SentencePiece, Metaspace)
  WordPiece,   // "##x" continues a word, anything else starts one with a space (HF WordPiece)
};

struct TokenEntry {
  std::string text;  // model-space text (raw bytes for byte-level vocabularies)
  float score = 0.0f;
  TokenType type = TokenType::Normal;
};

// A token matched in the raw text before the model runs (control and user-defined tokens).
struct AddedToken {
  TokenId id = -1;
  std::string content;
  bool special = true;  // matched only when parse_special (control/unknown); else always
  bool lstrip = false, rstrip = false, single_word = false;
  // Hugging Face's `normalized`: matched against the normalized text (its content normalized
  // too) after the non-normalized added tokens were taken out of the raw text.
  bool normalized = false;
};

// BPE merges by rank: pairs of model-space texts, kept end to end in one buffer.
// NOTE: as a vector of string pairs Qwen2.5's 151,387 merges were 9.7 MB of fresh memory at every load,
// and fresh memory costs about 2 us a 4 KiB page on the 2-vCPU Zen 5 VMs (BENCHMARKS.md, thirty-first
// session); here they are about 3 MB.
class MergeList {
 public:
  void reserve(size_t n) { ends_.reserve(n); }
  void emplace_back(std::string_view a, std::string_view b);
  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::pair<std::string_view, std::string_view> operator[](size_t i) const {
    const size_t a0 = i ? ends_[i - 1].b_end : 0;
    const std::string_view t(text_);
    return {t.substr(a0, ends_[i].a_end - a0), t.substr(ends_[i].a_end, ends_[i].b_end - ends_[i].a_end)};
  }

 private:
  struct Ends {
    uint32_t a_end, b_end;  // in text_; merge i's left text starts where merge i - 1's right one ends
  };
  std::string text_;
  std::vector<Ends> ends_;
};

struct TokenizerConfig {
  std::string source;  // file or folder, for messages
  ModelKind kind = ModelKind::Bpe;
  std::vector<TokenEntry> tokens;
  MergeList merges;  // BPE, model-space text, by rank

  // SentencePiece (Spm): a space is prepended to text that starts the input or follows a special
  // token; spaces become U+2581 before the model runs.
  bool add_space_prefix = true;
  bool escape_whitespace = true;

  // BPE
  bool byte_level = false;  // words start as single bytes (byte-level / tiktoken vocabularies)
  bool ignore_merges = false;
  bool byte_fallback = false;
  bool fuse_unk = false;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;

  // WordPiece
  std::string wpm_word_prefix;           // "\xE2\x96\x81" in GGUF vocabularies
  std::string wpm_continuing_prefix;     // "##" in Hugging Face vocabularies
  int wpm_max_chars = 100;

  Normalizer normalizer;
  PreTokenizer pretokenizer;
  std::vector<AddedToken> added;

  TokenId bos = -1, eos = -1, unk = -1, sep = -1, pad = -1, eot = -1, eom = -1;
  std::vector<TokenId> eog;  // besides eos/eot/eom
  bool add_bos = false, add_eos = false;
  // Post-processing template (TemplateProcessing / WordPiece's CLS..SEP); when set it replaces
  // add_bos/add_eos.
  bool has_template = false;
  std::vector<TokenId> template_prefix, template_suffix;

  PieceMode piece_mode = PieceMode::Raw;
  bool decode_strip_leading_space = false;
  // Hugging Face BPEDecoder: this suffix becomes a space in every normal token, "" in the last
  // decoded token (so no trailing space).
  std::string bpe_decoder_suffix;
  // Hugging Face WordPiece decoder `cleanup`: clean_up_tokenization() on each decoded token.
  bool wpm_cleanup = false;
  // tokenizer_config.json clean_up_tokenization_spaces: clean_up_tokenization() on the decoded
  // text (transformers' decode).
  bool clean_up_spaces = false;
  std::string chat_template;
};

// transformers' clean_up_tokenization: " ." -> ".", " ?" -> "?", " !" -> "!", " ," -> ",",
// " ' " -> "'", " n't" -> "n't", " 'm" -> "'m", " 's" -> "'s", " 've" -> "'ve", " 're" -> "'re",
// each replacement over the whole string, in that order.
std::string clean_up_tokenization(std::string s);

// Validates the config (ids in range, merges resolvable) and builds the tokenizer.
std::unique_ptr<Tokenizer> make_tokenizer(TokenizerConfig cfg);

// Known end-of-generation token texts (llama.cpp's list), added to cfg.eog when present.
void add_eog_by_text(TokenizerConfig& cfg);

}  // namespace ignis::text
