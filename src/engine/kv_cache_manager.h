// Per-request KV block bookkeeping on top of a BlockPool: block tables, prefix-cache lookups and
// allocation of the blocks a scheduling step needs.
//
// A request's tokens are cut into blocks of block_size tokens; block i of a request is identified by
// hash(hash of block i-1, tokens of block i), so two requests share a block only when everything before
// it is equal too. Only full blocks are ever hashed. Block tables are append-only while a request runs.
// Not thread-safe: owned by the scheduler.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/block_pool.h"

namespace ignis::engine {

// What the manager needs to know of a request.
struct SeqBlocks {
  std::vector<BlockId> table;        // block table, in position order
  std::vector<BlockHash> hashes;     // hashes of the leading full blocks computed so far
  int32_t n_hashed_blocks = 0;       // how many of table's blocks are registered in the prefix cache
};

struct PrefixHit {
  std::vector<BlockId> blocks;  // cached blocks covering the first n_tokens tokens
  int32_t n_tokens = 0;
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t n_blocks, int32_t block_size, bool prefix_caching = true);

  int32_t block_size() const { return block_size_; }
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }

  // The longest run of cached full blocks at the start of `tokens`, leaving at least the last token
  // uncached (its logits must be computed). Counts a prefix-cache query of tokens.size() tokens.
  PrefixHit find_prefix(std::span<const int32_t> tokens);
  // The same lookup without counting (a scheduler may look again in a later step before it admits).
  PrefixHit lookup_prefix(std::span<const int32_t> tokens) const;
  // Counts one admitted request's query: n_query tokens looked up, n_hit found.
  void count_query(int32_t n_query, int32_t n_hit) {
    queries_ += uint64_t(n_query);
    hits_ += uint64_t(n_hit);
  }
  // Hashes of the full blocks find_prefix() could ever hit for `tokens` (all but the last token), in
  // order: hash i covers tokens [0, (i + 1) * block_size).
  std::vector<BlockHash> prefix_hashes(std::span<const int32_t> tokens) const;
  bool prefix_caching() const { return prefix_caching_; }

  // Makes room for `n_new` more tokens after `n_computed` ones (with `hit` taken first, when the
  // request starts). Returns false and changes nothing if the pool cannot supply the blocks.
  bool allocate(SeqBlocks& seq, int32_t n_computed, int32_t n_new, const PrefixHit& hit = {});

  // Registers the request's newly full blocks (all of tokens[0, n_computed)) in the prefix cache.
  void cache_full_blocks(SeqBlocks& seq, std::span<const int32_t> tokens, int32_t n_computed);

  // Releases a request's blocks (tail first, so its tail is evicted before shared heads).
  void free(SeqBlocks& seq);

  uint64_t prefix_queries() const { return queries_; }  // tokens looked up
  uint64_t prefix_hits() const { return hits_; }        // tokens found

  static BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens);

 private:
  BlockPool pool_;
  int32_t block_size_;
  bool prefix_caching_;
  uint64_t queries_ = 0;
  uint64_t hits_ = 0;
  // Tokens held by each hashed block, to rule out hash collisions on lookup.
  std::unordered_map<BlockId, std::vector<int32_t>> block_tokens_;
};

}  // namespace ignis::engine
