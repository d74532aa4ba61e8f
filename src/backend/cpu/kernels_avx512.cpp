// AVX-512 kernels: the shared x86 bodies (vec_dot_x86.h) compiled with AVX512-VNNI int8 dots, plus
// 512-bit float kernels (AVX512-BF16 vdpbf16ps for bf16).
//
// NOTE: the quantized kernels stay 256 bits wide on purpose. Measured on Zen 4 (which splits 512-bit ops
// into two 256-bit halves), pairing two 32-element blocks per zmm register was ~10% slower than the
// 256-bit VNNI kernels for Q4_0 and Q8_0 (896x4864 matvec, 243 vs 209 us of CPU time): the extra
// inserts and scale shuffles outweigh the wider ops.

// GCC 12's AVX-512 headers trip -Wuninitialized inside their own helpers (_mm512_cvtph_ps,
// _mm512_reduce_add_ps use an intentionally undefined register); silence that false positive here only.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_dot_x86.h"

namespace ignis::cpu {
namespace {

// Float kernels at 512 bits, single-row = the NX = 1 instance of the multi-token form (weights loaded
// and converted once per group of tokens).
template <class T>
inline const T* row_at(const void* x, size_t x_stride, int t) {
  return reinterpret_cast<const T*>(static_cast<const uint8_t*>(x) + t * x_stride);
}

inline __mmask16 mask16(int64_t r) { return r >= 16 ? 0xffff : static_cast<__mmask16>((1u << r) - 1); }

template <int NX>
void avx512_dot_f32(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  const auto* a = static_cast<const float*>(w);
  __m512 acc0[NX], acc1[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 w0 = _mm512_loadu_ps(a + i), w1 = _mm512_loadu_ps(a + i + 16);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const float* b = row_at<float>(x, x_stride, t);
      acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(b + i), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(b + i + 16), acc1[t]);
    }
  }
  if (i < n) {  // masked tail, up to 31 elements
    const __mmask16 k0 = mask16(n - i), k1 = n - i > 16 ? mask16(n - i - 16) : 0;
    const __m512 w0 = _mm512_maskz_loadu_ps(k0, a + i), w1 = _mm512_maskz_loadu_ps(k1, a + i + 16);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const float* b = row_at<float>(x, x_stride, t);
      acc0[t] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(k0, b + i), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(w1, _mm512_maskz_loadu_ps(k1, b + i + 16), acc1[t]);
    }
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t]));
}

inline __m512 f16x16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

template <int NX>
void avx512_dot_f16(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  const auto* a = static_cast<const uint16_t*>(w);
  __m512 acc0[NX], acc1[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 w0 = f16x16(a + i), w1 = f16x16(a + i + 16);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const uint16_t* b = row_at<uint16_t>(x, x_stride, t);
      acc0[t] = _mm512_fmadd_ps(w0, f16x16(b + i), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(w1, f16x16(b + i + 16), acc1[t]);
    }
  }
  for (; i < n; i += 16) {  // 16 at a time, the last one masked
    const __mmask16 k = mask16(n - i);
    const __m512 w0 = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, a + i));
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const uint16_t* b = row_at<uint16_t>(x, x_stride, t);
      acc0[t] = _mm512_fmadd_ps(w0, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, b + i)), acc0[t]);
    }
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t]));
}

// vdpbf16ps: pairs of bf16 products (exact in f32) added into f32 lanes.
template <int NX>
void avx512_dot_bf16(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  const auto* a = static_cast<const uint16_t*>(w);
  __m512 acc0[NX], acc1[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(a + i), w1 = (__m512bh)_mm512_loadu_si512(a + i + 32);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const uint16_t* b = row_at<uint16_t>(x, x_stride, t);
      acc0[t] = _mm512_dpbf16_ps(acc0[t], w0, (__m512bh)_mm512_loadu_si512(b + i));
      acc1[t] = _mm512_dpbf16_ps(acc1[t], w1, (__m512bh)_mm512_loadu_si512(b + i + 32));
    }
  }
  while (i < n) {  // masked tail in chunks of up to 32 (zero padding adds 0 * 0)
    const int64_t r = n - i < 32 ? n - i : 32;
    const __mmask32 k = r == 32 ? 0xffffffffu : static_cast<__mmask32>((1u << r) - 1);
    const __m512bh w0 = (__m512bh)_mm512_maskz_loadu_epi16(k, a + i);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const uint16_t* b = row_at<uint16_t>(x, x_stride, t);
      acc0[t] = _mm512_dpbf16_ps(acc0[t], w0, (__m512bh)_mm512_maskz_loadu_epi16(k, b + i));
    }
    i += r;
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t]));
}

constexpr VecDotEntry kAvx512[] = {
    {DType::F32, single<avx512_dot_f32<1>>, avx512_dot_f32<kDotTokens>},
    {DType::F16, single<avx512_dot_f16<1>>, avx512_dot_f16<kDotTokens>},
    {DType::BF16, single<avx512_dot_bf16<1>>, avx512_dot_bf16<kDotTokens>},
    IGNIS_X86_QUANT_KERNELS,
};

constexpr ActQuantEntry kAvx512Act[] = {IGNIS_X86_ACT_QUANTIZERS};

}  // namespace

KernelTable avx512_kernels() { return {kAvx512, static_cast<int>(sizeof(kAvx512) / sizeof(kAvx512[0])), kAvx512Act, 3}; }

}  // namespace ignis::cpu
