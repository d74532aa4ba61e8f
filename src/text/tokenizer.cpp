// Tokenizer::from_path (dispatch on what the path holds) and StreamDecoder.
#include "text/tokenizer.h"

#include <filesystem>

#include "core/error.h"
#include "format/gguf.h"
#include "text/hf_loader.h"
#include "text/unicode.h"

namespace ignis::text {

namespace fs = std::filesystem;

static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::unique_ptr<Tokenizer> Tokenizer::from_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return load_hf_folder(path);
  if (!fs::exists(path, ec)) fail("{}: no such file or folder", path);
  if (ends_with(path, ".gguf")) {
    auto f = gguf::GgufFile::open(path);
    return from_gguf(*f);
  }
  if (ends_with(path, ".json")) return load_hf_tokenizer_json(path, "");
  if (ends_with(path, ".model") || path.find(".model.") != std::string::npos) {
    if (ends_with(path, ".tiktoken")) return load_tiktoken(path);
    return load_sentencepiece_model(path);
  }
  if (ends_with(path, ".tiktoken")) return load_tiktoken(path);
  // Unknown extension: GGUF files announce themselves with their magic.
  auto f = gguf::GgufFile::open(path);
  return from_gguf(*f);
}

StreamDecoder::StreamDecoder(const Tokenizer& tok) : tok_(tok) {}

// NOTE: pieces are concatenated as decode(ids, skip_special=true) would; only the bytes of an
// incomplete (but so far valid) UTF-8 sequence at the end are held back, so the concatenation of
// everything returned equals the whole decode.
std::string StreamDecoder::push(TokenId id) {
  if (tok_.is_control(id)) return {};
  if (tok_.decode_is_contextual()) {
    // Decode everything and return what can no longer change: all but the last kHold bytes
    // (a clean-up rule spans at most 4 bytes, an invalid UTF-8 tail at most 3 U+FFFD, the
    // BPEDecoder's dropped space 1), cut at a character boundary.
    constexpr size_t kHold = 12;
    tok_.token_to_piece(id);  // throws for a bad id
    ids_.push_back(id);
    const std::string text = tok_.decode(ids_, /*skip_special=*/true);
    size_t cut = text.size() > kHold ? text.size() - kHold : 0;
    while (cut > 0 && (uint8_t(text[cut]) & 0xC0) == 0x80) --cut;
    if (cut <= contextual_emitted_) return {};
    std::string out = text.substr(contextual_emitted_, cut - contextual_emitted_);
    contextual_emitted_ = cut;
    return out;
  }
  std::string piece = tok_.token_to_piece(id);
  if (piece.empty()) return {};
  if (emitted_ == 0 && pending_.empty() && tok_.decode_strips_leading_space() && piece[0] == ' ') {
    piece.erase(0, 1);
    if (piece.empty()) {
      emitted_ = 1;  // the stripped space counts as the start of the text
      return {};
    }
  }
  pending_ += piece;
  const size_t keep = utf8_incomplete_tail(pending_);
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  emitted_ += out.size() + 1;
  return utf8_valid(out) ? out : utf8_lossy(out);
}

std::string StreamDecoder::flush() {
  if (tok_.decode_is_contextual()) {
    const std::string text = tok_.decode(ids_, /*skip_special=*/true);
    std::string out = contextual_emitted_ < text.size() ? text.substr(contextual_emitted_) : "";
    contextual_emitted_ = text.size();
    return out;
  }
  std::string out = utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace ignis::text
