// DenseKvCache: the single-sequence KV cache, one page holding all n_ctx positions of every layer.
//
// Layout per layer: K [n_head_kv, n_ctx, head_dim] and V [n_head_kv, n_ctx, head_dim] of the cache's type
// (f16 or f32) (see KvCache in model.h for the page interface this implements). The cache owns its memory; pages
// are allocated untouched so a large n_ctx costs memory only for positions actually written.
// Not thread-safe: one forward() at a time per cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/model.h"

namespace ignis::model {

// Bytes of one K/V element of a cache type (2 for F16, 4 for F32); throws Error for any other type.
size_t kv_elem_bytes(DType kv_type);
// "f16" or "f32" (the names llama.cpp's --cache-type-k takes) -> the type; throws Error naming the value
// otherwise.
DType parse_kv_type(const std::string& name);

class DenseKvCache final : public KvCache {
 public:
  // Throws Error when n_ctx <= 0, the cache would need more memory than the machine has, or kv_type is
  // neither F16 nor F32.
  DenseKvCache(int64_t n_layer, int64_t kv_width, int64_t n_ctx, DType kv_type = DType::F16);

  int64_t n_ctx() const override { return n_ctx_; }
  int64_t n_past() const override { return n_past_; }
  void truncate(int64_t n) override;

  int64_t n_layer() const override { return n_layer_; }
  int64_t kv_width() const override { return kv_width_; }
  int64_t page_size() const override { return n_ctx_; }
  DType kv_type() const override { return kv_type_; }
  void* k_page(int64_t il, int64_t page) override;
  void* v_page(int64_t il, int64_t page) override;
  void advance(int64_t n) override;

 private:
  int64_t n_layer_;
  int64_t kv_width_;
  int64_t n_ctx_;
  int64_t n_past_ = 0;
  DType kv_type_;
  size_t elem_bytes_;
  std::unique_ptr<std::byte[]> data_;  // [n_layer][2 (K, V)][n_head_kv][n_ctx][head_dim]
};

}  // namespace ignis::model
