// Open-addressing hash tables for the tokenizer hot paths (std::unordered_map's node per entry
// costs a cache miss per lookup):
//   MergeTable: (left id, right id) -> (rank, merged id), built once, read-only afterwards.
//   WordCache: word -> its token ids, filled during one encode() call.
// Neither is thread-safe for writes; a built MergeTable is safe to read from many threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace ignis::text {

class MergeTable {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    TokenId id = -1;
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);

  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Entry{});
    shift_ = 64 - __builtin_ctzll(cap);
    size_ = 0;
  }
  // Keeps the first insertion of a key (the lowest rank).
  void insert(TokenId a, TokenId b, int32_t rank, TokenId id) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const uint64_t k = key(a, b);
    for (size_t i = slot(k);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == kEmpty) {
        slots_[i] = {k, rank, id};
        ++size_;
        return;
      }
      if (slots_[i].key == k) return;
    }
  }
  const Entry* find(TokenId a, TokenId b) const {
    if (slots_.empty()) return nullptr;
    const uint64_t k = key(a, b);
    for (size_t i = slot(k);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == k) return &slots_[i];
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }

 private:
  static uint64_t key(TokenId a, TokenId b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  size_t slot(uint64_t k) const { return size_t((k * 0x9E3779B97F4A7C15ull) >> shift_); }
  void grow() {
    std::vector<Entry> old;
    old.swap(slots_);
    reserve(old.empty() ? 8 : old.size());
    for (const Entry& e : old)
      if (e.key != kEmpty) insert(TokenId(e.key >> 32), TokenId(uint32_t(e.key)), e.rank, e.id);
  }
  std::vector<Entry> slots_;
  int shift_ = 60;
  size_t size_ = 0;
};

class WordCache {
 public:
  WordCache() { rehash(64); }
  // Returns [begin, end) into ids() for `word`, or false.
  bool find(std::string_view word, uint32_t* begin, uint32_t* end) const {
    const uint64_t h = hash(word);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.len == kNone) return false;
      if (s.hash == h && std::string_view(arena_).substr(s.off, s.len) == word) {
        *begin = s.ids_begin;
        *end = s.ids_end;
        return true;
      }
    }
  }
  void insert(std::string_view word, uint32_t begin, uint32_t end) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    put({hash(word), uint32_t(arena_.size()), uint32_t(word.size()), begin, end});
    arena_.append(word);
    ++size_;
  }
  std::vector<TokenId>& ids() { return ids_; }

 private:
  static constexpr uint32_t kNone = ~uint32_t(0);
  struct Slot {
    uint64_t hash = 0;
    uint32_t off = 0, len = kNone, ids_begin = 0, ids_end = 0;
  };
  static uint64_t hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then a final mix
    for (char c : s) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
    return h ^ (h >> 29);
  }
  void put(const Slot& n) {
    for (size_t i = n.hash & mask_;; i = (i + 1) & mask_)
      if (slots_[i].len == kNone) {
        slots_[i] = n;
        return;
      }
  }
  void rehash(size_t cap) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const Slot& s : old)
      if (s.len != kNone) put(s);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
  std::string arena_;
  std::vector<TokenId> ids_;
};

}  // namespace ignis::text
