#include "engine/kv_cache_manager.h"

#include <algorithm>

namespace ignis::engine {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

KvCacheManager::KvCacheManager(int32_t n_blocks, int32_t block_size, bool prefix_caching)
    : pool_(n_blocks), block_size_(block_size), prefix_caching_(prefix_caching) {}

BlockHash KvCacheManager::hash_block(BlockHash parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ 0x6a09e667f3bcc909ull);
  for (int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return mix(h ^ tokens.size());
}

PrefixHit KvCacheManager::find_prefix(std::span<const int32_t> tokens) {
  PrefixHit hit = lookup_prefix(tokens);
  count_query(static_cast<int32_t>(tokens.size()), hit.n_tokens);
  return hit;
}

PrefixHit KvCacheManager::lookup_prefix(std::span<const int32_t> tokens) const {
  PrefixHit hit;
  if (!prefix_caching_ || tokens.empty()) return hit;
  // NOTE: the last token always stays uncomputed: the step that computes it yields the next logits.
  const int32_t max_blocks = static_cast<int32_t>((tokens.size() - 1) / block_size_);
  BlockHash parent = 0;
  for (int32_t b = 0; b < max_blocks; ++b) {
    auto blk = tokens.subspan(size_t(b) * block_size_, block_size_);
    BlockHash h = hash_block(parent, blk);
    auto id = pool_.lookup(h);
    if (!id) break;
    auto it = block_tokens_.find(*id);
    if (it == block_tokens_.end() || !std::equal(it->second.begin(), it->second.end(), blk.begin(), blk.end()))
      break;
    hit.blocks.push_back(*id);
    parent = h;
  }
  hit.n_tokens = static_cast<int32_t>(hit.blocks.size()) * block_size_;
  return hit;
}

std::vector<BlockHash> KvCacheManager::prefix_hashes(std::span<const int32_t> tokens) const {
  std::vector<BlockHash> out;
  if (tokens.empty()) return out;
  const int32_t max_blocks = static_cast<int32_t>((tokens.size() - 1) / block_size_);
  out.reserve(size_t(max_blocks));
  BlockHash parent = 0;
  for (int32_t b = 0; b < max_blocks; ++b) {
    parent = hash_block(parent, tokens.subspan(size_t(b) * block_size_, block_size_));
    out.push_back(parent);
  }
  return out;
}

bool KvCacheManager::allocate(SeqBlocks& seq, int32_t n_computed, int32_t n_new, const PrefixHit& hit) {
  const int32_t have = static_cast<int32_t>(seq.table.size() + hit.blocks.size());
  const int32_t n_total = n_computed + n_new;
  const int32_t need_total = (n_total + block_size_ - 1) / block_size_;
  const int32_t n_alloc = std::max(0, need_total - have);
  // Hit blocks nobody holds sit in the free list: taking them uses up free capacity too.
  int32_t hit_from_free = 0;
  for (BlockId id : hit.blocks)
    if (pool_.ref_count(id) == 0) ++hit_from_free;
  if (n_alloc + hit_from_free > pool_.n_free()) return false;
  if (!hit.blocks.empty()) {
    pool_.touch(hit.blocks);
    seq.table.insert(seq.table.end(), hit.blocks.begin(), hit.blocks.end());
    seq.n_hashed_blocks = static_cast<int32_t>(seq.table.size());
    BlockHash parent = seq.hashes.empty() ? 0 : seq.hashes.back();
    for (BlockId id : hit.blocks) {
      BlockHash h = *pool_.hash_of(id);
      seq.hashes.push_back(h);
      parent = h;
    }
    (void)parent;
  }
  auto fresh = pool_.allocate(n_alloc);
  seq.table.insert(seq.table.end(), fresh->begin(), fresh->end());
  return true;
}

void KvCacheManager::cache_full_blocks(SeqBlocks& seq, std::span<const int32_t> tokens, int32_t n_computed) {
  const int32_t n_full = std::min<int32_t>(n_computed / block_size_, static_cast<int32_t>(seq.table.size()));
  while (static_cast<int32_t>(seq.hashes.size()) < n_full) {
    const size_t b = seq.hashes.size();
    BlockHash parent = b == 0 ? 0 : seq.hashes[b - 1];
    auto blk = tokens.subspan(b * block_size_, block_size_);
    seq.hashes.push_back(hash_block(parent, blk));
  }
  if (!prefix_caching_) return;
  for (int32_t b = seq.n_hashed_blocks; b < n_full; ++b) {
    BlockId id = seq.table[b];
    if (!pool_.lookup(seq.hashes[b])) {
      pool_.set_hash(id, seq.hashes[b]);
      auto blk = tokens.subspan(size_t(b) * block_size_, block_size_);
      block_tokens_[id].assign(blk.begin(), blk.end());
    }
  }
  seq.n_hashed_blocks = std::max(seq.n_hashed_blocks, n_full);
}

void KvCacheManager::free(SeqBlocks& seq) {
  std::vector<BlockId> rev(seq.table.rbegin(), seq.table.rend());
  pool_.release(rev);
  seq.table.clear();
  seq.hashes.clear();
  seq.n_hashed_blocks = 0;
}

}  // namespace ignis::engine
