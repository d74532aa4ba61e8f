#include "engine/paged_kv.h"

#include <new>

#include "core/error.h"

namespace ignis::engine {

PagedKvStore::PagedKvStore(int32_t n_blocks, int64_t n_layer, int64_t kv_width, int32_t block_size, DType kv_type)
    : n_blocks_(n_blocks), n_layer_(n_layer), kv_width_(kv_width), block_size_(block_size), kv_type_(kv_type),
      elem_bytes_(model::kv_elem_bytes(kv_type)) {
  if (n_blocks <= 0 || n_layer <= 0 || kv_width <= 0 || block_size <= 0)
    fail("KV cache: invalid geometry ({} blocks of {} tokens)", n_blocks, block_size);
  const uint64_t n = uint64_t(n_blocks) * bytes_per_block(n_layer, kv_width, block_size, kv_type);
  // NOTE: new[] without value-initialisation leaves pages untouched until used, so a large budget only
  // costs memory for blocks actually written.
  data_.reset(new (std::nothrow) std::byte[n]);
  if (!data_) fail("KV cache: cannot allocate {:.1f} MiB for {} blocks", double(n) / 1048576.0, n_blocks);
}

}  // namespace ignis::engine
