// Paged KV storage: the tensors behind the BlockPool's block ids, and a per-sequence view of them.
//
// PagedKvStore owns one arena of n_blocks blocks; block b holds, for every layer, K and V for
// block_size consecutive positions: [n_blocks][n_layer][2 (K, V)][block_size][kv_width] f32, so a
// sequence's block table maps its pages straight to arena blocks. SeqKvView implements
// model::KvCache over a block table, so Model::forward reads and writes a sequence's K/V where the
// scheduler put them. The store is shared by the engine thread only; views are short-lived, one per
// scheduled sequence per step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/block_pool.h"
#include "model/model.h"

namespace ignis::engine {

class PagedKvStore {
 public:
  // Throws ignis::Error when the arena cannot be allocated.
  PagedKvStore(int32_t n_blocks, int64_t n_layer, int64_t kv_width, int32_t block_size);

  static uint64_t bytes_per_block(int64_t n_layer, int64_t kv_width, int32_t block_size) {
    return uint64_t(n_layer) * 2 * uint64_t(block_size) * uint64_t(kv_width) * sizeof(float);
  }

  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return block_size_; }
  int64_t n_layer() const { return n_layer_; }
  int64_t kv_width() const { return kv_width_; }
  float* k(BlockId b, int64_t il) { return base(b, il); }
  float* v(BlockId b, int64_t il) { return base(b, il) + int64_t(block_size_) * kv_width_; }

 private:
  float* base(BlockId b, int64_t il) {
    return data_.get() + ((int64_t(b) * n_layer_ + il) * 2) * int64_t(block_size_) * kv_width_;
  }
  int32_t n_blocks_;
  int64_t n_layer_;
  int64_t kv_width_;
  int32_t block_size_;
  std::unique_ptr<float[]> data_;
};

class SeqKvView final : public model::KvCache {
 public:
  // `table` must cover at least n_past + the tokens the next forward() adds.
  SeqKvView(PagedKvStore& store, const std::vector<BlockId>& table, int64_t n_past)
      : store_(store), table_(table), n_past_(n_past) {}

  int64_t n_ctx() const override { return int64_t(table_.size()) * store_.block_size(); }
  int64_t n_past() const override { return n_past_; }
  void truncate(int64_t n) override { n_past_ = n < n_past_ ? n : n_past_; }
  int64_t n_layer() const override { return store_.n_layer(); }
  int64_t kv_width() const override { return store_.kv_width(); }
  int64_t page_size() const override { return store_.block_size(); }
  float* k_page(int64_t il, int64_t page) override { return store_.k(table_[page], il); }
  float* v_page(int64_t il, int64_t page) override { return store_.v(table_[page], il); }
  void advance(int64_t n) override { n_past_ += n; }

 private:
  PagedKvStore& store_;
  const std::vector<BlockId>& table_;
  int64_t n_past_;
};

}  // namespace ignis::engine
