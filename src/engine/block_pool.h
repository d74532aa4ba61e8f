// The paged KV cache's block pool: a flat array of fixed-size blocks with reference counts, a free list
// in eviction order, and the prefix-cache index (content hash of a full block -> block id).
//
// Owns only bookkeeping (ids, ref counts, hashes); the KV tensors themselves live in the model's paged
// cache storage, indexed by block id. A block whose ref count drops to zero goes to the tail of the free
// list but keeps its hash, so a later request with the same prefix can take it back (a prefix-cache
// hit); allocation takes blocks from the head, evicting (unhashing) cached blocks least recently freed
// first. Not thread-safe: the engine's scheduler thread owns the pool.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace ignis::engine {

using BlockId = int32_t;
using BlockHash = uint64_t;

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  // Blocks that can be handed out now: free, including cached blocks with no users (evictable).
  int32_t n_free() const { return n_free_; }
  int32_t n_used() const { return n_blocks() - n_free_; }
  double usage() const { return blocks_.empty() ? 0.0 : double(n_used()) / double(n_blocks()); }

  // Takes n blocks from the head of the free list (evicting their cached hashes), ref count 1 each.
  // Returns nullopt (and changes nothing) if fewer than n are free.
  std::optional<std::vector<BlockId>> allocate(int32_t n);

  // The cached block holding content `hash`, if any (does not change ref counts).
  std::optional<BlockId> lookup(BlockHash hash) const;
  // Takes a reference to cached blocks (prefix hits). A block with no users leaves the free list.
  void touch(const std::vector<BlockId>& ids);
  // Marks a full block as holding `hash` so later requests can reuse it. A hash already held by another
  // block is left pointing at that block (the first copy wins).
  void set_hash(BlockId id, BlockHash hash);

  // Drops one reference from each block. Blocks that reach zero go to the free list's tail in the
  // order given (callers pass a sequence's blocks last-first so its tail is evicted before its head).
  void release(const std::vector<BlockId>& ids);

  int32_t ref_count(BlockId id) const { return blocks_[id].ref; }
  std::optional<BlockHash> hash_of(BlockId id) const;
  // Free list from head (next to be evicted) to tail; for tests.
  std::vector<BlockId> free_list() const;
  // Number of prefix-cache entries (hashed blocks, used or not).
  size_t n_cached() const { return by_hash_.size(); }
  // Drops every hash of blocks nobody uses (e.g. after a model reload).
  void reset_prefix_cache();

 private:
  struct Block {
    int32_t ref = 0;
    bool hashed = false;
    BlockHash hash = 0;
    BlockId prev = -1;  // free-list links, -1 = none
    BlockId next = -1;
    bool in_free_list = false;
  };
  void push_free_tail(BlockId id);
  void unlink_free(BlockId id);
  void drop_hash(BlockId id);

  std::vector<Block> blocks_;
  BlockId head_ = -1;
  BlockId tail_ = -1;
  int32_t n_free_ = 0;
  std::unordered_map<BlockHash, BlockId> by_hash_;
};

}  // namespace ignis::engine
