// DenseKvCache: the single-sequence KV cache, one page holding all n_ctx positions of every layer.
//
// Layout per layer: K [n_ctx, kv_width] f32 and V [n_ctx, kv_width] f32, kv_width = n_head_kv * head_dim
// (see KvCache in model.h for the page interface this implements). The cache owns its memory; pages
// are allocated untouched so a large n_ctx costs memory only for positions actually written.
// Not thread-safe: one forward() at a time per cache.
#pragma once

#include <cstdint>
#include <memory>

#include "model/model.h"

namespace ignis::model {

class DenseKvCache final : public KvCache {
 public:
  // Throws Error when n_ctx <= 0 or the cache would need more memory than the machine has.
  DenseKvCache(int64_t n_layer, int64_t kv_width, int64_t n_ctx);

  int64_t n_ctx() const override { return n_ctx_; }
  int64_t n_past() const override { return n_past_; }
  void truncate(int64_t n) override;

  int64_t n_layer() const override { return n_layer_; }
  int64_t kv_width() const override { return kv_width_; }
  int64_t page_size() const override { return n_ctx_; }
  float* k_page(int64_t il, int64_t page) override;
  float* v_page(int64_t il, int64_t page) override;
  void advance(int64_t n) override;

 private:
  int64_t n_layer_;
  int64_t kv_width_;
  int64_t n_ctx_;
  int64_t n_past_ = 0;
  std::unique_ptr<float[]> data_;  // [n_layer][2 (K, V)][n_ctx][kv_width]
};

}  // namespace ignis::model
