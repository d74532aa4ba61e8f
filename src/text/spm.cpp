// SentencePiece BPE (see spm.h).
#include "text/spm.h"

#include <cstdio>
#include <queue>

#include "text/unicode.h"

namespace ignis::text {

SpmModel::SpmModel(const TokenizerConfig& cfg, const TokenMap& map) : map_(map), unk_(cfg.unk) {
  scores_.reserve(cfg.tokens.size());
  for (const auto& t : cfg.tokens) scores_.push_back(t.score);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    snprintf(hex, sizeof(hex), "<0x%02X>", b);
    byte_ids_[b] = map_find(map_, hex);
  }
}

void SpmModel::encode(std::string_view text, std::vector<TokenId>* out) const {
  struct Sym {
    uint32_t begin, len;
    int32_t prev, next;
  };
  std::vector<Sym> syms;
  syms.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = std::min(utf8_len(uint8_t(text[i])), text.size() - i);
    const int32_t idx = int32_t(syms.size());
    syms.push_back({uint32_t(i), uint32_t(len), idx - 1, -1});
    if (idx > 0) syms[idx - 1].next = idx;
    i += len;
  }
  struct Cand {
    float score;
    int32_t left, right;
    uint32_t len;
    bool operator<(const Cand& o) const {  // max-heap: higher score, then leftmost
      return score != o.score ? score < o.score : left > o.left;
    }
  };
  std::priority_queue<Cand> heap;
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t len = syms[l].len + syms[r].len;
    const TokenId id = map_find(map_, text.substr(syms[l].begin, len));
    if (id < 0) return;
    heap.push({scores_[size_t(id)], l, r, len});
  };
  for (int32_t i = 1; i < int32_t(syms.size()); ++i) consider(i - 1, i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = syms[c.left];
    Sym& r = syms[c.right];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const std::string_view piece = text.substr(syms[i].begin, syms[i].len);
    const TokenId id = map_find(map_, piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    bool have_bytes = true;
    for (char ch : piece) have_bytes = have_bytes && byte_ids_[uint8_t(ch)] >= 0;
    if (have_bytes) {
      for (char ch : piece) out->push_back(byte_ids_[uint8_t(ch)]);
    } else if (unk_ >= 0) {
      out->push_back(unk_);
    }
  }
}

}  // namespace ignis::text
