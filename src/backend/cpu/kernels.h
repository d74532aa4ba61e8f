// Per-ISA dot-product kernels for CPU matmul, keyed by weight DType (GUIDE.md section 3).
//
// A weight row of type T is dotted with an activation row already converted to T's vec_dot_type
// (core/dtype.h: Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K for K-quants, F16/BF16/F32 for the
// float types). Each ISA file (kernels_scalar.cpp, kernels_avx2.cpp, kernels_avx512.cpp) exports one
// table of {type, vec_dot, optional multi-token vec_dot} plus, for SIMD ISAs, activation converters; a
// missing row means "no kernel for this type on this ISA" and dispatch falls back to the next ISA down.
// The scalar table covers every weight type with a to_float and is the reference twin every SIMD kernel
// is tested against (tests/backend/vec_dot_isa_test.cpp); the scalar twins themselves are checked
// against ggml's own vec_dot results (tests/quant/quant_golden_test.cpp).
//
// NOTE: scalar kernels use ggml's integer formulation (integer dot of the quants per block or
// sub-block, then one float multiply-add per block with the product of the scales); the SIMD kernels
// compute the same integers exactly and differ only in the order of the float accumulation.
// The float types' scalar kernels accumulate in double.
//
// Tables are immutable; the kernels are pure: thread-safe. An ISA's table must only be fetched after
// the CPU was checked to support that ISA (isa_supported).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ignis::cpu {

// Dot product of one weight row (n elements of the weight type) with one activation row (n elements
// of the weight type's vec_dot_type). n is a multiple of the weight type's block size.
using VecDotFn = float (*)(int64_t n, const void* w, const void* x);

// Tokens per multi-row dot: out[t] = vec_dot(n, w, x + t * x_stride) for t < kDotTokens, each weight
// block decoded once for all of them. Per token the result equals the same ISA's VecDotFn bit for bit.
inline constexpr int kDotTokens = 4;
using VecDotMultiFn = void (*)(int64_t n, const void* w, const void* x, size_t x_stride, float* out);

struct VecDotEntry {
  DType type;
  VecDotFn vec_dot;
  VecDotMultiFn vec_dot_multi = nullptr;  // optional (matmul falls back to vec_dot per token)
};

// A converter of f32 activations to an activation type (Q8_0, Q8_1, Q8_K). The scalar table's are the
// reference: ggml-cpu's run-time conversion on x86 (for Q8_0 / Q8_1 not the type's from_float in core,
// which is ggml's reference quantizer used for weights); the SIMD ones are byte-exact twins of them (for
// finite inputs), so the choice never changes a result.
struct ActQuantEntry {
  DType type;
  FromFloatFn from_float;
};

// kAvx2: AVX2, FMA, F16C, BMI2. kAvx512: also AVX-512 F/BW/VL/DQ/VNNI/BF16/VBMI and GFNI (Zen 4 and later,
// Sapphire Rapids and later).
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

struct KernelTable {
  const VecDotEntry* entries;
  int n_entries;
  const ActQuantEntry* act_quants = nullptr;
  int n_act_quants = 0;
};

KernelTable scalar_kernels();
KernelTable avx2_kernels();    // defined in kernels_avx2.cpp (compiled with AVX2 flags)
KernelTable avx512_kernels();  // defined in kernels_avx512.cpp (AVX-512 F/BW/VL/VNNI/BF16)

// True if this CPU can run `isa`'s kernels.
bool isa_supported(Isa isa);
// The highest ISA the environment allows (IGNIS_ISA=scalar|avx2; kAvx512 when unset). Every run-time
// choice of kernels stays at or under it: the products here, the model's elementwise and attention
// kernels (which take AVX-512 F/BW/VL/DQ without the rest of kAvx512's set).
Isa isa_cap();
// The best ISA this CPU supports, at most isa_cap().
Isa best_isa();
const char* isa_label(Isa isa);

// The kernels for weight type `t` on `isa` exactly (nullptr if that ISA has none for t or the CPU lacks it).
const VecDotEntry* find_kernels(DType t, Isa isa);
VecDotFn find_vec_dot(DType t, Isa isa);
// The kernels for `t` on the best ISA that has them (falls back to scalar); nullptr if none at all.
const VecDotEntry* best_kernels(DType t);
VecDotFn best_vec_dot(DType t);
// The activation converter for `act` on `isa` exactly (nullptr if none), and the best one available
// (down to the scalar table, then the from_float of the dtype table; nullptr if the type has none).
FromFloatFn find_act_quantizer(DType act, Isa isa);
FromFloatFn best_act_quantizer(DType act);

}  // namespace ignis::cpu
