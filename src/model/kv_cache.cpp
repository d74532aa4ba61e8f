#include "model/kv_cache.h"

#include <unistd.h>

#include <cassert>
#include <new>

#include "core/error.h"

namespace ignis::model {

namespace {

uint64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t{1} << 40;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

}  // namespace

size_t kv_elem_bytes(DType kv_type) {
  if (kv_type == DType::F16) return 2;
  if (kv_type == DType::F32) return 4;
  fail("KV cache: type {} is not supported (f16 or f32)", dtype_name(kv_type));
}

DType parse_kv_type(const std::string& name) {
  if (name == "f16") return DType::F16;
  if (name == "f32") return DType::F32;
  fail("KV cache type '{}' is not supported: use f16 or f32", name);
}

DenseKvCache::DenseKvCache(int64_t n_layer, int64_t kv_width, int64_t n_ctx, DType kv_type)
    : n_layer_(n_layer), kv_width_(kv_width), n_ctx_(n_ctx), kv_type_(kv_type), elem_bytes_(kv_elem_bytes(kv_type)) {
  if (n_ctx <= 0) fail("KV cache: context size {} must be positive", n_ctx);
  constexpr int64_t kMaxCtx = int64_t{1} << 24;
  if (n_ctx > kMaxCtx) fail("KV cache: context size {} is larger than the maximum {}", n_ctx, kMaxCtx);
  const double bytes = 2.0 * static_cast<double>(n_layer) * static_cast<double>(kv_width) *
                       static_cast<double>(n_ctx) * static_cast<double>(elem_bytes_);
  const double limit = static_cast<double>(physical_memory_bytes());
  if (bytes > limit) {
    fail("KV cache: context size {} needs {:.1f} GiB, more than this machine's {:.1f} GiB of memory", n_ctx,
         bytes / (1ull << 30), limit / (1ull << 30));
  }
  const size_t n = 2 * static_cast<size_t>(n_layer) * static_cast<size_t>(kv_width) * static_cast<size_t>(n_ctx) * elem_bytes_;
  try {
    data_.reset(new std::byte[n]);  // left uninitialised: positions are written before they are read
  } catch (const std::bad_alloc&) {
    fail("KV cache: cannot allocate {:.1f} GiB for context size {}", bytes / (1ull << 30), n_ctx);
  }
}

void DenseKvCache::truncate(int64_t n) {
  if (n < 0 || n > n_past_) fail("KV cache: cannot truncate to {} tokens, it holds {}", n, n_past_);
  n_past_ = n;
}

void* DenseKvCache::k_page(int64_t il, int64_t page) {
  assert(il >= 0 && il < n_layer_ && page == 0);
  return data_.get() + static_cast<size_t>(2 * il) * n_ctx_ * kv_width_ * elem_bytes_;
}

void* DenseKvCache::v_page(int64_t il, int64_t page) {
  assert(il >= 0 && il < n_layer_ && page == 0);
  return data_.get() + static_cast<size_t>(2 * il + 1) * n_ctx_ * kv_width_ * elem_bytes_;
}

void DenseKvCache::advance(int64_t n) {
  assert(n >= 0 && n_past_ + n <= n_ctx_);
  n_past_ += n;
}

}  // namespace ignis::model
