// BPE merging (see bpe.h).
#include "text/bpe.h"

#include <array>
#include <queue>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/error.h"
#include "text/unicode.h"

namespace ignis::text {

BpeModel::BpeModel(const TokenizerConfig& cfg, const TokenMap& map)
    : map_(map),
      ignore_merges_(cfg.ignore_merges),
      byte_fallback_(cfg.byte_fallback),
      fuse_unk_(cfg.fuse_unk),
      unk_(cfg.unk),
      byte_level_(cfg.byte_level),
      cont_prefix_(cfg.continuing_subword_prefix),
      end_suffix_(cfg.end_of_word_suffix) {
  for (int b = 0; b < 256; ++b) {
    const char c = char(b);
    byte_ids_[b] = map_find(map_, std::string_view(&c, 1));
    char hex[8];
    snprintf(hex, sizeof(hex), "<0x%02X>", b);
    fallback_ids_[b] = map_find(map_, hex);
  }
  if (!cont_prefix_.empty() || !end_suffix_.empty()) byte_level_ = false;
  // NOTE: each merge is three lookups of token texts, each a cache miss or two into the vocabulary,
  // so a long list is resolved by two threads, each a half, and the table is then filled in rank
  // order as before. Qwen2.5's 151,387 merges on the 2-vCPU Zen 5: 21-34 ms on one thread, 15-19 on
  // two (BENCHMARKS.md, thirty-first session).
  const size_t n = cfg.merges.size();
  std::vector<std::array<TokenId, 3>> resolved(n);  // a, b and the merged token; -1 where one is missing
  auto resolve = [&](size_t r0, size_t r1) {
    std::string joined;
    for (size_t r = r0; r < r1; ++r) {
      const auto& [a, b] = cfg.merges[r];
      std::array<TokenId, 3>& out = resolved[r];
      out = {map_find(map_, a), map_find(map_, b), -1};
      if (out[0] < 0 || out[1] < 0) continue;
      // With a continuing-subword prefix the merged token drops the right side's prefix.
      joined = a;
      if (!cont_prefix_.empty() && b.compare(0, cont_prefix_.size(), cont_prefix_) == 0)
        joined.append(b, cont_prefix_.size(), std::string::npos);
      else
        joined += b;
      out[2] = map_find(map_, joined);
    }
  };
  constexpr size_t kSplitMerges = 16384;
  std::jthread other;  // (joined when it goes out of scope, also when resolve throws)
  if (n >= kSplitMerges) {
    try {
      other = std::jthread(resolve, n / 2, n);
    } catch (const std::system_error&) {  // no thread to be had: this one does both halves
    }
  }
  resolve(0, other.joinable() ? n / 2 : n);
  if (other.joinable()) other.join();
  merges_.reserve(n);  // (at most half full)
  for (size_t r = 0; r < n; ++r)
    if (resolved[r][2] >= 0) merges_.insert(resolved[r][0], resolved[r][1], int32_t(r), resolved[r][2]);
}

void BpeModel::initial_symbols(std::string_view word, std::vector<TokenId>* ids) const {
  if (byte_level_) {
    // A byte without a token (vocabularies drop bytes that never occur in UTF-8) is unknown.
    for (char c : word) {
      const TokenId id = byte_ids_[uint8_t(c)];
      if (id >= 0) ids->push_back(id);
      else if (unk_ >= 0) ids->push_back(unk_);
    }
    return;
  }
  std::string buf;
  size_t i = 0;
  while (i < word.size()) {
    size_t len;
    utf8_decode(word, i, &len);
    if (!len) len = 1;
    const bool first = i == 0, last = i + len >= word.size();
    buf.clear();
    if (!first) buf += cont_prefix_;
    buf.append(word.data() + i, len);
    if (last) buf += end_suffix_;
    TokenId id = map_find(map_, buf);
    if (id >= 0) {
      ids->push_back(id);
    } else if (byte_fallback_ && fallback_ids_[uint8_t(word[i])] >= 0) {
      bool all = true;
      for (size_t k = 0; k < len; ++k) all = all && fallback_ids_[uint8_t(word[i + k])] >= 0;
      if (all) {
        for (size_t k = 0; k < len; ++k) ids->push_back(fallback_ids_[uint8_t(word[i + k])]);
      } else if (unk_ >= 0) {
        ids->push_back(unk_);
      }
    } else if (unk_ >= 0) {
      if (!(fuse_unk_ && !ids->empty() && ids->back() == unk_)) ids->push_back(unk_);
    }
    i += len;
  }
}

// NOTE: HF tokenizers and llama.cpp both apply the lowest-ranked merge first and break ties by
// the leftmost position; a stale queue entry is detected by re-checking the pair's ids.
void BpeModel::encode_word(std::string_view word, std::vector<TokenId>* out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const TokenId id = map_find(map_, word);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  struct Sym {
    TokenId id;
    int32_t prev, next;
  };
  std::vector<TokenId> ids;
  ids.reserve(word.size());
  initial_symbols(word, &ids);
  if (ids.size() <= 1) {
    out->insert(out->end(), ids.begin(), ids.end());
    return;
  }
  std::vector<Sym> syms(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    syms[i] = {ids[i], int32_t(i) - 1, i + 1 < ids.size() ? int32_t(i + 1) : -1};
  struct Cand {
    int32_t rank, pos;
    TokenId left, right;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<Cand> heap_store;
  heap_store.reserve(ids.size());
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap(std::greater<Cand>{},
                                                                        std::move(heap_store));
  auto consider = [&](int32_t l) {
    if (l < 0) return;
    const int32_t r = syms[l].next;
    if (r < 0) return;
    if (const auto* m = merges_.find(syms[l].id, syms[r].id)) heap.push({m->rank, l, syms[l].id, syms[r].id});
  };
  for (int32_t i = 0; i + 1 < int32_t(syms.size()); ++i) consider(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = syms[c.pos];
    if (l.id != c.left || l.next < 0) continue;
    Sym& r = syms[l.next];
    if (r.id != c.right) continue;
    l.id = merges_.find(c.left, c.right)->id;
    const int32_t rn = r.next;
    r.id = -2;  // dead
    l.next = rn;
    if (rn >= 0) syms[rn].prev = c.pos;
    consider(l.prev);
    consider(c.pos);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) out->push_back(syms[i].id);
}

}  // namespace ignis::text
