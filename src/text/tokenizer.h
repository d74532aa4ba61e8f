// Tokenizers: text <-> token ids, with exact parity to the reference tokenizers.
//
// A Tokenizer is built once from a GGUF's tokenizer.ggml.* metadata or from Hugging Face tokenizer
// files, and is immutable afterwards: encode/decode are const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ignis::gguf {
class GgufFile;
}

namespace ignis::text {

using TokenId = int32_t;

// ggml's token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // From a GGUF's tokenizer.ggml.* keys (model files and vocab-only files). Throws ignis::Error
  // naming the file and the key (e.g. an unknown tokenizer.ggml.pre).
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::GgufFile& file);
  // From a path: a .gguf, a tokenizer.json, a tokenizer.model (SentencePiece), or a folder holding
  // Hugging Face tokenizer files (tokenizer.json | vocab.json+merges.txt | tokenizer.model, plus
  // tokenizer_config.json).
  static std::unique_ptr<Tokenizer> from_path(const std::string& path);

  // add_special: BOS/EOS (or the post-processor's template) as the tokenizer's config says.
  // parse_special: control/user-defined tokens written in `text` are matched as themselves.
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // The bytes of one token as it appears in decoded text (may be a partial UTF-8 sequence).
  // Control tokens give their text ("<|im_end|>"), unused tokens "". Throws Error for a bad id.
  virtual std::string token_to_piece(TokenId id) const = 0;
  // Whole-sequence decode (handles leading-space stripping and byte tokens as the reference does);
  // invalid UTF-8 from byte tokens becomes U+FFFD. skip_special leaves out control/unknown tokens.
  virtual std::string decode(const std::vector<TokenId>& ids, bool skip_special = false) const = 0;

  virtual int32_t n_vocab() const = 0;
  virtual TokenId bos() const = 0;  // -1 if none
  virtual TokenId eos() const = 0;  // -1 if none
  virtual bool add_bos() const = 0;
  virtual bool add_eos() const = 0;
  virtual bool is_eog(TokenId id) const = 0;      // end of generation (eos, eot, eom, ...)
  virtual bool is_control(TokenId id) const = 0;  // control / special token
  virtual std::string token_text(TokenId id) const = 0;  // the vocabulary string
  // The chat template shipped with the tokenizer, or "" if none.
  virtual std::string chat_template() const = 0;
  // True when decode() drops one leading space (SentencePiece's dummy prefix); StreamDecoder
  // does the same.
  virtual bool decode_strips_leading_space() const { return false; }
  // True when a token's decoded text depends on the tokens after it (Hugging Face's BPEDecoder
  // drops the last token's word-end space; clean_up_tokenization_spaces joins " ." etc.), so
  // StreamDecoder must decode the whole sequence and hold back the tail that may still change.
  virtual bool decode_is_contextual() const { return false; }
};

// Incremental detokenization for streaming: push ids, get back only complete UTF-8 text.
// Never emits a partial UTF-8 character and never loses one; flush() returns whatever is left
// (invalid trailing bytes become U+FFFD as the reference decoders do). The concatenation of all
// returned text equals tok.decode(ids, /*skip_special=*/true): control tokens are not shown.
// One StreamDecoder per sequence; not thread-safe (the Tokenizer it reads is).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok);
  std::string push(TokenId id);
  std::string flush();

 private:
  const Tokenizer& tok_;
  std::vector<TokenId> ids_;
  std::string pending_;
  size_t emitted_ = 0;
  size_t contextual_emitted_ = 0;  // bytes of decode(ids_) returned so far (contextual decode)
};

}  // namespace ignis::text
