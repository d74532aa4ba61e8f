// Row kernels of the elementwise blocks (blocks.h: rms_norm, swiglu_ffn, RopeTable, qkv_rope, kv_store):
// RMSNorm of one row, SiLU(gate) * up of one row, RoPE of the heads of one token, a row rounded to f16. Each has a portable version (the
// plain formula, the reference the others are tested against), an AVX2 + FMA one and an AVX-512 one;
// elementwise_kernels() picks the set once for the CPU it runs on.
//
// NOTE (batch invariance): a kernel's result for an element depends only on that element's inputs (SwiGLU,
// RoPE) or its row (RMSNorm), never on where the row or element sits in a batch: the vector kernels cover
// tails with masked loads and stores running the same instructions, so callers may split work anywhere.
//
// Pure functions over caller-owned memory: thread-safe for distinct outputs.
#pragma once

#include <cstdint>

namespace ignis::model {

// y = x / sqrt(mean(x^2) + eps) * w over one row of n (sum of squares in double); y may alias x.
using RmsNormRowFn = void (*)(const float* x, const float* w, int64_t n, float eps, float* y);

// out[i] = silu(g[i] + gb[i]) * (u[i] + ub[i]), silu(z) = z / (1 + e^-z); gb, ub may be null (no bias).
// out may alias g or u.
using SwigluRowFn = void (*)(const float* g, const float* u, const float* gb, const float* ub, int64_t n,
                             float* out);

// The rotation of one token: its cos/sin per frequency and the head layout.
struct RopeRow {
  const float* cos = nullptr;  // [n_rot/2]
  const float* sin = nullptr;  // [n_rot/2]
  int64_t head_dim = 0;
  int64_t n_rot = 0;           // rotated dims per head (the first n_rot), even
  bool neox = false;           // false: pairs (2i, 2i+1); true: pairs (i, i + n_rot/2)
};
// dst = RoPE(src + bias) for n_heads heads of head_dim (bias: [n_heads * head_dim] or null; dims from
// n_rot on are copied). dst may equal src.
using RopeHeadsFn = void (*)(const RopeRow& r, const float* src, const float* bias, int64_t n_heads, float* dst);

// y[i] = x[i] rounded to f16 (IEEE half bits), to nearest even (core/fp16.h f32_to_f16; the F16C
// conversions round the same way).
using F16RowFn = void (*)(const float* x, int64_t n, uint16_t* y);

struct ElementwiseKernels {
  RmsNormRowFn rms_norm_row;
  SwigluRowFn swiglu_row;
  RopeHeadsFn rope_heads;
  F16RowFn f16_row;
};

// The kernels for this CPU: AVX-512 when it has AVX-512 F/BW/VL/DQ, else AVX2 when it has AVX2, FMA
// and F16C, else portable; never above cpu::isa_cap() (IGNIS_ISA=avx2 takes AVX2, =scalar portable).
const ElementwiseKernels& elementwise_kernels();
const ElementwiseKernels& elementwise_kernels_portable();
const ElementwiseKernels& elementwise_kernels_avx2();    // call only when elementwise_avx2_supported()
const ElementwiseKernels& elementwise_kernels_avx512();  // call only when elementwise_avx512_supported()
bool elementwise_avx2_supported();
bool elementwise_avx512_supported();

// y[i] = e^x[i] by simd::exp512 (vec_math_avx512.h; needs AVX-512) or by the AVX2 kernels' exp256
// (needs AVX2 and FMA), for tests of those functions.
void exp_avx512(const float* x, int64_t n, float* y);
void exp_avx2(const float* x, int64_t n, float* y);

}  // namespace ignis::model
