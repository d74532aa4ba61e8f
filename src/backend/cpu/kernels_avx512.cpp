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

#include <cstring>

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

// Q8_0 activations with 512-bit vectors: the AVX2 quantizer's operations on one block in two registers
// (max of |x| ignoring NaN lanes, then x * (127 / amax) rounded to even; the saturating narrow gives what
// the AVX2 packs give, also -128 for NaN), so the bytes are the scalar twin's.
// NOTE: the AVX2 quantizer was 3.0% of Qwen2.5-0.5B Q4_0 pp512 at 2 threads on a 2-core Xeon (perf
// record); with this one, alternated 3 times, 1237-1284 -> 1267-1300 t/s.
void act_q8_0_avx512(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const __m512 v0 = _mm512_loadu_ps(src), v1 = _mm512_loadu_ps(src + 16);
    const __m512 m = _mm512_max_ps(_mm512_andnot_ps(sign, v1), _mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_setzero_ps()));
    const float amax = _mm512_reduce_max_ps(m);
    const float d = amax / 127;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    b[i].d = f2h(d);
    const __m512 vid = _mm512_set1_ps(id);
    constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b[i].qs), _mm512_cvtsepi32_epi8(_mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, vid), kRne)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b[i].qs + 16),
                     _mm512_cvtsepi32_epi8(_mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, vid), kRne)));
  }
}

// Q8_K activations likewise (the AVX2 act_q8_k's operations, 16 elements a register: one register is one
// 16-element group of bsums). The group sums come from the stored bytes: vpsadbw of the bytes + 128
// against zero sums each half group, so a group's sum is its two halves less 16 x 128. (The bytes are
// the int32 quants themselves: |x * iscale| <= 127 for every finite x of the block.)
// NOTE: the AVX2 quantizer was 3.4% of Qwen2.5-1.5B Q4_K_M pp512 at 2 threads on a 2-core Xeon (perf
// record), this one 2.5%; pp512 at 1 thread, alternated 3 times, 200-207 -> 206-212 t/s (2 threads
// within the noise).
void act_q8_k_avx512(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  constexpr int kGroups = kQKK / 16;
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    __m512 v[kGroups];
    __m512 m = _mm512_setzero_ps();
    IGNIS_UNROLL for (int k = 0; k < kGroups; ++k) {
      v[k] = _mm512_loadu_ps(src + 16 * k);
      m = _mm512_max_ps(_mm512_andnot_ps(sign, v[k]), m);  // NaN lanes keep m, as the scalar max does
    }
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      std::memset(&b[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    // The signed value of the first element reaching amax (the scalar scan keeps the first).
    const __m512 vmax = _mm512_set1_ps(amax);
    int first = 0;
    for (int k = 0; k < kGroups; ++k) {
      const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, v[k]), vmax, _CMP_EQ_OQ);
      if (hit) {
        first = 16 * k + __builtin_ctz(static_cast<unsigned>(hit));
        break;
      }
    }
    const float iscale = -127.f / src[first];
    const __m512 vs = _mm512_set1_ps(iscale);
    const __m512i lim = _mm512_set1_epi32(127), bias = _mm512_set1_epi8(static_cast<char>(0x80));
    constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    IGNIS_UNROLL for (int k = 0; k < kGroups; k += 4) {
      __m128i g[4];
      IGNIS_UNROLL for (int j = 0; j < 4; ++j)
        g[j] = _mm512_cvtsepi32_epi8(_mm512_min_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(vs, v[k + j]), kRne), lim));
      const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(g[1], g[0])), _mm256_set_m128i(g[3], g[2]), 1);
      _mm512_storeu_si512(b[i].qs + 16 * k, q);
      alignas(64) int64_t half[8];
      _mm512_store_si512(half, _mm512_sad_epu8(_mm512_xor_si512(q, bias), _mm512_setzero_si512()));
      IGNIS_UNROLL for (int j = 0; j < 4; ++j) b[i].bsums[k + j] = static_cast<int16_t>(half[2 * j] + half[2 * j + 1] - 16 * 128);
    }
    b[i].d = 1 / iscale;
  }
}

constexpr ActQuantEntry kAvx512Act[] = {
    {DType::Q8_0, act_q8_0_avx512}, {DType::Q8_1, act_q8_1}, {DType::Q8_K, act_q8_k_avx512}};

}  // namespace

KernelTable avx512_kernels() { return {kAvx512, static_cast<int>(sizeof(kAvx512) / sizeof(kAvx512[0])), kAvx512Act, 3}; }

}  // namespace ignis::cpu
