#include "engine/block_pool.h"

#include <cassert>

namespace ignis::engine {

BlockPool::BlockPool(int32_t n_blocks) : blocks_(n_blocks > 0 ? n_blocks : 0) {
  for (BlockId i = 0; i < n_blocks; ++i) push_free_tail(i);
}

void BlockPool::push_free_tail(BlockId id) {
  Block& b = blocks_[id];
  assert(!b.in_free_list);
  b.prev = tail_;
  b.next = -1;
  if (tail_ >= 0) blocks_[tail_].next = id; else head_ = id;
  tail_ = id;
  b.in_free_list = true;
  ++n_free_;
}

void BlockPool::unlink_free(BlockId id) {
  Block& b = blocks_[id];
  assert(b.in_free_list);
  if (b.prev >= 0) blocks_[b.prev].next = b.next; else head_ = b.next;
  if (b.next >= 0) blocks_[b.next].prev = b.prev; else tail_ = b.prev;
  b.prev = b.next = -1;
  b.in_free_list = false;
  --n_free_;
}

void BlockPool::drop_hash(BlockId id) {
  Block& b = blocks_[id];
  if (!b.hashed) return;
  auto it = by_hash_.find(b.hash);
  if (it != by_hash_.end() && it->second == id) by_hash_.erase(it);
  b.hashed = false;
  b.hash = 0;
}

std::optional<std::vector<BlockId>> BlockPool::allocate(int32_t n) {
  if (n < 0 || n > n_free_) return std::nullopt;
  std::vector<BlockId> out;
  out.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    BlockId id = head_;
    unlink_free(id);
    drop_hash(id);  // NOTE: evicting a cached block forgets its content
    blocks_[id].ref = 1;
    out.push_back(id);
  }
  return out;
}

std::optional<BlockId> BlockPool::lookup(BlockHash hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

void BlockPool::touch(const std::vector<BlockId>& ids) {
  for (BlockId id : ids) {
    Block& b = blocks_[id];
    if (b.ref == 0) unlink_free(id);
    ++b.ref;
  }
}

void BlockPool::set_hash(BlockId id, BlockHash hash) {
  Block& b = blocks_[id];
  if (b.hashed) return;
  if (by_hash_.count(hash)) return;
  b.hashed = true;
  b.hash = hash;
  by_hash_.emplace(hash, id);
}

void BlockPool::release(const std::vector<BlockId>& ids) {
  for (BlockId id : ids) {
    Block& b = blocks_[id];
    assert(b.ref > 0);
    if (--b.ref == 0) push_free_tail(id);
  }
}

std::optional<BlockHash> BlockPool::hash_of(BlockId id) const {
  if (!blocks_[id].hashed) return std::nullopt;
  return blocks_[id].hash;
}

std::vector<BlockId> BlockPool::free_list() const {
  std::vector<BlockId> out;
  for (BlockId id = head_; id >= 0; id = blocks_[id].next) out.push_back(id);
  return out;
}

void BlockPool::reset_prefix_cache() {
  for (BlockId id = 0; id < n_blocks(); ++id)
    if (blocks_[id].ref == 0) drop_hash(id);
}

}  // namespace ignis::engine
