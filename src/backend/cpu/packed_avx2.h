// AVX2 kernels over packed weights (the row-interleaved layouts of packed.h, shared with the AVX-512
// kernels): for CPUs without AVX-512 (Zen 2/3, most Intel client parts). Written once and compiled twice:
// by packed_avx2.cpp (AVX2 + FMA + F16C + BMI2) and by packed_avxvnni.cpp, which adds AVX-VNNI (Alder Lake
// and later Intel client parts, Zen 5): there the 32-element types' int8 dots take vpdpbusd (ymm). Include
// ONLY from those two files; everything here has internal linkage, so neither object's code is shared.
//
// A 64-byte chunk of a record holds 4 quants of each of 16 rows; a 256-bit register holds half of it,
// so 32-bit lane k is row k of the half (rows 0..7, then 8..15). A multi-token kernel walks a row group
// twice, half by half, keeping one 8-row accumulator per token (AVX2 has 16 registers; the second pass
// finds the group's records in cache); one-token 32-element kernels take both halves in one pass.
//
// NOTE: AVX2 has no vpdpbusd. vpmaddubsw multiplies the unsigned weight quants with the activation's
// signed 4-byte group broadcast to every lane and adds adjacent pairs into int16; vpmaddwd with ones
// then sums each row's pair of int16 into its int32 lane. The int16 sums are exact: with 4-bit weight
// quants (Q4_0, Q4_1, Q4_K) and |x| <= 127 one pair is at most 2 * 15 * 127 = 3810, so 8 element groups
// are summed in int16 (30480 < 32767) before one vpmaddwd; 5-bit Q5_0, Q5_1 and Q5_K sum 4 groups
// (31496), 3-bit Q3_K and 2-bit Q2_K 4 (7112, 3048: one sub-block), 6-bit Q6_K 2 groups (32004). Q8_0
// takes |q| times x with q's sign (at most 2 * 128 * 127 = 32512), one vpmaddwd per group: on Zen 3 the
// vector integer multiplies share one pipe, so Q8_0 costs twice Q4_0's multiplies (splitting q into
// nibbles measured the same). With AVX-VNNI, vpdpbusd sums each group's 4 products straight into the
// int32 lane (no saturation), so the same integer sums come out (Q8_0 there takes q + 128 as stored, and
// the activation's correction takes 128 x its sum off, as on AVX-512). Every block's (sub-block's) integer
// dot is therefore exact, as in the AVX-512 kernels, and the float accumulation is per block in the
// same order for one token and for NX tokens (multi-token calls are bit-identical per token), with or
// without AVX-VNNI (the two objects give the same bits).
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "packed_avx2.h needs AVX2, FMA and F16C (include it from packed_avx2.cpp or packed_avxvnni.cpp)"
#endif
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed.h"
#include "backend/cpu/vec_dot_x86.h"  // load256, hsum
#include "core/quant_blocks.h"

namespace ignis::cpu {
namespace {

constexpr int kHalf = 8;  // rows per 256-bit half of a 16-row record
constexpr int kBothHalvesMaxTokens = 2;

inline __m256i bcast4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
inline __m128i load128(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline __m128i load64(const uint8_t* p) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)); }
inline __m256i ubs(__m256i u, __m256i s) { return _mm256_maddubs_epi16(u, s); }
inline __m256i sum_pairs(__m256i s16) { return _mm256_madd_epi16(s16, _mm256_set1_epi16(1)); }
// NOTE (AVX-VNNI): 896 x 4864 x 512 tokens on one Zen 5 thread (IGNIS_ISA=avx2 ignis-bench-matmul TYPE
// 896 4864 512 1 7, IGNIS_AVXVNNI=0 and 1 alternated 3x, medians): Q4_0 23.7 -> 20.4 ms, Q4_1 27.5 ->
// 22.1, Q5_0 29.4 -> 22.4, Q5_1 30.0 -> 22.2, Q8_0 48.2 -> 22.5 (a vpdpbusd and a broadcast per group in
// place of vpsign, vpmaddubsw and vpmaddwd). Its step loop is unrolled: rolled, Q4_0 took 24-27 ms
// against the AVX2 build's 21-22. Two tokens on both halves (each broadcast feeding two vpdpbusd) ran
// 10-25% slower than four on one half. The K-quants keep vpmaddubsw: their sub-block scales multiply
// int16 sums by vpmaddwd, and int32 sums would need a vpmulld instead, on the same pipes.
// NOTE (the bound): on Zen 5 the ymm vpdpbusd shares its two pipes with vmulps and vfmadd231ps, not with
// vcvtdq2ps, vpand or vpsrlw (`bench/isa-mix.c ymm`: 8 vpdpbusd a round 5.96-6.26 G/s alone, 5.07-5.27
// with 2 FMAs, 5.41-5.43 with 2 vmulps, 6.25-6.49 with the others). A block's 8 rows x one token take 8
// vpdpbusd, the scale's vmulps and the FMA on those pipes: at most ~4.9 G vpdpbusd/s, 157 GMAC/s. The
// activation's correction seeds the first chain (vpbroadcastd from memory, no vpaddd): Q4_0 896 x 4864 x
// 512, best of 7, 5 alternations, min 17.72 -> 17.56 ms, Q5_0 20.13 -> 19.49, Q8_0 18.62 -> 17.94; the
// best runs (141 GMAC/s) are 90% of that bound.
#if defined(__AVXVNNI__)
constexpr bool kVnni = true;
// acc + the dot of each int32 lane's 4 unsigned bytes of u with its 4 signed bytes of s.
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
#else
constexpr bool kVnni = false;
// The same by vpmaddubsw and vpmaddwd, where each pair of products fits int16 (vpmaddubsw saturates): the
// plain Q8_0 step's |q| times x with q's sign, at most 2 x 128 x 127.
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) { return _mm256_add_epi32(acc, sum_pairs(ubs(u, s))); }
#endif
inline __m256 f16x8(const uint8_t* p) { return _mm256_cvtph_ps(load128(p)); }
// v, as a value the compiler cannot see through: integer sums into it are not reassociated across it.
// (GCC 12 otherwise sums an unrolled loop's products at its end, spilling them all.)
inline void settle(__m256i& v) { __asm__("" : "+x"(v)); }
// Each int32 lane's low word in both its words: vpmaddwd with it multiplies a lane's int16 pair by the
// lane's (row's) scale and sums them.
inline __m256i in_both_words(__m256i v) {
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v, 16));
}

// NOTE: the K-quant kernels prefetch the next record a quarter at a time while working on the current
// one: on Zen 3 a 75,968 x 1536 matvec streamed 7.7 -> 9.3 GB/s (Q6_K) and 9.5 -> 11 GB/s (Q4_K) on one
// thread, 14 -> 18 and 16 -> 20 GB/s on two. (Their records are 2-3 KiB; the hardware prefetcher alone
// fell behind.)
// The 32-element kernels' decode (both halves in one pass) prefetches the record 2 KiB ahead, into the
// next row group at the end: on Zen 3, one thread's Q4_0 / Q8_0 matvecs from DRAM (896 x 9728,
// 4864 x 896, 1536 x 17920) went from 7.7-9.6 to 9.7-11.3 GB/s (bench/membw.c: 10.2).
constexpr int64_t kDecodePrefetchBytes = 2048;
inline void prefetch(const uint8_t* p, int64_t n) {
  for (int64_t l = 0; l < n; l += 64) _mm_prefetch(reinterpret_cast<const char*>(p + l), _MM_HINT_T0);
}

inline void store_rows(float* out, int n_rows, __m256 v) {
  if (n_rows >= kHalf) {
    _mm256_storeu_ps(out, v);
    return;
  }
  alignas(32) float tmp[kHalf];
  _mm256_store_ps(tmp, v);
  std::memcpy(out, tmp, sizeof(float) * static_cast<size_t>(n_rows));
}
// Halves h0 .. h0 + NH - 1 of a row group: acc[hh][t] holds token t's outputs of half h0 + hh.
template <int NX, int NH>
inline void store_halves(const __m256 (&acc)[NH][NX], float* out, int64_t out_stride, int n_rows, int h0) {
  IGNIS_UNROLL for (int hh = 0; hh < NH; ++hh) IGNIS_UNROLL for (int t = 0; t < NX; ++t)
    store_rows(out + t * out_stride + kHalf * (h0 + hh), n_rows - kHalf * (h0 + hh), acc[hh][t]);
}

// ---- 32-element blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 ----

// Bit g of each byte of a packed Q5_0 record's qh chunk (8 rows' lanes, packed.h) moved to bit 4, the
// other bits 0: element group g's 5th bits. (A 16-bit shift brings in bits of the lane's other byte, but
// never at bit 4.)
inline __m256i q5_fifth_bits(__m256i qh, int g) {
  const __m256i v = g < 4 ? _mm256_slli_epi16(qh, 4 - g) : _mm256_srli_epi16(qh, g - 4);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

// Halves h0 .. h0 + NH - 1 of a row group, in one pass over its records. Q4_1 / Q5_1 (kMin): the
// quants as they are, and each block adds its 8 rows' m times the token's block sum (Q8_1's s).
template <DType T, int NX, int NH>
void halves_dot32(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                  int64_t out_stride, int n_rows, int h0) {
  constexpr int64_t kRec = packed_record_bytes(T);
  constexpr bool kMin = T == DType::Q4_1 || T == DType::Q5_1, kFive = T == DType::Q5_0 || T == DType::Q5_1;
  constexpr int64_t kHead = kMin ? 64 : 32;  // f16 d (and m) of the 16 rows
  const __m256i m0f = _mm256_set1_epi8(0x0f);
  __m256 acc[NH][NX];
  IGNIS_UNROLL for (int hh = 0; hh < NH; ++hh) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[hh][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRec;
    if constexpr (NH == 2) prefetch(rec + kDecodePrefetchBytes, kRec);  // decode: streams from DRAM
    IGNIS_UNROLL for (int hh = 0; hh < NH; ++hh) {
      const int h = h0 + hh;
      const uint8_t* q = rec + kHead + 32 * h;
      // a: int16 sums of element groups 0..7 (Q5_0 / Q5_1: 0..3, c: 4..7; Q8_0: a holds int32 sums). One
      // step takes two weight vectors: the 4- and 5-bit types the low and high nibbles of one chunk
      // (element groups 2k, 2k + 1), Q8_0 |q| and q of group k; the steps' order keeps few registers live.
      // With AVX-VNNI a and c are int32 sums, the step's first and second vpdpbusd (Q8_0: even and odd
      // steps, on q + 128 as stored, as the AVX-512 kernel does): two dependency chains per token.
      // The activation's correction (types without m) starts the int32 sums where they are int32 (AVX-VNNI).
      constexpr bool kCorrection = !kMin && (T != DType::Q8_0 || kVnni);
      __m256i a[NX], c[NX];
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
        const int32_t cx = kCorrection && kVnni ? act32_correction(x + t * x_stride, nb, b) : 0;
        a[t] = _mm256_set1_epi32(cx);
        c[t] = _mm256_setzero_si256();
      }
      constexpr int kSteps = T == DType::Q8_0 ? 8 : 4;
      auto step = [&](int k) {
        const __m256i ch = load256(q + 64 * k);
        __m256i w0, w1;
        if constexpr (T == DType::Q8_0 && kVnni) {  // q + 128 as stored (the correction takes 128 x x's sum off)
          w0 = w1 = ch;
        } else if constexpr (T == DType::Q8_0) {  // |q| and q (signed), from q + 128
          w1 = _mm256_xor_si256(ch, _mm256_set1_epi8(static_cast<char>(0x80)));
          w0 = _mm256_abs_epi8(w1);
        } else {
          w0 = _mm256_and_si256(ch, m0f);
          w1 = _mm256_and_si256(_mm256_srli_epi16(ch, 4), m0f);
        }
        if constexpr (kFive) {
          const __m256i qh = load256(rec + kHead + 256 + 32 * h);
          w0 = _mm256_or_si256(w0, q5_fifth_bits(qh, 2 * k));
          w1 = _mm256_or_si256(w1, q5_fifth_bits(qh, 2 * k + 1));
        }
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
          const uint8_t* xq = x + t * x_stride + b * 32;
          if constexpr (T == DType::Q8_0 && kVnni) {
            __m256i& sum = k % 2 ? c[t] : a[t];
            sum = dpbusd(sum, w0, bcast4(xq + 4 * k));
          } else if constexpr (T == DType::Q8_0) {
            a[t] = dpbusd(a[t], w0, _mm256_sign_epi8(bcast4(xq + 4 * k), w1));
          } else if constexpr (kVnni) {
            a[t] = dpbusd(a[t], w0, bcast4(xq + 8 * k));
            c[t] = dpbusd(c[t], w1, bcast4(xq + 8 * k + 4));
          } else {
            const __m256i s = _mm256_add_epi16(ubs(w0, bcast4(xq + 8 * k)), ubs(w1, bcast4(xq + 8 * k + 4)));
            if (kFive && k >= 2) {
              c[t] = _mm256_add_epi16(c[t], s);
              settle(c[t]);
            } else {
              a[t] = _mm256_add_epi16(a[t], s);
              if constexpr (kFive) settle(a[t]);
            }
          }
        }
      };
      if constexpr (kFive || kVnni) {
        IGNIS_UNROLL for (int k = 0; k < kSteps; ++k) step(k);
      } else {
        for (int k = 0; k < kSteps; ++k) step(k);
      }
      const __m256 dw = f16x8(rec + 16 * h);
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
        const uint8_t* xt = x + t * x_stride;
        __m256i i = kVnni ? _mm256_add_epi32(a[t], c[t]) : T == DType::Q8_0 ? a[t] : sum_pairs(a[t]);
        if constexpr (kFive && !kVnni) i = _mm256_add_epi32(i, sum_pairs(c[t]));
        if constexpr (kCorrection && !kVnni)
          i = _mm256_add_epi32(_mm256_set1_epi32(act32_correction(xt, nb, b)), i);
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(act32_scale(xt, nb, b)));
        acc[hh][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), scale, acc[hh][t]);
        if constexpr (kMin)
          acc[hh][t] = _mm256_fmadd_ps(f16x8(rec + 32 + 16 * h), _mm256_set1_ps(act32_sum(xt, nb, b)), acc[hh][t]);
      }
    }
  }
  store_halves<NX, NH>(acc, out, out_stride, n_rows, h0);
}

// ---- K-quants against Q8_K activations (+ the side array of packed.h) ----

inline const BlockQ8_K* act_k(const uint8_t* xt, int64_t s) {
  return reinterpret_cast<const BlockQ8_K*>(xt + s * sizeof(BlockQ8_K));
}
inline const int32_t* side_k(const uint8_t* xt, int64_t nb, int64_t s) {
  return reinterpret_cast<const int32_t*>(xt + nb * sizeof(BlockQ8_K)) + 16 * s;
}

// Super-block s's float step for half h of the K-quant record rec: acc += isum x d x the token's d, and
// with kMin (Q2_K, Q4_K, Q5_K) acc -= msum x dmin x the token's d.
template <int NX, bool kMin>
inline void add_super_block(__m256 acc[NX], const __m256i isum[NX], const __m256i msum[NX], const uint8_t* rec, int h,
                            const uint8_t* x, size_t x_stride, int64_t s) {
  const __m256 d = f16x8(rec + 16 * h);
  [[maybe_unused]] __m256 dmin;
  if constexpr (kMin) dmin = f16x8(rec + 32 + 16 * h);
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
    const __m256 dx = _mm256_set1_ps(act_k(x + t * x_stride, s)->d);
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, dx), acc[t]);
    if constexpr (kMin) acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[t]), _mm256_mul_ps(dmin, dx), acc[t]);
  }
}

// Halves h0 .. h0 + NH - 1 of a row group, in one pass over its records. Q4_K, and Q5_K (K5: the same
// record with its qh chunks among the quants' chunks, packed.h; quants 0..31, so their int16 sums are
// taken into the int32 ones every 4 chunks instead of 8).
// NOTE (Q5_K): on ggml's blocks in place (the rows kernel) AVX2 prefill of Qwen2.5-1.5B Q5_K_M on a Zen 5
// core (IGNIS_ISA=avx2) ran at 1.8x llama.cpp's AVX2 build against 2.2x and up for the packed types.
template <int NX, int NH, bool K5 = false>
void halves_dot_q4k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows, int h0) {
  constexpr int64_t kRec = packed_record_bytes(K5 ? DType::Q5_K : DType::Q4_K);
  const __m256i m0f = _mm256_set1_epi8(0x0f);
  __m256 acc[NH][NX];
  IGNIS_UNROLL for (int hh = 0; hh < NH; ++hh) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[hh][t] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* rec = group + s * kRec;
    IGNIS_UNROLL for (int hh = 0; hh < NH; ++hh) {
      const int h = h0 + hh;
      const uint8_t* sc = rec + 64 + 8 * h;
      const uint8_t* mn = rec + 64 + 128 + 16 * h;
      const uint8_t* qs = rec + 64 + 256 + 32 * h;
      __m256i isum[NX], msum[NX];
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = msum[t] = _mm256_setzero_si256();
      // Sub-blocks 2i, 2i + 1's mins times the token's sums.
      auto mins = [&](int i) {
        const __m256i m = _mm256_cvtepu8_epi16(load128(mn + 32 * i));
        IGNIS_UNROLL for (int t = 0; t < NX; ++t)
          msum[t] = _mm256_add_epi32(msum[t], _mm256_madd_epi16(m, _mm256_set1_epi32(side_k(x + t * x_stride, nb, s)[i])));
      };
      auto pair = [&](int i) {
        if (hh == 0) prefetch(rec + kRec + i * (kRec / 4), kRec / 4);
        __m256i a0[NX], a1[NX];
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) a0[t] = a1[t] = _mm256_setzero_si256();
        auto flush = [&] {
          const __m256i w0 = in_both_words(_mm256_cvtepu8_epi32(load64(sc + 2 * i * 16)));
          const __m256i w1 = in_both_words(_mm256_cvtepu8_epi32(load64(sc + (2 * i + 1) * 16)));
          IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
            isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(a0[t], w0), _mm256_madd_epi16(a1[t], w1)));
            a0[t] = a1[t] = _mm256_setzero_si256();
          }
        };
        auto chunk = [&](int c) {
          __m256i lo, hi;
          if constexpr (K5) {
            const __m256i ch = load256(rec + q5k_chunk_at(i, c) + 32 * h), qh = load256(rec + q5k_qh_at(c) + 32 * h);
            lo = _mm256_or_si256(_mm256_and_si256(ch, m0f), q5_fifth_bits(qh, 2 * i));
            hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ch, 4), m0f), q5_fifth_bits(qh, 2 * i + 1));
          } else {
            const __m256i ch = load256(qs + (8 * i + c) * 64);
            lo = _mm256_and_si256(ch, m0f);
            hi = _mm256_and_si256(_mm256_srli_epi16(ch, 4), m0f);
          }
          IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
            const auto* xq = reinterpret_cast<const uint8_t*>(act_k(x + t * x_stride, s)->qs) + 64 * i + 4 * c;
            a0[t] = _mm256_add_epi16(a0[t], ubs(lo, bcast4(xq)));
            a1[t] = _mm256_add_epi16(a1[t], ubs(hi, bcast4(xq + 32)));
            if constexpr (!K5 && NX > kBothHalvesMaxTokens) {
              settle(a0[t]);
              settle(a1[t]);
            }
          }
        };
        // NOTE: for 3 and 4 tokens Q4_K's 8 chunks (and the 4 sub-block pairs) are unrolled with each sum
        // pinned after its chunk (settle); as a loop GCC 12 kept one token's sum on the stack, a
        // store-to-load chain through every chunk, and unrolled without the pins it summed all 64 products
        // at the end, spilled (on Zen 3: 1.5B Q4_K_M pp512 t1 24-31 t/s as against 35-38 for the loop). With
        // the mins' products after the sub-blocks, 1536 x 8960 x 512 tokens on one Zen 5 thread
        // (IGNIS_ISA=avx2 ignis-bench-matmul q4_K 1536 8960 512 1 4, best of 4, medians of 3 alternated) 64.2
        // -> 55.9 ms, Q5_K (a loop still: its fifth bits' shifts) 80.9 -> 78.3, Q2_K (mins after) 81.0 -> 60.8.
        constexpr int kRun = K5 ? 4 : 8;  // chunks summed in int16
        for (int c0 = 0; c0 < 8; c0 += kRun) {
          if constexpr (K5 && NX > kBothHalvesMaxTokens) {
            for (int c = 0; c < kRun; ++c) chunk(c0 + c);
          } else {
            IGNIS_UNROLL for (int c = 0; c < kRun; ++c) chunk(c0 + c);
          }
          flush();
        }
      };
      if constexpr (NX <= kBothHalvesMaxTokens) {
        for (int i = 0; i < 4; ++i) {
          pair(i);
          mins(i);
        }
      } else {
        IGNIS_UNROLL for (int i = 0; i < 4; ++i) pair(i);
        IGNIS_UNROLL for (int i = 0; i < 4; ++i) mins(i);  // after the sub-blocks: fewer live registers
      }
      add_super_block<NX, true>(acc[hh], isum, msum, rec, h, x, x_stride, s);
    }
  }
  store_halves<NX, NH>(acc, out, out_stride, n_rows, h0);
}

// Element groups g + 16u of the 8 rows of a half of a packed Q6_K or Q3_K record (tri: the half's first
// triple). Q6_K: low nibble of ql(g) (u = 0, 1: ql(g), ql(g + 16); u = 2, 3: their high nibbles) with
// bits 2u..2u+1 of qh(g) as bits 4..5 (0..63, ggml's q + 32). Q3_K: field u of lo(g) plus bit 4 (g % 2) +
// u of hi(g / 2) as 4 (0..7, ggml's q + 4). The side array's sums take the offsets off.
template <DType T>
inline __m256i k6_quants(const uint8_t* tri, int g, int u) {
  if constexpr (T == DType::Q3_K) {
    const int bit = 4 * (g % 2) + u;
    const __m256i lo = load256(tri + 192 * (g / 2) + 64 * (g % 2)), hi = load256(tri + 192 * (g / 2) + 128);
    const __m256i hb = bit >= 2 ? _mm256_srli_epi16(hi, bit - 2) : _mm256_slli_epi16(hi, 2 - bit);
    return _mm256_or_si256(_mm256_and_si256(u ? _mm256_srli_epi16(lo, 2 * u) : lo, _mm256_set1_epi8(0x03)),
                           _mm256_and_si256(hb, _mm256_set1_epi8(0x04)));
  } else {
    const __m256i m0f = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    const __m256i n = load256(tri + 192 * g + (u % 2 == 0 ? 0 : 64));
    const __m256i hb = load256(tri + 192 * g + 128);
    const __m256i nib = _mm256_and_si256(u < 2 ? n : _mm256_srli_epi16(n, 4), m0f);
    const __m256i high = u == 0 ? _mm256_slli_epi16(hb, 4) : u == 1 ? _mm256_slli_epi16(hb, 2) : u == 2 ? hb : _mm256_srli_epi16(hb, 2);
    return _mm256_or_si256(nib, _mm256_and_si256(high, m30));
  }
}

// Q6_K, and Q3_K (its record has the same d and i8 scales; its quants come from lo / hi chunks).
// NOTE (Q3_K): on ggml's blocks in place (vec_dot_x86.h's rows kernel, one row at a time) AVX2 decode of
// Qwen2.5-1.5B Q3_K_M / Q2_K on a Zen 5 core (IGNIS_ISA=avx2) ran at 0.55-0.75 of llama.cpp's AVX2
// build (BENCHMARKS.md).
template <int NX, int NH, DType T = DType::Q6_K>
void halves_dot_q6k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows, int h0) {
  constexpr int64_t kRec = packed_record_bytes(T);
  constexpr int kSum = T == DType::Q3_K ? 4 : 2;  // element groups summed in int16 (Q3_K <= 7112, Q6_K 32004)
  __m256 acc[NH][NX];
  IGNIS_UNROLL for (int hh = 0; hh < NH; ++hh) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[hh][t] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* rec = group + s * kRec;
    IGNIS_UNROLL for (int hf = 0; hf < NH; ++hf) {
      const int h = h0 + hf;
      const uint8_t* sc = rec + 32 + 8 * h;
      const uint8_t* tri = rec + 32 + 256 + 32 * h;  // triples of 192 bytes
      __m256i isum[NX];
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = _mm256_setzero_si256();
      // Sub-block j + 4u holds element groups g + 16u for g = 4j .. 4j + 3 (see packed.h). Its int16 sums go
      // into the int32 ones by vpmaddwd with the row's scale in both words (|sum| <= 32004, |scale| <= 128);
      // its offset (the side array's sum) times the scale after its groups.
      // NOTE: before, each sub-block's int32 sum started at the offset and took its scale by vpmulld, and
      // GCC 12 kept the 4 tokens' sums of a whole j step live, spilling 40 registers' worth. 1536 x 8960 x
      // 512 tokens on one Zen 5 thread (IGNIS_ISA=avx2 ignis-bench-matmul q6_K 1536 8960 512 1 4, best of 4,
      // medians of 3 alternated): Q6_K 89.6 -> 74.3 ms, Q3_K 80.7 -> 72.0.
      for (int j = 0; j < 4; ++j) {
        if (hf == 0) prefetch(rec + kRec + j * (kRec / 4), kRec / 4);
        IGNIS_UNROLL for (int u = 0; u < 4; ++u) {
          const __m256i scv = _mm256_cvtepi8_epi32(load64(sc + (j + 4 * u) * 16));
          const __m256i scw = in_both_words(scv);
          IGNIS_UNROLL for (int p = 0; p < 4 / kSum; ++p) {
            __m256i qv[kSum];
            IGNIS_UNROLL for (int gg = 0; gg < kSum; ++gg) qv[gg] = k6_quants<T>(tri, 4 * j + kSum * p + gg, u);
            IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
              const auto* xq = reinterpret_cast<const uint8_t*>(act_k(x + t * x_stride, s)->qs) + 4 * (4 * j + kSum * p + 16 * u);
              __m256i s16 = ubs(qv[0], bcast4(xq));
              IGNIS_UNROLL for (int gg = 1; gg < kSum; ++gg) s16 = _mm256_add_epi16(s16, ubs(qv[gg], bcast4(xq + 4 * gg)));
              isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16, scw));
              settle(isum[t]);
            }
          }
          IGNIS_UNROLL for (int t = 0; t < NX; ++t)
            isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(_mm256_set1_epi32(side_k(x + t * x_stride, nb, s)[j + 4 * u]), scv));
        }
      }
      add_super_block<NX, false>(acc[hf], isum, isum, rec, h, x, x_stride, s);
    }
  }
  store_halves<NX, NH>(acc, out, out_stride, n_rows, h0);
}

// Q2_K: sub-block pair i = 4 hh + f takes field f of chunks 8 hh .. 8 hh + 3 (sub-block 2i) and 8 hh + 4
// .. 8 hh + 7 (2i + 1) (packed.h); each sub-block's int16 dots times its scale by one vpmaddwd (the scale
// in both words of the row's lane), the mins times the token's two 16-element sums by another.
template <int NX, int NH>
void halves_dot_q2k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows, int h0) {
  constexpr int64_t kRec = packed_record_bytes(DType::Q2_K);
  const __m256i m03 = _mm256_set1_epi8(0x03), m0f = _mm256_set1_epi16(0x0f);
  __m256 acc[NH][NX];
  IGNIS_UNROLL for (int hh = 0; hh < NH; ++hh) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[hh][t] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* rec = group + s * kRec;
    IGNIS_UNROLL for (int hf = 0; hf < NH; ++hf) {
      const int h = h0 + hf;
      const uint8_t* qs = rec + 64 + 256 + 32 * h;
      __m256i isum[NX], msum[NX];
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = msum[t] = _mm256_setzero_si256();
      // Sub-blocks 2i, 2i + 1's mins times the token's sums: for 3 and 4 tokens after all the sub-blocks
      // (fewer live registers).
      auto mins = [&](int i) {
        const __m256i mn = _mm256_srli_epi16(_mm256_cvtepu8_epi16(load128(rec + 64 + 32 * i + 16 * h)), 4);
        IGNIS_UNROLL for (int t = 0; t < NX; ++t)
          msum[t] = _mm256_add_epi32(msum[t], _mm256_madd_epi16(mn, _mm256_set1_epi32(side_k(x + t * x_stride, nb, s)[i])));
      };
      for (int hh = 0; hh < 2; ++hh) {
        if (hf == 0) prefetch(rec + kRec + hh * (kRec / 2), kRec / 2);
        IGNIS_UNROLL for (int f = 0; f < 4; ++f) {
          const int i = 4 * hh + f;
          __m256i s0[NX], s1[NX];
          IGNIS_UNROLL for (int t = 0; t < NX; ++t) s0[t] = s1[t] = _mm256_setzero_si256();
          IGNIS_UNROLL for (int c = 0; c < 4; ++c) {  // 4 groups of quants 0..3 sum in int16 (<= 3072)
            const __m256i ca = load256(qs + 64 * (8 * hh + c)), cb = load256(qs + 64 * (8 * hh + c + 4));
            const __m256i qa = _mm256_and_si256(f ? _mm256_srli_epi16(ca, 2 * f) : ca, m03);
            const __m256i qb = _mm256_and_si256(f ? _mm256_srli_epi16(cb, 2 * f) : cb, m03);
            IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
              const auto* xq = reinterpret_cast<const uint8_t*>(act_k(x + t * x_stride, s)->qs) + 4 * (32 * hh + 8 * f + c);
              s0[t] = _mm256_add_epi16(s0[t], ubs(qa, bcast4(xq)));
              s1[t] = _mm256_add_epi16(s1[t], ubs(qb, bcast4(xq + 16)));
              if constexpr (NX > kBothHalvesMaxTokens) {
                settle(s0[t]);
                settle(s1[t]);
              }
            }
          }
          // Per row, words (scale | min << 4) of sub-blocks 2i and 2i + 1.
          const __m256i v = _mm256_cvtepu8_epi16(load128(rec + 64 + 32 * i + 16 * h));
          const __m256i sc = _mm256_and_si256(v, m0f);
          const __m256i sc0 = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(sc, 0xA0), 0xA0);  // words 0, 0, 2, 2
          const __m256i sc1 = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(sc, 0xF5), 0xF5);  // words 1, 1, 3, 3
          IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
            isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(s0[t], sc0), _mm256_madd_epi16(s1[t], sc1)));
          }
          if constexpr (NX <= kBothHalvesMaxTokens) mins(i);
        }
      }
      if constexpr (NX > kBothHalvesMaxTokens) IGNIS_UNROLL for (int i = 0; i < 8; ++i) mins(i);
      add_super_block<NX, true>(acc[hf], isum, msum, rec, h, x, x_stride, s);
    }
  }
  store_halves<NX, NH>(acc, out, out_stride, n_rows, h0);
}

// ---- F16 / BF16 rows (ggml's layout) against f32 activations holding f16- / bf16-rounded values ----

// The weights' 8 elements at p as floats.
struct HalfF16 {
  static __m256 v8(const uint16_t* p) { return f16x8(reinterpret_cast<const uint8_t*>(p)); }
};
struct HalfBF16 {
  static __m256 v8(const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(reinterpret_cast<const uint8_t*>(p))), 16));
  }
};

// A (row, token) takes its 8-element steps in order on kF16Chains FMA chains: step s goes to chain
// f16_chain(s), so the chains take turns every cache line of the row (the tail, through a zero-padded
// copy of the row's last elements, is the step after the last full one); the output is the horizontal
// sum of ((chain 0 + chain 1) + chain 2) + chain 3. Decode runs the chains together, over the row as
// one stream; the prefill tile runs them one after the other over a segment of its rows. A (row,
// token)'s arithmetic is the same either way, in any row block and for any number of tokens.
constexpr int64_t kF16ChainSteps = 4;  // 32 elements: 64 bytes of F16
constexpr int kF16Chains = 4;
constexpr int64_t kF16Round = kF16Chains * kF16ChainSteps;  // steps
constexpr int f16_chain(int64_t step) { return static_cast<int>((step / kF16ChainSteps) % kF16Chains); }
constexpr int64_t kF16DecodePrefetchBytes = 12288;

// The row's last n % 8 elements (n % 8 != 0), zero-padded, and the mask of the activations' ones.
struct HalfTail {
  int64_t i;
  __m256i mask;
  static HalfTail at(int64_t n) {
    const int64_t i = n / 8 * 8;
    return {i, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))};
  }
  template <class H>
  __m256 weights(const uint16_t* row, int64_t n) const {
    alignas(16) uint16_t tmp[8] = {};
    std::memcpy(tmp, row + i, sizeof(uint16_t) * static_cast<size_t>(n - i));
    return H::v8(tmp);
  }
};

// Decode: one row, the chains in registers, a software prefetch kF16DecodePrefetchBytes ahead (past
// the row's end into the next rows: the matrix is contiguous).
template <class H>
inline float half_row_dot(int64_t n, const uint16_t* w, const float* x) {
  __m256 acc[kF16Chains];
  IGNIS_UNROLL for (int c = 0; c < kF16Chains; ++c) acc[c] = _mm256_setzero_ps();
  const auto step = [&](int c, int64_t i) {
    acc[c] = _mm256_fmadd_ps(H::v8(w + i), _mm256_loadu_ps(x + i), acc[c]);
  };
  const int64_t steps = n / 8;
  int64_t s = 0;
  for (; s + kF16Round <= steps; s += kF16Round) {
    const auto* pf = reinterpret_cast<const char*>(w + 8 * s) + kF16DecodePrefetchBytes;
    IGNIS_UNROLL for (int l = 0; l < kF16Chains; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T0);
    _Pragma("GCC unroll 16") for (int j = 0; j < kF16Round; ++j) step(j / kF16ChainSteps, 8 * (s + j));
  }
  // The rest: fewer than kF16Round steps (the chain indices constant, so acc stays in registers).
  _Pragma("GCC unroll 16") for (int j = 0; j < kF16Round; ++j) {
    if (s + j < steps) step(j / kF16ChainSteps, 8 * (s + j));
  }
  if (n % 8 != 0) {
    const HalfTail tail = HalfTail::at(n);
    const __m256 p_w = tail.weights<H>(w, n), p_x = _mm256_maskload_ps(x + tail.i, tail.mask);
    IGNIS_UNROLL for (int c = 0; c < kF16Chains; ++c) {
      if (c == f16_chain(steps)) acc[c] = _mm256_fmadd_ps(p_w, p_x, acc[c]);
    }
  }
  __m256 sum = acc[0];
  IGNIS_UNROLL for (int c = 1; c < kF16Chains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  return hsum(sum);
}

// The prefill tile: NR rows x NX tokens, kF16SegmentRounds rounds of the chains at a time (the tile's
// rows and activations of a segment stay in L1), the chains one after the other within a segment, each
// chain's accumulators taken from and put back in memory.
constexpr int64_t kF16SegmentRounds = 8;

template <class H, int NR, int NX>
inline void half_tile(int64_t n, const uint16_t* w, const float* const xt[NX], float* out, int64_t out_stride) {
  __m256 saved[kF16Chains][NR][NX];
  for (int c = 0; c < kF16Chains; ++c)
    IGNIS_UNROLL for (int r = 0; r < NR; ++r) IGNIS_UNROLL for (int t = 0; t < NX; ++t) saved[c][r][t] = _mm256_setzero_ps();
  __m256 acc[NR][NX];
  const auto step = [&](int64_t i) {
    __m256 wv[NR];
    IGNIS_UNROLL for (int r = 0; r < NR; ++r) wv[r] = H::v8(w + r * n + i);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const __m256 xv = _mm256_loadu_ps(xt[t] + i);
      IGNIS_UNROLL for (int r = 0; r < NR; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  };
  const auto take = [&](int c) { std::memcpy(acc, saved[c], sizeof(acc)); };
  const auto put = [&](int c) { std::memcpy(saved[c], acc, sizeof(acc)); };
  const int64_t steps = n / 8;
  for (int64_t s0 = 0; s0 < steps; s0 += kF16Round * kF16SegmentRounds) {
    const int64_t s1 = std::min(steps, s0 + kF16Round * kF16SegmentRounds);
    for (int c = 0; c < kF16Chains; ++c) {
      take(c);
      int64_t b = s0 + c * kF16ChainSteps;
      for (; b + kF16ChainSteps <= s1; b += kF16Round) {
        IGNIS_UNROLL for (int j = 0; j < kF16ChainSteps; ++j) step(8 * (b + j));
      }
      for (; b < s1; ++b) step(8 * b);  // a block cut by the row's end
      put(c);
    }
  }
  if (n % 8 != 0) {
    const int c = f16_chain(steps);
    take(c);
    const HalfTail tail = HalfTail::at(n);
    IGNIS_UNROLL for (int r = 0; r < NR; ++r) {
      const __m256 wv = tail.weights<H>(w + r * n, n);
      IGNIS_UNROLL for (int t = 0; t < NX; ++t)
        acc[r][t] = _mm256_fmadd_ps(wv, _mm256_maskload_ps(xt[t] + tail.i, tail.mask), acc[r][t]);
    }
    put(c);
  }
  IGNIS_UNROLL for (int r = 0; r < NR; ++r) IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
    __m256 sum = saved[0][r][t];
    for (int c = 1; c < kF16Chains; ++c) sum = _mm256_add_ps(sum, saved[c][r][t]);
    out[t * out_stride + r] = hsum(sum);
  }
}

// NOTE: decode reads one row at a time, the matrix's rows as one stream (the file's until the
// background copy onto huge pages exists, packed.h). On the 2-vCPU Zen 5 (AVX2 path),
// a 900 MB F16 matvec (896-element rows) in a standalone loop at one thread read 22.5-23.6 GB/s with
// one row on 2 or 4 chains (20.5 on one), 14-18 with 4 rows side by side on a chain each (the layout
// before: it held the prefill tile's arithmetic; 11-13 without its software prefetch) and 11 with 2 rows
// of 2 chains: more than one stream at a time starves the hardware prefetcher here. Four chains, not two:
// from L3, 896 x 4864 read 28-30 GB/s on two, 43-47 on four. From the file's 4 KiB page-cache pages the
// one stream read 17-22 GB/s, 22-24 with the prefetch 12-16 KiB ahead (4-8 KiB: less). Qwen2.5-0.5B F16
// tg64 at one thread, alternated 5x with llama.cpp's AVX2 build: 14.6-19.3 without the prefetch, 16.2-18.5
// with it, llama.cpp 13.9-17.3 (the 4-row layout: 14.9-15.7 against llama.cpp's 16.3-19.7, 3x).
// Prefill takes 3 rows x 4 tokens (12 accumulators, 3 weight and 1 activation register: 12 FMAs per 7
// loads and 3 conversions), each chain in turn over segments of kF16SegmentRounds rounds (3 rows and 4
// tokens of 1024 elements: 22 KB, in L1 for the chains after the first): pp512 at 2 threads 187-203 t/s
// against 203-207 with one chain (alternated 3x); the whole row per chain (no segments) ran the 4864 x 896
// product 25-30% slower, one row x 3 tokens with the chains in registers 20-30% (loads per FMA). A 2 x 6
// tile measured no faster in the model. Interleaving the rows at load like the quants (one FMA chain per
// output over 16-row vectors times broadcast activations, no horizontal sums) ran 0.5B F16 pp512 1.25x
// faster, but its 1 GB copy made load to first token 1.6x llama.cpp's on these VMs, where
// first-touching anonymous memory costs ~1 ms per MB however many threads touch it (BENCHMARKS.md).
template <class H, int NX>
void packed_dot_half(int64_t n, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows) {
  const auto* w = reinterpret_cast<const uint16_t*>(group);
  const float* xt[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) xt[t] = reinterpret_cast<const float*>(x + t * x_stride);
  int k = 0;
  if constexpr (NX == 1) {
    for (; k < n_rows; ++k) out[k] = half_row_dot<H>(n, w + k * n, xt[0]);
  } else {
    // 16 rows: 4 triples and 2 pairs.
    for (; k + 3 <= n_rows && n_rows - k != 4; k += 3) half_tile<H, 3, NX>(n, w + k * n, xt, out + k, out_stride);
    for (; k + 2 <= n_rows; k += 2) half_tile<H, 2, NX>(n, w + k * n, xt, out + k, out_stride);
  }
  for (; k < n_rows; ++k) half_tile<H, 1, NX>(n, w + k * n, xt, out + k, out_stride);
}

// A row group: both halves in one pass when NX tokens' accumulators for 16 rows fit in registers
// (decode), else its first 8 rows, then (if any) the other 8.
template <template <int, int> class K, int NX>
void group_dot(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
               int n_rows) {
  if constexpr (NX <= kBothHalvesMaxTokens) {
    if (n_rows > kHalf) return K<NX, 2>::run(nb, group, x, x_stride, out, out_stride, n_rows, 0);
  }
  K<NX, 1>::run(nb, group, x, x_stride, out, out_stride, n_rows, 0);
  if (n_rows > kHalf) K<NX, 1>::run(nb, group, x, x_stride, out, out_stride, n_rows, 1);
}

template <DType T>
struct Dot32 {
  template <int NX, int NH>
  struct K {
    static constexpr auto run = halves_dot32<T, NX, NH>;
  };
};
template <int NX, int NH>
struct DotQ4K {
  static constexpr auto run = halves_dot_q4k<NX, NH>;
};
template <int NX, int NH>
struct DotQ5K {
  static constexpr auto run = halves_dot_q4k<NX, NH, true>;
};
template <int NX, int NH>
struct DotQ6K {
  static constexpr auto run = halves_dot_q6k<NX, NH>;
};
template <int NX, int NH>
struct DotQ3K {
  static constexpr auto run = halves_dot_q6k<NX, NH, DType::Q3_K>;
};
template <int NX, int NH>
struct DotQ2K {
  static constexpr auto run = halves_dot_q2k<NX, NH>;
};

template <template <int, int> class K>
PackedKernels kernels() {
  PackedKernels k{group_dot<K, 1>, group_dot<K, 4>, 4};
  k.dotn_rest = packed_dot_rest<group_dot<K, 1>, group_dot<K, 2>, group_dot<K, 3>>;
  return k;
}

template <class H>
PackedKernels half_kernels() {
  PackedKernels k{packed_dot_half<H, 1>, packed_dot_half<H, 4>, 4};
  k.dotn_rest = packed_dot_rest<packed_dot_half<H, 1>, packed_dot_half<H, 2>, packed_dot_half<H, 3>>;
  return k;
}

PackedKernels avx2_family_kernels(DType t) {
  // NOTE: 4 tokens per weight decode: their 8-row accumulators and int16 sums, with the decoded chunk
  // and the broadcast activation, fill AVX2's 16 registers.
  switch (t) {
    case DType::Q4_0: return kernels<Dot32<DType::Q4_0>::K>();
    case DType::Q5_0: return kernels<Dot32<DType::Q5_0>::K>();
    case DType::Q4_1: return kernels<Dot32<DType::Q4_1>::K>();
    case DType::Q5_1: return kernels<Dot32<DType::Q5_1>::K>();
    case DType::Q8_0: return kernels<Dot32<DType::Q8_0>::K>();
    case DType::Q4_K: return kernels<DotQ4K>();
    case DType::Q5_K: return kernels<DotQ5K>();
    case DType::Q6_K: return kernels<DotQ6K>();
    case DType::Q3_K: return kernels<DotQ3K>();
    case DType::Q2_K: return kernels<DotQ2K>();
    case DType::F16: return half_kernels<HalfF16>();
    case DType::BF16: return half_kernels<HalfBF16>();
    default: return {};
  }
}

}  // namespace
}  // namespace ignis::cpu
