// WordPiece (see wpm.h).
#include "text/wpm.h"

#include "text/unicode.h"

namespace ignis::text {

WpmModel::WpmModel(const TokenizerConfig& cfg, const TokenMap& map)
    : map_(map),
      word_prefix_(cfg.wpm_word_prefix),
      cont_prefix_(cfg.wpm_continuing_prefix),
      unk_(cfg.unk),
      max_chars_(size_t(cfg.wpm_max_chars)) {
  for (const auto& t : cfg.tokens) max_token_len_ = std::max(max_token_len_, t.text.size());
}

void WpmModel::encode_word(std::string_view word, std::vector<TokenId>* out) const {
  if (word.empty()) return;
  size_t n_chars = 0;
  for (char c : word) n_chars += (uint8_t(c) & 0xC0) != 0x80;
  const size_t mark = out->size();
  if (n_chars <= max_chars_) {
    std::string buf;
    size_t i = 0;
    bool ok = true;
    while (i < word.size()) {
      // Longest match first; ends are cut at character boundaries.
      const std::string& pre = i == 0 ? word_prefix_ : cont_prefix_;
      size_t end = std::min(word.size(), i + max_token_len_);
      TokenId found = -1;
      while (end > i) {
        if (end < word.size() && (uint8_t(word[end]) & 0xC0) == 0x80) {
          --end;
          continue;
        }
        buf.assign(pre);
        buf.append(word.data() + i, end - i);
        found = map_find(map_, buf);
        if (found >= 0) break;
        --end;
      }
      if (found < 0) {
        ok = false;
        break;
      }
      out->push_back(found);
      i = end;
    }
    if (ok) return;
  }
  out->resize(mark);
  if (unk_ >= 0) out->push_back(unk_);
}

}  // namespace ignis::text
