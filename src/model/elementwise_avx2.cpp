// Row kernels of elementwise_kernel.h with AVX2 + FMA, for CPUs without AVX-512: the AVX-512 kernels'
// arithmetic on 8 floats per step, tails by maskload / maskstore (masked-off lanes are not touched).
//
// NOTE (rounding): as in elementwise_avx512.cpp; simd::exp256 (vec_math_avx2.h) is exp512's algorithm.
#include <immintrin.h>

#include <cmath>

#include "model/elementwise_kernel.h"
#include "model/vec_math_avx2.h"

namespace ignis::model {

namespace {

// Lanes [0, left) set (all when left >= 8).
inline __m256i tail_mask(int64_t left) {
  const int n = left >= 8 ? 8 : static_cast<int>(left);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline __m256 load_biased(__m256i m, const float* x, const float* b) {
  const __m256 v = _mm256_maskload_ps(x, m);
  return b ? _mm256_add_ps(v, _mm256_maskload_ps(b, m)) : v;
}

void rms_norm_row_avx2(const float* x, const float* w, int64_t n, float eps, float* y) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = _mm256_maskload_ps(x + i, tail_mask(n - i));
    // A product of two floats is exact in double, so the FMA rounds only the sum.
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    acc0 = _mm256_fmadd_pd(lo, lo, acc0);
    acc1 = _mm256_fmadd_pd(hi, hi, acc1);
  }
  const __m256d acc = _mm256_add_pd(acc0, acc1);
  const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(acc), _mm256_extractf128_pd(acc, 1));
  const double ss = _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
  const __m256 scale = _mm256_set1_ps(static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps)));
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, m);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(_mm256_mul_ps(v, scale), _mm256_maskload_ps(w + i, m)));
  }
}

void swiglu_row_avx2(const float* g, const float* u, const float* gb, const float* ub, int64_t n, float* out) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    const __m256 z = load_biased(m, g + i, gb ? gb + i : nullptr);
    const __m256 v = load_biased(m, u + i, ub ? ub + i : nullptr);
    const __m256 e = simd::exp256(_mm256_xor_ps(z, sign));
    _mm256_maskstore_ps(out + i, m, _mm256_mul_ps(_mm256_div_ps(z, _mm256_add_ps(one, e)), v));
  }
}

void rope_neox(const RopeRow& r, const float* s, const float* b, float* d) {
  const int64_t half = r.n_rot / 2;
  for (int64_t i = 0; i < half; i += 8) {
    const __m256i m = tail_mask(half - i);
    const __m256 x0 = load_biased(m, s + i, b ? b + i : nullptr);
    const __m256 x1 = load_biased(m, s + half + i, b ? b + half + i : nullptr);
    const __m256 c = _mm256_maskload_ps(r.cos + i, m);
    const __m256 sn = _mm256_maskload_ps(r.sin + i, m);
    _mm256_maskstore_ps(d + i, m, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, sn)));
    _mm256_maskstore_ps(d + half + i, m, _mm256_fmadd_ps(x0, sn, _mm256_mul_ps(x1, c)));
  }
}

// Pairs (2i, 2i + 1): 4 pairs per step (see rope_normal in elementwise_avx512.cpp).
void rope_normal(const RopeRow& r, const float* s, const float* b, float* d) {
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  for (int64_t i = 0; i < r.n_rot; i += 8) {
    const __m256i m = tail_mask(r.n_rot - i);
    const __m128i mh = _mm256_castsi256_si128(tail_mask((r.n_rot - i) / 2));
    const __m256 x = load_biased(m, s + i, b ? b + i : nullptr);
    const __m256 c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_maskload_ps(r.cos + i / 2, mh)), dup);
    const __m256 sn = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_maskload_ps(r.sin + i / 2, mh)), dup);
    const __m256 swapped = _mm256_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1));
    // Even lanes: a c - b s; odd lanes: b c + a s.
    _mm256_maskstore_ps(d + i, m, _mm256_fmaddsub_ps(x, c, _mm256_mul_ps(swapped, sn)));
  }
}

void rope_heads_avx2(const RopeRow& r, const float* src, const float* bias, int64_t n_heads, float* dst) {
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
    for (int64_t i = r.n_rot; i < r.head_dim; i += 8) {
      const __m256i m = tail_mask(r.head_dim - i);
      _mm256_maskstore_ps(d + i, m, load_biased(m, s + i, b ? b + i : nullptr));
    }
  }
}

void f16_row_avx2(const float* x, int64_t n, uint16_t* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  if (i == n) return;
  alignas(32) float tmp[8] = {};
  alignas(16) uint16_t out[8];
  for (int64_t j = i; j < n; ++j) tmp[j - i] = x[j];
  _mm_store_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(_mm256_load_ps(tmp), _MM_FROUND_TO_NEAREST_INT));
  for (int64_t j = i; j < n; ++j) y[j] = out[j - i];
}

}  // namespace

const ElementwiseKernels& elementwise_kernels_avx2() {
  static const ElementwiseKernels k{rms_norm_row_avx2, swiglu_row_avx2, rope_heads_avx2, f16_row_avx2};
  return k;
}

void exp_avx2(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, simd::exp256(_mm256_maskload_ps(x + i, m)));
  }
}

}  // namespace ignis::model
