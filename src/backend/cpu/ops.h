// CPU compute primitives used by the model layer.
//
// matmul is the hot path: y = x * W^T for a weight W stored row-major in any DType (a "row" is one
// output feature, shape[0] = n_in elements long, ggml order). Activations are f32; where the weight
// type's dot product consumes a quantized activation (vec_dot_type), x is quantized on the fly once
// per call. The ISA (scalar, AVX2, AVX-512) is picked at run time from CPU features.
// All functions are thread-safe; they use the given pool for parallelism.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace ignis::cpu {

// A weight matrix view: n_out rows of n_in elements of `type`, rows contiguous (row_bytes(type, n_in)).
struct WeightView {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t n_in = 0;   // ne0: row length
  int64_t n_out = 0;  // ne1: rows
  // True when data holds the block-interleaved layout of packed.h (made at load by PackedStore),
  // which matmul multiplies with its packed kernels. get_row needs an unpacked view.
  bool packed = false;
  // F16 on AMX (packed.h, f16_on_amx): data stays ggml's rows, and the packed copy PackedStore makes
  // in the background appears here once it is complete (null until then); matmul takes whichever
  // there is, with the same bits.
  const std::atomic<const void*>* repacked = nullptr;
  // With repacked, for a fused matrix (PackedStore::add_fused): its n_parts parts' own rows, in order,
  // which the products take one after another until the copy exists.
  const WeightView* parts = nullptr;
  int n_parts = 0;
};

// y[t, o] = sum_i x[t, i] * W[o, i]   for t < n_tokens, o < n_out.
// x: [n_tokens, n_in] f32 (row stride n_in); y: [n_tokens, n_out] f32 (row stride n_out).
void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tokens, float* y);

// The product of a fused [gate; up] matrix w (n_out = 2 h rows: gate's h, then up's h) with a gated
// linear unit applied as it is made: out[t, j] = fn(gate[t, j], up[t, j]) for j < h (out's row stride
// h), where fn(g, u, gb, ub, n, o) maps n elements of a row elementwise (gb, ub: the halves' biases
// at those columns, or null). The products' bits are matmul's, and fn sees them in slices of whole
// 16-row groups. It runs on packed weights (not on the rows of a weight whose copy is still being made,
// packed.h) when h is a multiple of 16; elsewhere it returns false and writes nothing.
// NOTE: the two halves of a group's outputs stay in the calling thread's cache until fn has combined
// them, instead of [n_tokens, 2 h] floats going to memory and back for a second pass.
using GluRowFn = void (*)(const float* g, const float* u, const float* gb, const float* ub, int64_t n, float* out);
bool matmul_glu(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tokens, float* out, GluRowFn fn,
                const float* gb, const float* ub);
// Dequantizes row `row` of w into dst[n_in] (embedding lookup); also from packed views of the types
// packed_rows_readable (packed.h) names.
void get_row(const WeightView& w, int64_t row, float* dst);

// Name of the kernel set picked for this CPU ("avx512", "avx2", "scalar").
const char* isa_name();

}  // namespace ignis::cpu
