// Paged KV storage: the tensors behind the BlockPool's block ids, and a per-sequence view of them.
//
// PagedKvStore owns one arena of n_blocks blocks; block b holds, for every layer, K and V for
// block_size consecutive positions: [n_blocks][n_layer][2 (K, V)][n_head_kv][block_size][head_dim] of
// the store's type (f16 or f32), so a sequence's block table maps its pages straight to arena blocks. SeqKvView
// implements model::KvCache over a block table, so Model::forward reads and writes a sequence's K/V
// where the scheduler put them. The store is shared by the engine thread only; views are short-lived, one per
// scheduled sequence per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/block_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace ignis::engine {

class PagedKvStore {
 public:
  // Throws ignis::Error when the arena cannot be allocated or kv_type is neither F16 nor F32.
  PagedKvStore(int32_t n_blocks, int64_t n_layer, int64_t kv_width, int32_t block_size, DType kv_type = DType::F16);

  static uint64_t bytes_per_block(int64_t n_layer, int64_t kv_width, int32_t block_size, DType kv_type) {
    return uint64_t(n_layer) * 2 * uint64_t(block_size) * uint64_t(kv_width) * model::kv_elem_bytes(kv_type);
  }

  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return block_size_; }
  int64_t n_layer() const { return n_layer_; }
  int64_t kv_width() const { return kv_width_; }
  DType kv_type() const { return kv_type_; }
  void* k(BlockId b, int64_t il) { return base(b, il); }
  void* v(BlockId b, int64_t il) { return base(b, il) + int64_t(block_size_) * kv_width_ * int64_t(elem_bytes_); }

 private:
  std::byte* base(BlockId b, int64_t il) {
    return data_.get() + ((int64_t(b) * n_layer_ + il) * 2) * int64_t(block_size_) * kv_width_ * int64_t(elem_bytes_);
  }
  int32_t n_blocks_;
  int64_t n_layer_;
  int64_t kv_width_;
  int32_t block_size_;
  DType kv_type_;
  size_t elem_bytes_;
  std::unique_ptr<std::byte[]> data_;
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
  DType kv_type() const override { return store_.kv_type(); }
  void* k_page(int64_t il, int64_t page) override { return store_.k(table_[page], il); }
  void* v_page(int64_t il, int64_t page) override { return store_.v(table_[page], il); }
  void advance(int64_t n) override { n_past_ += n; }

 private:
  PagedKvStore& store_;
  const std::vector<BlockId>& table_;
  int64_t n_past_;
};

}  // namespace ignis::engine
