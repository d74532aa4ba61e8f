// CPU matmul / get_row.
//
// NOTE (matmul design): activations are converted once per call to the weight type's vec_dot_type
// (shared by all threads), then the output is cut into tiles of kRowTile weight rows x a token block
// sized so the block's converted activations stay in L2. Threads pull tiles from an atomic counter
// (balances the 2 cores even when one is busy elsewhere). Inside a tile each weight row is loaded
// from memory once and reused for every token of the block: for prefill this is a matrix-matrix
// product with weights streamed once per token block, not n_tokens matrix-vector products. Where the
// type has a multi-token kernel, groups of kDotTokens tokens also share each decoded weight block in
// registers.
#include "backend/cpu/ops.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/error.h"

namespace ignis::cpu {
namespace {

constexpr int64_t kRowTile = 16;
constexpr size_t kActCacheBytes = 256 * 1024;
constexpr int kMaxTypeId = 64;

// Best activation converter per raw type id, resolved once.
const std::array<FromFloatFn, kMaxTypeId>& act_table() {
  static const std::array<FromFloatFn, kMaxTypeId> t = [] {
    std::array<FromFloatFn, kMaxTypeId> r{};
    for (uint32_t id = 0; id < kMaxTypeId; ++id)
      if (dtype_traits(id)) r[id] = best_act_quantizer(static_cast<DType>(id));
    return r;
  }();
  return t;
}

// Best kernels per raw type id, resolved once.
const std::array<const VecDotEntry*, kMaxTypeId>& kernel_table() {
  static const std::array<const VecDotEntry*, kMaxTypeId> t = [] {
    std::array<const VecDotEntry*, kMaxTypeId> r{};
    for (uint32_t id = 0; id < kMaxTypeId; ++id)
      if (dtype_traits(id)) r[id] = best_kernels(static_cast<DType>(id));
    return r;
  }();
  return t;
}

void check_weight(const WeightView& w, const DTypeTraits*& tr) {
  tr = dtype_traits(w.type);
  if (!tr) fail("matmul: unknown weight type id {}", static_cast<uint32_t>(w.type));
  if (w.n_in <= 0 || w.n_out <= 0 || w.n_in % tr->block_size != 0)
    fail("matmul: weight of type {} has shape [{}, {}]; rows must be a positive multiple of {}", tr->name, w.n_in,
         w.n_out, tr->block_size);
  if (!w.data) fail("matmul: weight of type {} has no data", tr->name);
}

}  // namespace

const char* isa_name() { return isa_label(best_isa()); }

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tokens, float* y) {
  if (n_tokens <= 0) return;
  const DTypeTraits* tr = nullptr;
  check_weight(w, tr);
  const uint32_t id = static_cast<uint32_t>(w.type);
  const VecDotEntry* kern = id < kMaxTypeId ? kernel_table()[id] : nullptr;
  if (!kern) fail("matmul: no CPU kernel for weight type {}", tr->name);
  const VecDotFn dot = kern->vec_dot;
  const VecDotMultiFn dot_multi = kern->vec_dot_multi;

  // Activations in the weight type's vec_dot_type: [n_tokens, act_row] bytes.
  const DTypeTraits* act = dtype_traits(tr->vec_dot_type);
  const void* xq = x;
  size_t act_row = static_cast<size_t>(w.n_in) * sizeof(float);
  thread_local std::vector<uint8_t> act_buf;
  if (act->type != DType::F32) {
    const FromFloatFn convert = act_table()[static_cast<uint32_t>(act->type)];
    if (!convert) fail("matmul: no converter for activation type {}", act->name);
    act_row = row_bytes(act->type, w.n_in);
    act_buf.resize(act_row * static_cast<size_t>(n_tokens));
    uint8_t* dst = act_buf.data();
    if (n_tokens == 1) {
      convert(x, dst, w.n_in);
    } else {
      pool.run([&](int ith, int nth) {
        int64_t t0, t1;
        ThreadPool::split(n_tokens, ith, nth, 1, &t0, &t1);
        for (int64_t t = t0; t < t1; ++t) convert(x + t * w.n_in, dst + t * act_row, w.n_in);
      });
    }
    xq = dst;
  }

  const size_t w_row = row_bytes(w.type, w.n_in);
  const auto* wb = static_cast<const uint8_t*>(w.data);
  const auto* xb = static_cast<const uint8_t*>(xq);
  const int64_t tok_block = std::clamp<int64_t>(static_cast<int64_t>(kActCacheBytes / act_row), 1, n_tokens);
  const int64_t n_row_tiles = (w.n_out + kRowTile - 1) / kRowTile;
  const int64_t n_tok_blocks = (n_tokens + tok_block - 1) / tok_block;
  const int64_t n_tiles = n_row_tiles * n_tok_blocks;
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    for (;;) {
      const int64_t tile = next.fetch_add(1, std::memory_order_relaxed);
      if (tile >= n_tiles) break;
      // Token block is the outer index so consecutive tiles share activations in cache.
      const int64_t tb = tile / n_row_tiles, rt = tile % n_row_tiles;
      const int64_t r0 = rt * kRowTile, r1 = std::min(w.n_out, r0 + kRowTile);
      const int64_t t0 = tb * tok_block, t1 = std::min(n_tokens, t0 + tok_block);
      int64_t t = t0;
      if (dot_multi) {
        // kDotTokens tokens at a time: each weight block is decoded once per group of tokens.
        float out[kDotTokens];
        for (; t + kDotTokens <= t1; t += kDotTokens) {
          for (int64_t r = r0; r < r1; ++r) {
            dot_multi(w.n_in, wb + r * w_row, xb + t * act_row, act_row, out);
            for (int j = 0; j < kDotTokens; ++j) y[(t + j) * w.n_out + r] = out[j];
          }
        }
      }
      for (; t < t1; ++t) {
        const uint8_t* xr = xb + t * act_row;
        float* yr = y + t * w.n_out;
        for (int64_t r = r0; r < r1; ++r) yr[r] = dot(w.n_in, wb + r * w_row, xr);
      }
    }
  });
}

void get_row(const WeightView& w, int64_t row, float* dst) {
  const DTypeTraits* tr = dtype_traits(w.type);
  if (!tr || !tr->to_float) fail("get_row: weight type {} cannot be converted to f32", dtype_name(w.type));
  if (row < 0 || row >= w.n_out) fail("get_row: row {} out of range [0, {})", row, w.n_out);
  if (w.n_in % tr->block_size != 0)
    fail("get_row: row length {} is not a multiple of {}'s block size {}", w.n_in, tr->name, tr->block_size);
  const size_t rb = row_bytes(w.type, w.n_in);
  tr->to_float(static_cast<const uint8_t*>(w.data) + row * rb, dst, w.n_in);
}

}  // namespace ignis::cpu
