#include "engine/block_pool.h"
#include "engine/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace ignis::engine;

TEST(BlockPool, AllocatesFromTheHeadInIdOrder) {
  BlockPool pool(4);
  EXPECT_EQ(pool.n_free(), 4);
  auto a = pool.allocate(3);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, (std::vector<BlockId>{0, 1, 2}));
  EXPECT_EQ(pool.n_free(), 1);
  EXPECT_FALSE(pool.allocate(2));  // all or nothing
  EXPECT_EQ(pool.n_free(), 1);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{3}));
}

TEST(BlockPool, ReleasedBlocksGoToTheTailInTheGivenOrder) {
  BlockPool pool(4);
  auto a = *pool.allocate(4);
  pool.release({2, 0});
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{2, 0}));
  pool.release({3, 1});
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{2, 0, 3, 1}));
  EXPECT_EQ(*pool.allocate(1), (std::vector<BlockId>{2}));
}

TEST(BlockPool, RefCountsKeepSharedBlocksOutOfTheFreeList) {
  BlockPool pool(3);
  auto a = *pool.allocate(2);  // 0, 1
  pool.set_hash(0, 111);
  pool.touch({0});             // a second user
  EXPECT_EQ(pool.ref_count(0), 2);
  pool.release({0});
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{2}));
  pool.release({1, 0});
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{2, 1, 0}));
  // The cached block survives until it is evicted from the head.
  EXPECT_EQ(pool.lookup(111), 0);
}

TEST(BlockPool, EvictionDropsTheHashOfTheLeastRecentlyFreedBlock) {
  BlockPool pool(3);
  auto a = *pool.allocate(3);
  pool.set_hash(0, 10);
  pool.set_hash(1, 11);
  pool.set_hash(2, 12);
  pool.release({1});
  pool.release({0});
  pool.release({2});
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{1, 0, 2}));
  auto b = *pool.allocate(2);
  EXPECT_EQ(b, (std::vector<BlockId>{1, 0}));
  EXPECT_FALSE(pool.lookup(11));
  EXPECT_FALSE(pool.lookup(10));
  EXPECT_EQ(pool.lookup(12), 2);
  EXPECT_EQ(pool.n_cached(), 1u);
}

TEST(BlockPool, TouchingACachedFreeBlockTakesItOutOfTheFreeList) {
  BlockPool pool(3);
  auto a = *pool.allocate(3);
  pool.set_hash(1, 42);
  pool.release({2, 1, 0});
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{2, 1, 0}));
  pool.touch({1});
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{2, 0}));
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_EQ(pool.ref_count(1), 1);
}

TEST(KvCacheManager, PrefixOfFullBlocksIsFoundAndTheLastTokenIsLeftToCompute) {
  KvCacheManager kv(8, 4);
  std::vector<int32_t> prompt(10);
  std::iota(prompt.begin(), prompt.end(), 100);
  SeqBlocks a;
  ASSERT_TRUE(kv.allocate(a, 0, 10));
  EXPECT_EQ(a.table, (std::vector<BlockId>{0, 1, 2}));
  kv.cache_full_blocks(a, prompt, 10);  // blocks 0 and 1 are full
  EXPECT_EQ(kv.pool().n_cached(), 2u);

  PrefixHit hit = kv.find_prefix(prompt);
  EXPECT_EQ(hit.n_tokens, 8);
  EXPECT_EQ(hit.blocks, (std::vector<BlockId>{0, 1}));

  // Exactly 8 tokens: only the first block may be reused (the last token must be computed).
  std::vector<int32_t> eight(prompt.begin(), prompt.begin() + 8);
  EXPECT_EQ(kv.find_prefix(eight).n_tokens, 4);

  // A different first block shares nothing, even when the second block's tokens are equal.
  std::vector<int32_t> other = prompt;
  other[0] = 7;
  EXPECT_EQ(kv.find_prefix(other).n_tokens, 0);
  EXPECT_EQ(kv.prefix_queries(), 10u + 8u + 10u);
  EXPECT_EQ(kv.prefix_hits(), 8u + 4u);
}

TEST(KvCacheManager, SharedPrefixBlocksAreReferencedNotCopied) {
  KvCacheManager kv(8, 4);
  std::vector<int32_t> p1 = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  SeqBlocks a, b;
  ASSERT_TRUE(kv.allocate(a, 0, 9));
  kv.cache_full_blocks(a, p1, 9);
  std::vector<int32_t> p2 = {1, 2, 3, 4, 5, 6, 7, 8, 50, 51};
  PrefixHit hit = kv.find_prefix(p2);
  ASSERT_EQ(hit.n_tokens, 8);
  ASSERT_TRUE(kv.allocate(b, hit.n_tokens, 2, hit));
  EXPECT_EQ(b.table, (std::vector<BlockId>{0, 1, 3}));
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  kv.free(a);
  EXPECT_EQ(kv.pool().ref_count(0), 1);
  EXPECT_EQ(kv.pool().free_list(), (std::vector<BlockId>{4, 5, 6, 7, 2}));
  kv.free(b);
  // b's tail first: 3, then 1, 0.
  EXPECT_EQ(kv.pool().free_list(), (std::vector<BlockId>{4, 5, 6, 7, 2, 3, 1, 0}));
}

TEST(KvCacheManager, AllocationFailsWithoutSideEffectsWhenThePoolIsShort) {
  KvCacheManager kv(2, 4);
  SeqBlocks a;
  EXPECT_FALSE(kv.allocate(a, 0, 9));
  EXPECT_TRUE(a.table.empty());
  EXPECT_EQ(kv.pool().n_free(), 2);
  EXPECT_TRUE(kv.allocate(a, 0, 8));
  EXPECT_FALSE(kv.allocate(a, 8, 1));
  EXPECT_EQ(a.table.size(), 2u);
}

TEST(KvCacheManager, CachedBlocksInTheFreeListCountAgainstCapacityWhenReused) {
  KvCacheManager kv(3, 2);
  std::vector<int32_t> p = {1, 2, 3, 4, 5};
  SeqBlocks a;
  ASSERT_TRUE(kv.allocate(a, 0, 5));
  kv.cache_full_blocks(a, p, 5);
  kv.free(a);  // free list: 2, 1, 0 with 0 and 1 cached
  PrefixHit hit = kv.find_prefix(p);
  ASSERT_EQ(hit.n_tokens, 4);
  SeqBlocks b;
  // 2 hit blocks come out of the free list and 1 more is needed: exactly the 3 free ones.
  ASSERT_TRUE(kv.allocate(b, 4, 1, hit));
  EXPECT_EQ(b.table, (std::vector<BlockId>{0, 1, 2}));
  EXPECT_EQ(kv.pool().n_free(), 0);
}
