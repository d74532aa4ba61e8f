// Row kernels of elementwise_kernel.h with AVX-512: 16 floats per step, tails by masked loads and stores
// (the same instructions, so an element's result does not depend on its position in the row).
//
// NOTE (rounding): RMSNorm sums the squares in double like the portable kernel but in 16 lanes, so
// its scale may differ from the portable one in the last bit; the products (x * scale) * w round as
// there. SwiGLU uses exp512 (<= 2 ulp) instead of std::exp. RoPE uses explicit FMAs (a * c - b * s
// rounds once less than the portable formula); they are written as intrinsics, not left to the
// compiler's contraction, so the biased (fused QKV) and in-place calls round identically.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 false positives inside the AVX-512 headers
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cmath>

#include "model/elementwise_kernel.h"
#include "model/vec_math_avx512.h"

namespace ignis::model {

namespace {

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}

// x[i..i+16) + b[i..i+16) (b may be null) under mask m, zero outside it.
inline __m512 load_biased(__mmask16 m, const float* x, const float* b) {
  const __m512 v = _mm512_maskz_loadu_ps(m, x);
  return b ? _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b)) : v;
}

void rms_norm_row_avx512(const float* x, const float* w, int64_t n, float eps, float* y) {
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
    // A product of two floats is exact in double, so the FMA rounds only the sum.
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    acc0 = _mm512_fmadd_pd(lo, lo, acc0);
    acc1 = _mm512_fmadd_pd(hi, hi, acc1);
  }
  const double ss = _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
  const __m512 scale = _mm512_set1_ps(static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps)));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_mul_ps(v, scale), _mm512_maskz_loadu_ps(m, w + i)));
  }
}

void swiglu_row_avx512(const float* g, const float* u, const float* gb, const float* ub, int64_t n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 z = load_biased(m, g + i, gb ? gb + i : nullptr);
    const __m512 v = load_biased(m, u + i, ub ? ub + i : nullptr);
    const __m512 e = simd::exp512(_mm512_xor_ps(z, sign));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_div_ps(z, _mm512_add_ps(one, e)), v));
  }
}

// Pairs (i, i + half): both halves are contiguous, so 16 pairs per step.
void rope_neox(const RopeRow& r, const float* s, const float* b, float* d) {
  const int64_t half = r.n_rot / 2;
  for (int64_t i = 0; i < half; i += 16) {
    const __mmask16 m = tail_mask(half - i);
    const __m512 x0 = load_biased(m, s + i, b ? b + i : nullptr);
    const __m512 x1 = load_biased(m, s + half + i, b ? b + half + i : nullptr);
    const __m512 c = _mm512_maskz_loadu_ps(m, r.cos + i);
    const __m512 sn = _mm512_maskz_loadu_ps(m, r.sin + i);
    _mm512_mask_storeu_ps(d + i, m, _mm512_fmsub_ps(x0, c, _mm512_mul_ps(x1, sn)));
    _mm512_mask_storeu_ps(d + half + i, m, _mm512_fmadd_ps(x0, sn, _mm512_mul_ps(x1, c)));
  }
}

// Pairs (2i, 2i + 1): 8 pairs per step; cos/sin of pair i go to both of its lanes, and the partner of
// each lane comes from swapping the lanes of every pair.
void rope_normal(const RopeRow& r, const float* s, const float* b, float* d) {
  const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  for (int64_t i = 0; i < r.n_rot; i += 16) {
    const __mmask16 m = tail_mask(r.n_rot - i);
    const __mmask8 mh = static_cast<__mmask8>(tail_mask((r.n_rot - i) / 2));
    const __m512 x = load_biased(m, s + i, b ? b + i : nullptr);
    const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mh, r.cos + i / 2)));
    const __m512 sn = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mh, r.sin + i / 2)));
    const __m512 swapped = _mm512_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1));
    // Even lanes: a c - b s; odd lanes: b c + a s.
    _mm512_mask_storeu_ps(d + i, m, _mm512_fmaddsub_ps(x, c, _mm512_mul_ps(swapped, sn)));
  }
}

void rope_heads_avx512(const RopeRow& r, const float* src, const float* bias, int64_t n_heads, float* dst) {
  for (int64_t h = 0; h < n_heads; ++h) {
    const float* s = src + h * r.head_dim;
    const float* b = bias ? bias + h * r.head_dim : nullptr;
    float* d = dst + h * r.head_dim;
    if (r.neox) {
      rope_neox(r, s, b, d);
    } else {
      rope_normal(r, s, b, d);
    }
    if (d == s && !b) continue;  // the unrotated dims are already in place
    for (int64_t i = r.n_rot; i < r.head_dim; i += 16) {
      const __mmask16 m = tail_mask(r.head_dim - i);
      _mm512_mask_storeu_ps(d + i, m, load_biased(m, s + i, b ? b + i : nullptr));
    }
  }
}

void f16_row_avx512(const float* x, int64_t n, uint16_t* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
  }
}

}  // namespace

const ElementwiseKernels& elementwise_kernels_avx512() {
  static const ElementwiseKernels k{rms_norm_row_avx512, swiglu_row_avx512, rope_heads_avx512, f16_row_avx512};
  return k;
}

void exp_avx512(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, simd::exp512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

}  // namespace ignis::model
