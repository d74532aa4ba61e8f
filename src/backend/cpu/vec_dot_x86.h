// x86 SIMD vec_dot kernel bodies, written once with 256-bit AVX2 intrinsics and compiled twice:
// by kernels_avx2.cpp (AVX2 + FMA + F16C) and by kernels_avx512.cpp, where the int8 dot primitive becomes
// AVX512-VNNI's vpdpbusd. Include ONLY from a *_avx2.cpp / *_avx512.cpp file (ISA flags); everything here
// has internal linkage so the two copies never meet.
//
// Each kernel computes exactly the integers its scalar twin in kernels_scalar.cpp computes (same block
// decode, integer dot per block or sub-block); only the float accumulation order differs.
//
// NOTE: code here must not call inline functions with external linkage from other headers (core/fp16.h,
// the helpers in core/quant_blocks.h): an out-of-line copy compiled with AVX-512 flags could be the one
// the linker keeps for the scalar code too, and the binary would then fault on AVX2-only CPUs. Helpers
// needed here are re-declared in this file's anonymous namespace.
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "vec_dot_x86.h needs AVX2, FMA and F16C (include it from a *_avx2.cpp or *_avx512.cpp file)"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/quant_blocks.h"

// Loops over the NX tokens of a multi-token kernel must be unrolled so the per-token accumulators live in
// registers; GCC's -O2 keeps them in memory otherwise (a store-forwarding chain per FMA).
#define IGNIS_UNROLL _Pragma("GCC unroll 8")

namespace ignis::cpu {
namespace {

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

inline float bf2f(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Unsigned 8-bit u (<= 128) times signed 8-bit s (> -128), summed in groups of 4 -> 8 x int32. The
// maddubs form never saturates for these operands (|pair sum| <= 2 * 128 * 127 < 32768). Signed x signed
// products use u = |x|, s = sign(y, x).
inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 16 bytes of nibbles -> 32 bytes: elements 0..15 (low nibbles) then 16..31 (high nibbles).
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

// 32 bits (little-endian) -> 32 bytes, byte j = 0x10 if bit j is set else 0 (the 5th bit of Q5_0 / Q5_1).
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(h)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// ---- 32-element block types ----
//
// The kernels with a multi-token form are templates over NX, the number of activation rows one weight row
// is dotted with (matmul's register-level reuse for prefill: each weight block is decoded once for NX
// tokens). The single-row kernel is the NX = 1 instance, so both compute identical results per token.

// Block decoders for the signed types that pair with Q8_0 activations: 32 signed int8 quants.
struct DecodeQ4_0 {
  using Block = BlockQ4_0;
  static __m256i quants(const Block& b) { return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8)); }
};
struct DecodeQ5_0 {
  using Block = BlockQ5_0;
  static __m256i quants(const Block& b) {
    return _mm256_sub_epi8(_mm256_or_si256(unpack_nibbles(b.qs), fifth_bits(b.qh)), _mm256_set1_epi8(16));
  }
};
struct DecodeQ8_0 {
  using Block = BlockQ8_0;
  static __m256i quants(const Block& b) { return load256(b.qs); }
};

inline const BlockQ8_0* act_q8_0(const void* x, size_t x_stride, int t) {
  return reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + t * x_stride);
}

// out[t] = dot(w, x_t) for t < NX, x_t = x + t * x_stride bytes (Q8_0 rows). Two accumulators per token
// (even / odd blocks) hide the FMA latency.
template <class Decode, int NX>
void dot_signed_q8_0(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  const auto* a = static_cast<const typename Decode::Block*>(w);
  const int64_t nb = n / kQK;
  __m256 acc0[NX], acc1[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
  auto step = [&](int64_t i, __m256* acc) {
    const __m256i q = Decode::quants(a[i]);
    const __m256i aq = _mm256_sign_epi8(q, q);
    const float dw = h2f(a[i].d);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const BlockQ8_0& b = act_q8_0(x, x_stride, t)[i];
      const __m256i p = dot_u8s8(aq, _mm256_sign_epi8(load256(b.qs), q));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * h2f(b.d)), acc[t]);
    }
  };
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    step(i, acc0);
    step(i + 1, acc1);
  }
  if (i < nb) step(i, acc0);
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) out[t] = hsum(_mm256_add_ps(acc0[t], acc1[t]));
}

// Unsigned types with a min (Q4_1 / Q5_1) against Q8_1 activations, whose s = d * sum(qs) carries the min
// term: dot = d_w d_x sum(q x) + m_w s_x.
struct DecodeQ4_1 {
  using Block = BlockQ4_1;
  static __m256i quants(const Block& b) { return unpack_nibbles(b.qs); }
};
struct DecodeQ5_1 {
  using Block = BlockQ5_1;
  static __m256i quants(const Block& b) { return _mm256_or_si256(unpack_nibbles(b.qs), fifth_bits(b.qh)); }
};

inline const BlockQ8_1* act_q8_1(const void* x, size_t x_stride, int t) {
  return reinterpret_cast<const BlockQ8_1*>(static_cast<const uint8_t*>(x) + t * x_stride);
}

template <class Decode, int NX>
void dot_unsigned_q8_1(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  const auto* a = static_cast<const typename Decode::Block*>(w);
  __m256 acc[NX];
  float summ[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
    acc[t] = _mm256_setzero_ps();
    summ[t] = 0;
  }
  for (int64_t i = 0; i < n / kQK; ++i) {
    const __m256i q = Decode::quants(a[i]);
    const float dw = h2f(a[i].d), mw = h2f(a[i].m);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const BlockQ8_1& b = act_q8_1(x, x_stride, t)[i];
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_u8s8(q, load256(b.qs))), _mm256_set1_ps(dw * h2f(b.d)), acc[t]);
      summ[t] += mw * h2f(b.s);
    }
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) out[t] = hsum(acc[t]) + summ[t];
}

// ---- K-quants against Q8_K ----

inline const BlockQ8_K* act_q8_k(const void* x, size_t x_stride, int t) {
  return reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + t * x_stride);
}

// The 8 scales and 8 mins of a Q4_K / Q5_K block (same values as k4_scale_min), unpacked with word ops.
inline void k4_unpack_scales(const uint8_t* s, uint8_t sc[8], uint8_t mn[8]) {
  uint32_t w[3];
  std::memcpy(w, s, 12);
  const uint32_t sc_lo = w[0] & 0x3f3f3f3fu, mn_lo = w[1] & 0x3f3f3f3fu;
  const uint32_t sc_hi = (w[2] & 0x0f0f0f0fu) | ((w[0] >> 2) & 0x30303030u);
  const uint32_t mn_hi = ((w[2] >> 4) & 0x0f0f0f0fu) | ((w[1] >> 2) & 0x30303030u);
  std::memcpy(sc, &sc_lo, 4);
  std::memcpy(sc + 4, &sc_hi, 4);
  std::memcpy(mn, &mn_lo, 4);
  std::memcpy(mn + 4, &mn_hi, 4);
}

// sum_j mn[j] * (bsums[2j] + bsums[2j+1]) with one madd: mins widened to int16, each repeated twice.
inline int k4_min_dot(const uint8_t mn[8], const int16_t* bsums) {
  const __m128i m16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn)));
  const __m256i mdup = _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
  return hsum_i32(_mm256_madd_epi16(mdup, load256(bsums)));
}

// Q4_K (kFifthBit = false) and Q5_K (true): 8 sub-blocks of 32 with 6-bit scales and mins.
template <class Block, bool kFifthBit, int NX>
void dot_k4(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  const auto* a = static_cast<const Block*>(w);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i one = _mm256_set1_epi8(1);
  __m256 acc[NX];
  float summ_f[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
    acc[t] = _mm256_setzero_ps();
    summ_f[t] = 0;
  }
  for (int64_t i = 0; i < n / kQKK; ++i) {
    uint8_t sc[8], mn[8];
    k4_unpack_scales(a[i].scales, sc, mn);
    __m256i sumi[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) sumi[t] = _mm256_setzero_si256();
    [[maybe_unused]] __m256i hbits;
    if constexpr (kFifthBit) hbits = load256(a[i].qh);
    for (int c = 0; c < 4; ++c) {
      const __m256i bytes = load256(a[i].qs + 32 * c);
      __m256i lo = _mm256_and_si256(bytes, m4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
      if constexpr (kFifthBit) {
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
        hbits = _mm256_srli_epi16(hbits, 2);
      }
      const __m256i s_lo = _mm256_set1_epi16(sc[2 * c]), s_hi = _mm256_set1_epi16(sc[2 * c + 1]);
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
        const BlockQ8_K& b = act_q8_k(x, x_stride, t)[i];
        const __m256i plo = _mm256_maddubs_epi16(lo, load256(b.qs + 64 * c));
        const __m256i phi = _mm256_maddubs_epi16(hi, load256(b.qs + 64 * c + 32));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(plo, s_lo));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(phi, s_hi));
      }
    }
    const float dw = h2f(a[i].d), dmw = h2f(a[i].dmin);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const BlockQ8_K& b = act_q8_k(x, x_stride, t)[i];
      const int summ = k4_min_dot(mn, b.bsums);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_set1_ps(b.d * dw), acc[t]);
      summ_f[t] += b.d * dmw * summ;
    }
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) out[t] = hsum(acc[t]) - summ_f[t];
}

template <int NX>
void dot_q6_k(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  const auto* a = static_cast<const BlockQ6_K*>(w);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i m2 = _mm256_set1_epi8(0x03);
  float acc[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[t] = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const int8_t* sc = a[i].scales;
    __m256i sumi[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) sumi[t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(a[i].ql + 64 * h);
      const __m256i ql1 = load256(a[i].ql + 64 * h + 32);
      const __m256i qh = load256(a[i].qh + 32 * h);
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4)),
          _mm256_or_si256(_mm256_and_si256(ql1, m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4)),
      };
      for (int s = 0; s < 4; ++s) {
        const int g = 8 * h + 2 * s;
        const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
          const __m256i p = _mm256_maddubs_epi16(q[s], load256(act_q8_k(x, x_stride, t)[i].qs + 128 * h + 32 * s));
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p, scales));
        }
      }
    }
    const float dw = h2f(a[i].d);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const BlockQ8_K& b = act_q8_k(x, x_stride, t)[i];
      // The -32 offset of every quant, folded in through the activation's group sums.
      const int offset = hsum_i32(_mm256_madd_epi16(sc16, load256(b.bsums)));
      acc[t] += static_cast<float>(hsum_i32(sumi[t]) - 32 * offset) * (b.d * dw);
    }
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) out[t] = acc[t];
}

// Q2_K and Q3_K: 2-bit fields of qs[32 h + l] at bit 2 s for element 128 h + 32 s + l, 16 scales per
// block (one per 16 elements). Q2_K: q in [0, 3], 4-bit scale and 4-bit min per group. Q3_K: q = low +
// 4 * hbit - 4 with signed 6-bit scales; the -4 is folded in through the activation group sums.
// NOTE: the scales stay in one register of 16 words, each pair of groups' scales taken out by one
// vpshufb, and a block's integer sums go to the float accumulators as 8 lanes (no horizontal sums per
// block). With the scales unpacked a byte at a time through memory and two horizontal sums per block
// and token, AVX2 decode of Qwen2.5-1.5B Q3_K_M / Q2_K on one Zen 5 core (IGNIS_ISA=avx2), when these
// kernels served it, ran at 9.5 t/s against llama.cpp's AVX2 build's 17.1 / 21.2; this form 13.0 / 15.5
// (the packed kernels serve the models now: packed_avx2.h).
template <bool kQ3, int NX>
void dot_k_lowbit(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  using Block = std::conditional_t<kQ3, BlockQ3_K, BlockQ2_K>;
  const auto* a = static_cast<const Block*>(w);
  const __m256i m2 = _mm256_set1_epi8(0x03);
  [[maybe_unused]] const __m256i four = _mm256_set1_epi8(0x04);
  // vpshufb controls: group pair s of a half-block's 8 scales (words), word 2 s across the low lane and
  // word 2 s + 1 across the high lane.
  __m256i pick[4];
  for (int s = 0; s < 4; ++s)
    pick[s] = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>((4 * s + 3) << 8 | (4 * s + 2))),
                               _mm_set1_epi16(static_cast<int16_t>((4 * s + 1) << 8 | (4 * s))));
  __m256 acc[NX];
  [[maybe_unused]] __m256 acc_min[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[t] = acc_min[t] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQKK; ++i) {
    __m256i sc16;
    [[maybe_unused]] __m256i mn16;
    if constexpr (kQ3) {
      // The 16 6-bit scales (same values as core's q3k_scales) in one register: low nibbles of bytes
      // 0..7 (scales 0..7) then their high nibbles (8..15); 2-bit high parts from bytes 8..11, scales
      // 4 k .. 4 k + 3 at bits 2 k of them. (Put together in scalar words and stored, the scales were
      // read back by a wider load that could not take the stores' data: a stall per block.)
      const __m128i lo4 = _mm_set1_epi8(0x0f);
      const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a[i].scales));
      const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(v, lo4), _mm_and_si128(_mm_srli_epi16(v, 4), lo4));
      int32_t w2;
      std::memcpy(&w2, a[i].scales + 8, 4);
      const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(w2), _mm_set_epi32(6, 4, 2, 0)), _mm_set1_epi8(0x03));
      const __m128i u8 = _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
      sc16 = _mm256_cvtepi8_epi16(u8);
    } else {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[i].scales));
      const __m128i lo4 = _mm_set1_epi8(0x0f);
      sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(b, lo4));
      mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(b, 4), lo4));
    }
    __m256i sumi[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) sumi[t] = _mm256_setzero_si256();
    [[maybe_unused]] __m256i hm;
    if constexpr (kQ3) hm = load256(a[i].hmask);
    for (int h = 0; h < 2; ++h) {
      const __m256i qbytes = load256(a[i].qs + 32 * h);
      const __m256i sch = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11) : _mm256_permute2x128_si256(sc16, sc16, 0x00);
      IGNIS_UNROLL for (int sh = 0; sh < 4; ++sh) {
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(qbytes, 2 * sh), m2);
        if constexpr (kQ3) {  // hbit (bit 4 h + sh of the hmask byte) moved to bit 2: low + 4 * hbit
          const int b = 4 * h + sh;
          const __m256i hb = b >= 2 ? _mm256_srli_epi16(hm, b - 2) : _mm256_slli_epi16(hm, 2 - b);
          q = _mm256_or_si256(q, _mm256_and_si256(hb, four));
        }
        const __m256i scales = _mm256_shuffle_epi8(sch, pick[sh]);
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
          const __m256i p = _mm256_maddubs_epi16(q, load256(act_q8_k(x, x_stride, t)[i].qs + 128 * h + 32 * sh));
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p, scales));
        }
      }
    }
    const float dw = h2f(a[i].d);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const BlockQ8_K& b = act_q8_k(x, x_stride, t)[i];
      const __m256i bs = load256(b.bsums);
      if constexpr (kQ3) {
        const __m256i v = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 2));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(b.d * dw), acc[t]);
      } else {
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_set1_ps(b.d * dw), acc[t]);
        acc_min[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(mn16, bs)),
                                     _mm256_set1_ps(b.d * h2f(a[i].dmin)), acc_min[t]);
      }
    }
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) out[t] = kQ3 ? hsum(acc[t]) : hsum(acc[t]) - hsum(acc_min[t]);
}

template <void (*F)(int64_t, const void*, const void*, size_t, float*)>
float single(int64_t n, const void* w, const void* x) {
  float out;
  F(n, w, x, 0, &out);
  return out;
}

// The x86 quantized kernel rows shared by the AVX2 and AVX-512 tables.
#define IGNIS_X86_QUANT_KERNELS                                                                                     \
  {DType::Q4_0, single<dot_signed_q8_0<DecodeQ4_0, 1>>, dot_signed_q8_0<DecodeQ4_0, kDotTokens>},                   \
      {DType::Q5_0, single<dot_signed_q8_0<DecodeQ5_0, 1>>, dot_signed_q8_0<DecodeQ5_0, kDotTokens>},               \
      {DType::Q8_0, single<dot_signed_q8_0<DecodeQ8_0, 1>>, dot_signed_q8_0<DecodeQ8_0, kDotTokens>},               \
      {DType::Q4_1, single<dot_unsigned_q8_1<DecodeQ4_1, 1>>, dot_unsigned_q8_1<DecodeQ4_1, kDotTokens>},           \
      {DType::Q5_1, single<dot_unsigned_q8_1<DecodeQ5_1, 1>>, dot_unsigned_q8_1<DecodeQ5_1, kDotTokens>},           \
      {DType::Q4_K, single<dot_k4<BlockQ4_K, false, 1>>, dot_k4<BlockQ4_K, false, kDotTokens>},                     \
      {DType::Q5_K, single<dot_k4<BlockQ5_K, true, 1>>, dot_k4<BlockQ5_K, true, kDotTokens>},                       \
      {DType::Q6_K, single<dot_q6_k<1>>, dot_q6_k<kDotTokens>},                                                     \
      {DType::Q2_K, single<dot_k_lowbit<false, 1>>, dot_k_lowbit<false, kDotTokens>},                               \
      {DType::Q3_K, single<dot_k_lowbit<true, 1>>, dot_k_lowbit<true, kDotTokens>}

// ---- activation quantizers: exact twins of the scalar ones in kernels_scalar.cpp ----
//
// Q8_0 / Q8_1 follow ggml-cpu's run-time conversion on x86 (what llama.cpp multiplies with), which
// differs from ggml's reference quantizer: id = 127 / amax (not 1 / d) and halves rounded to even (not
// away from zero). Q8_K is core/quants.cpp's from_float_q8_k (ggml uses its reference at run time).
// Same operations in the same float order (max of |x| is order-independent; x * id and iscale * x are
// single roundings), so the bytes are identical to the scalar twin for every finite input.

inline uint16_t f2h(float f) { return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }

// Max of |v| over 8 lanes, NaN lanes ignored like the scalar std::max(amax, |x|).
inline __m256 absmax_step(__m256 v, __m256 m) { return _mm256_max_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), v), m); }

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 4 x 8 int32 (each within int8 range) -> 32 int8 in element order.
inline __m256i pack_i32x32(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <bool kWithSum>
void act_q8_32(const float* src, void* dst, int64_t n) {
  using Block = std::conditional_t<kWithSum, BlockQ8_1, BlockQ8_0>;
  auto* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    __m256 v[4], m = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(src + 8 * k);
      m = absmax_step(v[k], m);
    }
    const float amax = hmax(m);
    const float d = amax / 127;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    b[i].d = f2h(d);
    __m256i q[4];
    for (int k = 0; k < 4; ++k)
      q[k] = _mm256_cvtps_epi32(
          _mm256_round_ps(_mm256_mul_ps(v[k], _mm256_set1_ps(id)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs), pack_i32x32(q[0], q[1], q[2], q[3]));
    if constexpr (kWithSum) {
      const int sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
      b[i].s = f2h(sum * d);
    }
  }
}

// (maybe_unused: packed_avx2.h includes this header for its helpers only.)
[[maybe_unused]] void act_q8_0(const float* src, void* dst, int64_t n) { act_q8_32<false>(src, dst, n); }
[[maybe_unused]] void act_q8_1(const float* src, void* dst, int64_t n) { act_q8_32<true>(src, dst, n); }

[[maybe_unused]] void act_q8_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < kQKK / 8; ++k) m = absmax_step(_mm256_loadu_ps(src + 8 * k), m);
    const float amax = hmax(m);
    if (amax == 0.0f) {
      std::memset(&b[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    // The signed value of the first element reaching amax (the scalar scan keeps the first); |x| == amax
    // is false for NaN, as in the scalar comparison.
    // NOTE: this scan and the 16-element sums below were scalar loops (about 128 compares and 256 adds a
    // block), 3.2% of Qwen2.5-1.5B Q4_K_M's pp512 samples at one thread; see BENCHMARKS.md.
    const __m256 vmax = _mm256_set1_ps(amax), sign = _mm256_set1_ps(-0.0f);
    int first = 0;
    for (int k = 0; k < kQKK / 8; ++k) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(src + 8 * k)), vmax, _CMP_EQ_OQ));
      if (hit) {
        first = 8 * k + __builtin_ctz(static_cast<unsigned>(hit));
        break;
      }
    }
    const float iscale = -127.f / src[first];
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i lim = _mm256_set1_epi32(127);
    __m256i gsum[kQKK / 16];  // per 16-element group: 8 partial sums of its quants (exact integers)
    for (int k = 0; k < kQKK / 32; ++k) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j)
        q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(src + 32 * k + 8 * j))), lim);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs + 32 * k), pack_i32x32(q[0], q[1], q[2], q[3]));
      gsum[2 * k] = _mm256_add_epi32(q[0], q[1]);
      gsum[2 * k + 1] = _mm256_add_epi32(q[2], q[3]);
    }
    for (int h = 0; h < kQKK / 128; ++h) {  // 8 groups at a time: two hadd levels, then the 128-bit halves
      const __m256i* v = gsum + 8 * h;
      const __m256i g0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
      const __m256i g1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
      const __m128i lo = _mm_add_epi32(_mm256_castsi256_si128(g0), _mm256_extracti128_si256(g0, 1));
      const __m128i hi = _mm_add_epi32(_mm256_castsi256_si128(g1), _mm256_extracti128_si256(g1, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(b[i].bsums + 8 * h), _mm_packs_epi32(lo, hi));
    }
    b[i].d = 1 / iscale;
  }
}

#define IGNIS_X86_ACT_QUANTIZERS {DType::Q8_0, act_q8_0}, {DType::Q8_1, act_q8_1}, {DType::Q8_K, act_q8_k}

// ---- float types (element-wise, any n) ----
//
// Weight and activation have the same element type (F32 / F16 / BF16). Two accumulators per token; the
// single-row kernel is the NX = 1 instance of the multi-token one.

struct LoadF32 {
  using T = float;
  static __m256 v8(const T* p) { return _mm256_loadu_ps(p); }
  static float s(T v) { return v; }
};
struct LoadF16 {
  using T = uint16_t;
  static __m256 v8(const T* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static float s(T v) { return h2f(v); }
};
struct LoadBF16 {
  using T = uint16_t;
  static __m256 v8(const T* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static float s(T v) { return bf2f(v); }
};

template <class L, int NX>
void dot_float(int64_t n, const void* w, const void* x, size_t x_stride, float* out) {
  using T = typename L::T;
  const auto* a = static_cast<const T*>(w);
  const T* b[NX];
  __m256 acc0[NX], acc1[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
    b[t] = reinterpret_cast<const T*>(static_cast<const uint8_t*>(x) + t * x_stride);
    acc0[t] = acc1[t] = _mm256_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = L::v8(a + i), w1 = L::v8(a + i + 8);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      acc0[t] = _mm256_fmadd_ps(w0, L::v8(b[t] + i), acc0[t]);
      acc1[t] = _mm256_fmadd_ps(w1, L::v8(b[t] + i + 8), acc1[t]);
    }
  }
  if (i + 8 <= n) {
    const __m256 w0 = L::v8(a + i);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc0[t] = _mm256_fmadd_ps(w0, L::v8(b[t] + i), acc0[t]);
    i += 8;
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
    float s = hsum(_mm256_add_ps(acc0[t], acc1[t]));
    for (int64_t j = i; j < n; ++j) s += L::s(a[j]) * L::s(b[t][j]);
    out[t] = s;
  }
}

#define IGNIS_AVX2_FLOAT_KERNELS                                                                  \
  {DType::F32, single<dot_float<LoadF32, 1>>, dot_float<LoadF32, kDotTokens>},                    \
      {DType::F16, single<dot_float<LoadF16, 1>>, dot_float<LoadF16, kDotTokens>},                \
      {DType::BF16, single<dot_float<LoadBF16, 1>>, dot_float<LoadBF16, kDotTokens>}

}  // namespace
}  // namespace ignis::cpu
