// AVX-512 VNNI kernels over packed weights (row-interleaved layouts in packed.h).
//
// Per element group of a 16-row record and token, one vpdpbusd multiplies the 64-byte chunk (4
// unsigned quants per row) with the activation's 4 matching bytes broadcast to every lane; a block's
// (sub-block's) chunks accumulate in one int32 lane per row, started from the activation's -off * sum
// so the lane ends as the row's exact signed dot. Then, per block, one convert and one multiply-add
// with the 16 rows' scales times the activation scale (K-quants: sub-block scales applied in integers
// first, mins through vpdpwssd with the activation's sub-block sums). The weight chunks are loaded and
// decoded once per record and reused for every token of a multi-token call; per token the operations
// and their order are those of the one-token kernel, so both give identical results.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed.h"
#include "backend/cpu/packed_avx512.h"
#include "core/quant_blocks.h"

namespace ignis::cpu {
namespace {

#define IGNIS_UNROLL _Pragma("GCC unroll 8")
#define IGNIS_NO_UNROLL _Pragma("GCC unroll 1")

// NOTE: software prefetch kPrefetchBytes32 ahead in the one-token 32-element kernel: measured on Zen 4,
// a 60000 x 896 Q4_0 matvec read ~14 GB/s from DRAM without it and ~20 GB/s with 8 records ahead (one
// thread; 4 and 32 were slower); Q8_0 gained less (16 -> 18 GB/s). On Zen 5 (AMD family 1Ah) the
// hardware prefetcher alone streams faster: Q4_0 matvecs from DRAM (copies rotated past the L3),
// without -> with the prefetch, 896 x 9728 30.0-30.6 vs 26.5-27.0 GB/s on one thread and 52.0 vs 47.1 on
// two, 4864 x 896 23.6 vs 20.0 and 40.1 vs 35.4; 1, 4, 8, 16 and 32 records ahead all read slower.
constexpr int64_t kPrefetchBytes32 = 8 * 288;  // 32-element types

bool software_prefetch_pays() {
  static const bool pays = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return true;
    const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
    if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return true;
    const unsigned family = ((a >> 8) & 0xf) + (((a >> 8) & 0xf) == 0xf ? (a >> 20) & 0xff : 0);
    return family < 0x1a;
  }();
  return pays;
}
// Per type. NOTE (Zen 5): decode of the types with a fifth bit (Q5_0, Q5_1: 352- and 384-byte records,
// the qh chunk read first) still streams faster with the prefetch, in the one-token kernel and in the
// pair kernel's one-token form (the fused gate and up of decode). Qwen2.5-0.5B's Q4_K_M mix (44% of its
// bytes Q5_0) tg128 without -> with, alternated 4x: 2 threads 79-97 -> 89-108 t/s, one thread 41-65 ->
// 48-78 (each pair 8-21% faster). With it for every 32-element type, the 0.5B Q8_0 file read 76-85 ->
// 62-74 t/s at 2 threads and Qwen2.5-1.5B Q4_0 30-35 -> 30-40 (alternated 3x). Since decode reads two
// streams a thread (two row groups half a matrix apart, ops.cpp), Q4_0 gains from it too: in one process
// alternating every 8 tokens (60 rounds, 2 threads), tg time against two streams without it 0.94
// (Qwen2.5-1.5B and 0.5B Q4_0; one thread 0.93), while Q8_0 still loses (0.5B Q8_0 1.08, Qwen3-0.6B
// Q8_0 1.05). Q4_1 takes Q4_0's choice.
template <DType T>
bool software_prefetch_pays_32() {
  return software_prefetch_pays() || T != DType::Q8_0;
}
// K-quants: no software prefetch (their records are read sequentially and the hardware prefetcher does
// better alone: a 60000 x 1536 Q4_K matvec read 34 GB/s without and 20-23 GB/s with 1-8 records ahead).

inline void prefetch(const uint8_t* p, int64_t n) {
  for (int64_t l = 0; l < n; l += 64) _mm_prefetch(reinterpret_cast<const char*>(p + l), _MM_HINT_T0);
}

// ---- 32-element blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 ----

template <DType T>
inline void decode32(const uint8_t* rec, __m512i w[8]) {
  const uint8_t* q = rec + kQuantsAt<T>;
  if constexpr (T == DType::Q8_0) {
    IGNIS_UNROLL for (int j = 0; j < 8; ++j) w[j] = _mm512_loadu_si512(q + 64 * j);
  } else {
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    [[maybe_unused]] const __m512i qh = kFifthBit<T> ? _mm512_loadu_si512(q + 256) : m0f;
    IGNIS_UNROLL for (int m = 0; m < 4; ++m) {
      const __m512i c = _mm512_loadu_si512(q + 64 * m);
      if constexpr (kFifthBit<T>) {
        w[2 * m] = q5_group_quants(c, qh, 2 * m);
        w[2 * m + 1] = q5_group_quants(_mm512_srli_epi16(c, 4), qh, 2 * m + 1);
      } else {
        w[2 * m] = _mm512_and_si512(c, m0f);
        w[2 * m + 1] = _mm512_and_si512(_mm512_srli_epi16(c, 4), m0f);
      }
    }
  }
}

// One token (decode): two chains halve the vpdpbusd latency on the critical path.
template <DType T, bool kPrefetch>
void packed_dot32(int64_t nb, const uint8_t* group, const uint8_t* x, size_t, float* out, int64_t, int n_rows) {
  constexpr int64_t kRec = packed_record_bytes(T);
  const int64_t x_d = nb * 32, x_c = nb * 36;  // offsets of the activation scales and corrections
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRec;
    if constexpr (kPrefetch) prefetch(rec + kPrefetchBytes32, kRec);
    __m512i w[8];
    decode32<T>(rec, w);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    const uint8_t* xq = x + b * 32;
    float dx;
    int32_t cx;
    std::memcpy(&dx, x + x_d + 4 * b, 4);
    std::memcpy(&cx, x + x_c + 4 * b, 4);
    __m512i i0 = _mm512_set1_epi32(kHasMin<T> ? 0 : cx), i1 = _mm512_setzero_si512();
    IGNIS_UNROLL for (int j = 0; j < 8; j += 2) {
      i0 = dpbusd_bcast(i0, w[j], xq + 4 * j);
      i1 = dpbusd_bcast(i1, w[j + 1], xq + 4 * j + 4);
    }
    i0 = _mm512_add_epi32(i0, i1);
    if constexpr (kHasMin<T>) {
      const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32)));
      acc = scale_add_min(acc, i0, dw, dx, mw, std::bit_cast<float>(cx));
    } else {
      acc = scale_add(acc, i0, dw, dx);
    }
  }
  store_rows(out, n_rows, acc);
}

// G row groups (G <= 2; the second at group + group_bytes) x NX tokens. NOTE: the one-group kernel
// above issues one load per vpdpbusd (the activation's broadcast) plus the weight chunks: about 10
// loads per 8 vpdpbusd, and loads, not vpdpbusd, bounded it on Zen 5 (two of each per cycle). Here
// each broadcast activation group feeds both row groups' chunks (a register broadcast, one load per
// two vpdpbusd) and the chunks are decoded as they are used. Per row and token the operations are
// those of packed_dot32, so the results are the same bits.
template <DType T, int G, int NX>
void packed_dot32_rg(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x, size_t x_stride,
                     float* out, int64_t out_stride, int n_rows_last) {
  constexpr int64_t kRec = packed_record_bytes(T);
  const int64_t x_d = nb * 32, x_c = nb * 36;
  const __m512i m0f = _mm512_set1_epi8(0x0f);
  __m512 acc[G][NX];
  IGNIS_UNROLL for (int g = 0; g < G; ++g) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[g][t] = _mm512_setzero_ps();
  [[maybe_unused]] const bool pf = NX == 1 && software_prefetch_pays_32<T>();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec[G];
    IGNIS_UNROLL for (int g = 0; g < G; ++g) rec[g] = group + g * group_bytes + b * kRec;
    if constexpr (NX == 1)
      if (pf) IGNIS_UNROLL for (int g = 0; g < G; ++g) prefetch(rec[g] + kPrefetchBytes32, kRec);
    [[maybe_unused]] __m512i qh[G];  // Q5_0 / Q5_1: the records' qh chunks
    if constexpr (kFifthBit<T>) IGNIS_UNROLL for (int g = 0; g < G; ++g) qh[g] = _mm512_loadu_si512(rec[g] + kQuantsAt<T> + 256);
    __m512i ia[G][NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      int32_t cx;
      std::memcpy(&cx, x + t * x_stride + x_c + 4 * b, 4);
      const __m512i c = _mm512_set1_epi32(kHasMin<T> ? 0 : cx);
      IGNIS_UNROLL for (int g = 0; g < G; ++g) ia[g][t] = c;
    }
    IGNIS_UNROLL for (int j = 0; j < 8; ++j) {
      __m512i w[G];
      IGNIS_UNROLL for (int g = 0; g < G; ++g) {
        if constexpr (T == DType::Q8_0) {
          w[g] = _mm512_loadu_si512(rec[g] + 32 + 64 * j);
        } else {
          const __m512i c = _mm512_loadu_si512(rec[g] + kQuantsAt<T> + 64 * (j / 2));
          const __m512i nib = (j % 2 == 0) ? c : _mm512_srli_epi16(c, 4);
          if constexpr (kFifthBit<T>)
            w[g] = q5_group_quants(nib, qh[g], j);
          else
            w[g] = _mm512_and_si512(nib, m0f);
        }
      }
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
        int32_t xv;
        std::memcpy(&xv, x + t * x_stride + b * 32 + 4 * j, 4);
        const __m512i bx = _mm512_set1_epi32(xv);
        IGNIS_UNROLL for (int g = 0; g < G; ++g) ia[g][t] = _mm512_dpbusd_epi32(ia[g][t], w[g], bx);
      }
    }
    __m512 dw[G];
    IGNIS_UNROLL for (int g = 0; g < G; ++g) dw[g] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec[g])));
    __m512 mw[G];
    if constexpr (kHasMin<T>)
      IGNIS_UNROLL for (int g = 0; g < G; ++g) mw[g] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec[g] + 32)));
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      float dx;
      std::memcpy(&dx, x + t * x_stride + x_d + 4 * b, 4);
      IGNIS_UNROLL for (int g = 0; g < G; ++g) {
        if constexpr (kHasMin<T>) {
          acc[g][t] = scale_add_min(acc[g][t], ia[g][t], dw[g], dx, mw[g], act32_sum(x + t * x_stride, nb, b));
        } else {
          acc[g][t] = scale_add(acc[g][t], ia[g][t], dw[g], dx);
        }
      }
    }
  }
  IGNIS_UNROLL for (int g = 0; g < G; ++g) IGNIS_UNROLL for (int t = 0; t < NX; ++t)
    store_rows(out + t * out_stride + 16 * g, g == G - 1 ? n_rows_last : 16, acc[g][t]);
}

// The PackedPairDotFn form of a kernel made for one (F1) and two (F2) row groups.
template <auto F1, auto F2>
void group_pair(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x, size_t x_stride, float* out,
                int64_t out_stride, int n_groups, int n_rows_last) {
  (n_groups == 2 ? F2 : F1)(nb, group, group_bytes, x, x_stride, out, out_stride, n_rows_last);
}

template <DType T, int NX>
void packed_dot32_pair(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x, size_t x_stride,
                       float* out, int64_t out_stride, int n_groups, int n_rows_last) {
  group_pair<packed_dot32_rg<T, 1, NX>, packed_dot32_rg<T, 2, NX>>(nb, group, group_bytes, x, x_stride, out,
                                                                   out_stride, n_groups, n_rows_last);
}

// The same on one row group, in the PackedDotFn form (dotn: the AMX path's tokens left under 64).
template <DType T, int NX>
void packed_dot32_n(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows) {
  packed_dot32_rg<T, 1, NX>(nb, group, 0, x, x_stride, out, out_stride, n_rows);
}

// ---- K-quants against Q8_K activations (+ the side array of packed.h) ----

// Q4_K, and Q5_K (K5: the same record with its qh chunks among the quants' chunks, packed.h).
// NOTE (Q5_K decode prefetch): without it a 1536 x 8960 Q5_K matvec from DRAM (40 copies) read 13-16
// GB/s on one Zen 5 core and 27-31 on two, half of Q4_K's rate, with the 5th bits' chunks before, after
// or among the others; with the record two ahead prefetched 30-33 and 54-61 (alternated 3x). The same
// prefetch on Q4_K measured within the noise (30-33 / 38-57 GB/s against 31-32 / 53-58).
// G row groups (the second group_bytes on) one super-block after the other: decode's two streams
// (ops.cpp). NOTE: the loop over the groups stays rolled; unrolled, GCC interleaved the two records'
// code and the 1.5B Q4_K_M file decoded 5% slower than one group at a time, rolled 3.5-5% faster (see
// BENCHMARKS.md, twenty-ninth session).
template <int NX, bool K5 = false, int G = 1>
void packed_dot_q4k_g(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x, size_t x_stride,
                      float* out, int64_t out_stride, int n_rows_last) {
  constexpr int64_t kRec = packed_record_bytes(K5 ? DType::Q5_K : DType::Q4_K);
  const __m512i m0f = _mm512_set1_epi8(0x0f);
  __m512 acc[G][NX];
  IGNIS_UNROLL for (int g = 0; g < G; ++g) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[g][t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) IGNIS_NO_UNROLL for (int g = 0; g < G; ++g) {
    const uint8_t* rec = group + g * group_bytes + s * kRec;
    const uint8_t* sc = rec + 64;
    const uint8_t* mn = rec + 64 + 128;
    const uint8_t* qs = rec + 64 + 256;
    __m512i isum[NX], msum[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = msum[t] = _mm512_setzero_si512();
    for (int i = 0; i < 4; ++i) {
      if constexpr (NX == 1 && K5)  // the record two ahead, a quarter of its 45 lines per step
        for (int l = 12 * i; l < 12 * i + 12; ++l)
          _mm_prefetch(reinterpret_cast<const char*>(rec + 2 * kRec + 64 * l), _MM_HINT_T0);
      __m512i a0[NX], a1[NX];
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) a0[t] = a1[t] = _mm512_setzero_si512();
      IGNIS_UNROLL for (int c = 0; c < 8; ++c) {
        __m512i lo, hi;
        if constexpr (K5) {
          const __m512i ch = _mm512_loadu_si512(rec + q5k_chunk_at(i, c));
          q5k_chunk_quants(ch, _mm512_loadu_si512(rec + q5k_qh_at(c)), i, lo, hi);
        } else {
          const __m512i ch = _mm512_loadu_si512(qs + (8 * i + c) * 64);
          lo = _mm512_and_si512(ch, m0f);
          hi = _mm512_and_si512(_mm512_srli_epi16(ch, 4), m0f);
        }
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
          const int8_t* xq = act_k(x + t * x_stride, s)->qs + 64 * i + 4 * c;
          a0[t] = dpbusd_bcast(a0[t], lo, reinterpret_cast<const uint8_t*>(xq));
          a1[t] = dpbusd_bcast(a1[t], hi, reinterpret_cast<const uint8_t*>(xq + 32));
        }
      }
      const __m512i s0 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 2 * i * 16)));
      const __m512i s1 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + (2 * i + 1) * 16)));
      const __m512i m = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mn + 32 * i)));
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
        isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(a0[t], s0), _mm512_mullo_epi32(a1[t], s1)));
        msum[t] = _mm512_dpwssd_epi32(msum[t], m, _mm512_set1_epi32(side_k(x + t * x_stride, nb, s)[i]));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32)));
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      acc[g][t] = scale_add_q4k(acc[g][t], isum[t], msum[t], d, dmin, act_k(x + t * x_stride, s)->d);
    }
  }
  IGNIS_UNROLL for (int g = 0; g < G; ++g) IGNIS_UNROLL for (int t = 0; t < NX; ++t)
    store_rows(out + t * out_stride + 16 * g, g == G - 1 ? n_rows_last : 16, acc[g][t]);
}
template <int NX, bool K5 = false>
void packed_dot_q4k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows) {
  packed_dot_q4k_g<NX, K5>(nb, group, 0, x, x_stride, out, out_stride, n_rows);
}

// Q2_K: per half hh of the super-block its 8 chunks stay in registers, and each sub-block pair i = 4 hh +
// s takes field s of chunks 0..3 (sub-block 2i) and 4..7 (2i + 1), finished by q2k_pair.
// NOTE (decode prefetch, Q2_K and Q3_K as Q5_K's): 1536 x 8960 matvecs from DRAM (20 copies) on Zen 5,
// at 1 / 2 threads: Q2_K 18-26 / 16-42 GB/s without, 22-29 / 45-58 with the record two ahead
// (alternated 3x); Q3_K 13.5-14 / 27-28 without in two runs (Q4_K 24-28 / 46-53 next to them), then
// 22-28 / 46-57 with.
template <int NX>
void packed_dot_q2k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows) {
  constexpr int64_t kRec = packed_record_bytes(DType::Q2_K);
  __m512 acc[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* rec = group + s * kRec;
    const uint8_t* qs = rec + 64 + 256;
    __m512i isum[NX], msum[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = msum[t] = _mm512_setzero_si512();
    for (int hh = 0; hh < 2; ++hh) {
      if constexpr (NX == 1)  // the record two ahead, half of its 21 lines per step
        for (int l = 11 * hh; l < std::min(11 * hh + 11, 21); ++l)
          _mm_prefetch(reinterpret_cast<const char*>(rec + 2 * kRec + 64 * l), _MM_HINT_T0);
      __m512i ch[8];
      IGNIS_UNROLL for (int c = 0; c < 8; ++c) ch[c] = _mm512_loadu_si512(qs + 64 * (8 * hh + c));
      IGNIS_UNROLL for (int f = 0; f < 4; ++f) {
        const int i = 4 * hh + f;
        __m512i a0[NX], a1[NX];
        q2k_pair_dots<NX>(ch, hh, f, x, x_stride, s, a0, a1);
        const __m512i v = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 64 + 32 * i)));
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) q2k_pair(a0[t], a1[t], v, side_k(x + t * x_stride, nb, s)[i], isum[t], msum[t]);
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32)));
    IGNIS_UNROLL for (int t = 0; t < NX; ++t)
      acc[t] = scale_add_q4k(acc[t], isum[t], msum[t], d, dmin, act_k(x + t * x_stride, s)->d);
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) store_rows(out + t * out_stride, n_rows, acc[t]);
}

// Q6_K, and Q3_K (its record has the same d and i8 scales; its quants come from lo / hi chunks).
// G row groups as packed_dot_q4k_g.
template <int NX, DType T = DType::Q6_K, int G = 1>
void packed_dot_q6k_g(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x, size_t x_stride,
                      float* out, int64_t out_stride, int n_rows_last) {
  constexpr int64_t kRec = packed_record_bytes(T);
  __m512 acc[G][NX];
  IGNIS_UNROLL for (int g = 0; g < G; ++g) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[g][t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) IGNIS_NO_UNROLL for (int g = 0; g < G; ++g) {
    const uint8_t* rec = group + g * group_bytes + s * kRec;
    const auto* sc = reinterpret_cast<const int8_t*>(rec + 32);
    const uint8_t* tri = rec + 32 + 256;  // triples of 192 bytes (Q6_K: ql h, ql h + 16, qh h)
    __m512i isum[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = _mm512_setzero_si512();
    // Sub-blocks j, j+4, j+8, j+12 (element groups 4j..4j+3 plus 16, 32, 48) together.
    for (int j = 0; j < 4; ++j) {
      if constexpr (NX == 1 && T == DType::Q3_K)  // the record two ahead, a quarter of its 29 lines per step
        for (int l = 8 * j; l < std::min(8 * j + 8, 29); ++l)
          _mm_prefetch(reinterpret_cast<const char*>(rec + 2 * kRec + 64 * l), _MM_HINT_T0);
      __m512i a[NX][4];
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
        const int32_t* sd = side_k(x + t * x_stride, nb, s);
        IGNIS_UNROLL for (int u = 0; u < 4; ++u) a[t][u] = _mm512_set1_epi32(sd[j + 4 * u]);
      }
      IGNIS_UNROLL for (int hh = 0; hh < 4; ++hh) {
        const int h = 4 * j + hh;
        __m512i q[4];
        if constexpr (T == DType::Q3_K) {
          q3k_quants(tri, h, q);
        } else {
          q6k_triple_quants(tri, h, q);
        }
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
          const auto* xq = reinterpret_cast<const uint8_t*>(act_k(x + t * x_stride, s)->qs);
          IGNIS_UNROLL for (int u = 0; u < 4; ++u) a[t][u] = dpbusd_bcast(a[t][u], q[u], xq + 4 * (h + 16 * u));
        }
      }
      IGNIS_UNROLL for (int u = 0; u < 4; ++u) {
        const __m512i scv = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + (j + 4 * u) * 16)));
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(a[t][u], scv));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      acc[g][t] = scale_add(acc[g][t], isum[t], d, act_k(x + t * x_stride, s)->d);
    }
  }
  IGNIS_UNROLL for (int g = 0; g < G; ++g) IGNIS_UNROLL for (int t = 0; t < NX; ++t)
    store_rows(out + t * out_stride + 16 * g, g == G - 1 ? n_rows_last : 16, acc[g][t]);
}
template <int NX, DType T = DType::Q6_K>
void packed_dot_q6k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows) {
  packed_dot_q6k_g<NX, T>(nb, group, 0, x, x_stride, out, out_stride, n_rows);
}

}  // namespace

PackedKernels packed_kernels_avx512(DType t) {
  // NOTE: the 32-element types' multi-token kernel keeps 2 groups x 6 tokens of integer and float
  // accumulators (6 tokens measured as 5; 4 slower); it replaced an 8-token one-group kernel that loads
  // bounded on Zen 5 (through matmul at 512 tokens on one core: Q4_0 896 x 9728 259-262 -> 286-301
  // GMAC/s, Q8_0 185-242 -> 222-280). The K-quants' per-sub-block accumulators fill the registers at 4
  // tokens; F16 takes kF16Tokens.
  constexpr int kPairTokens = 6;  // the rest kernels below take 1 to kPairTokens - 1 tokens
  auto with_pair = [](PackedKernels k, PackedPairDotFn pair) {
    k.dot1_pair = pair;
    return k;
  };
  auto k32 = [&]<DType T>() {
    const PackedKernels k{software_prefetch_pays_32<T>() ? packed_dot32<T, true> : packed_dot32<T, false>,
                          packed_dot32_n<T, kPairTokens>, kPairTokens, nullptr, packed_dot32_pair<T, kPairTokens>,
                          kPairTokens,
                          // the 1-5 tokens a prefill leaves over: a 20-token prompt's last 2 had taken the
                          // one-token kernel per row group, each reading the group's weights again
                          packed_pair_rest<packed_dot32_pair<T, 1>, packed_dot32_pair<T, 2>, packed_dot32_pair<T, 3>,
                                           packed_dot32_pair<T, 4>, packed_dot32_pair<T, 5>>};
    return with_pair(k, packed_dot32_pair<T, 1>);
  };
  switch (t) {
    case DType::Q4_0: return k32.template operator()<DType::Q4_0>();
    case DType::Q5_0: return k32.template operator()<DType::Q5_0>();
    case DType::Q4_1: return k32.template operator()<DType::Q4_1>();
    case DType::Q5_1: return k32.template operator()<DType::Q5_1>();
    case DType::Q8_0: return k32.template operator()<DType::Q8_0>();
    case DType::Q4_K:
      return with_pair(kquant_kernels<packed_dot_q4k<1>, packed_dot_q4k<2>, packed_dot_q4k<3>, packed_dot_q4k<4>>(),
                       group_pair<packed_dot_q4k_g<1, false, 1>, packed_dot_q4k_g<1, false, 2>>);
    case DType::Q5_K:
      return with_pair(kquant_kernels<packed_dot_q4k<1, true>, packed_dot_q4k<2, true>, packed_dot_q4k<3, true>,
                                      packed_dot_q4k<4, true>>(),
                       group_pair<packed_dot_q4k_g<1, true, 1>, packed_dot_q4k_g<1, true, 2>>);
    case DType::Q6_K:
      return with_pair(kquant_kernels<packed_dot_q6k<1>, packed_dot_q6k<2>, packed_dot_q6k<3>, packed_dot_q6k<4>>(),
                       group_pair<packed_dot_q6k_g<1, DType::Q6_K, 1>, packed_dot_q6k_g<1, DType::Q6_K, 2>>);
    case DType::Q2_K: return kquant_kernels<packed_dot_q2k<1>, packed_dot_q2k<2>, packed_dot_q2k<3>, packed_dot_q2k<4>>();
    case DType::Q3_K:
      return kquant_kernels<packed_dot_q6k<1, DType::Q3_K>, packed_dot_q6k<2, DType::Q3_K>, packed_dot_q6k<3, DType::Q3_K>,
                            packed_dot_q6k<4, DType::Q3_K>>();
    case DType::F16:
    case DType::BF16: return packed_kernels_float_avx512(t, false);
    default: return {};
  }
}

void pack_act_q8_0_avx512(const float* x, int64_t nb, int shift, uint8_t* dst, bool with_sum) {
  // NOTE: the per-block quantizer and pack_activation's scalar loop around it (the bytes' sum, copies
  // through a temporary) were 3.5% and 1.6% of Qwen2.5-0.5B Q4_0 pp512 at one thread on a 2-core Xeon
  // (perf record). Here 16 blocks at a time: one vector of their 16 maxima (reduce16), the scales and
  // their reciprocals by vector division, and the sums of the saturated quants the same way.
  auto* dx = reinterpret_cast<float*>(dst + nb * kQK);
  auto* cx = reinterpret_cast<int32_t*>(dst + nb * (kQK + 4));
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512i lo8 = _mm512_set1_epi32(-128);
  constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  auto max_op = [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); };
  auto add_op = [](__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  };
  for (int64_t b0 = 0; b0 < nb; b0 += 16) {
    const int n = static_cast<int>(std::min<int64_t>(16, nb - b0));
    const float* xb = x + b0 * kQK;
    // The scalar twin's max: |x| over the block, NaN lanes ignored (max keeps its second operand).
    __m512 m[16];
    for (int k = 0; k < 16; ++k) {
      if (k >= n) {
        m[k] = _mm512_setzero_ps();
        continue;
      }
      const __m512 v0 = _mm512_loadu_ps(xb + kQK * k), v1 = _mm512_loadu_ps(xb + kQK * k + 16);
      m[k] = _mm512_max_ps(_mm512_andnot_ps(sign, v1), _mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_setzero_ps()));
    }
    const __m512 amax = reduce16(m, max_op);
    const __m512 d = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
    const __mmask16 nz = _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_NEQ_OQ);
    alignas(64) float id[16];
    _mm512_store_ps(id, _mm512_maskz_div_ps(nz, _mm512_set1_ps(127.0f), amax));
    const __mmask16 live = static_cast<__mmask16>((1u << n) - 1);
    // dx: the f16 scale (rounded to nearest even, as f2h) widened back.
    _mm512_mask_storeu_ps(dx + b0, live, _mm512_cvtph_ps(_mm512_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT)));
    __m512 sums[16];
    for (int k = 0; k < 16; ++k) {
      if (k >= n) {
        sums[k] = _mm512_setzero_ps();
        continue;
      }
      const __m512 vid = _mm512_set1_ps(id[k]);
      const __m512i q0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + kQK * k), vid), kRne);
      const __m512i q1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + kQK * k + 16), vid), kRne);
      uint8_t* qs = dst + (b0 + k) * kQK;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), _mm512_cvtsepi32_epi8(q0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16), _mm512_cvtsepi32_epi8(q1));
      // The stored bytes' values: the narrowing saturates, and only NaN (INT_MIN) lies outside +-127.
      sums[k] = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_max_epi32(q0, lo8), _mm512_max_epi32(q1, lo8)));
    }
    const __m512i sum = _mm512_castps_si512(reduce16(sums, add_op));
    if (with_sum) {  // Q8_1's s: f16(sum * d), d the unrounded scale
      const __m512 sd = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), d);
      _mm512_mask_storeu_ps(cx + b0, live, _mm512_cvtph_ps(_mm512_cvtps_ph(sd, _MM_FROUND_TO_NEAREST_INT)));
    } else {
      _mm512_mask_storeu_epi32(cx + b0, live, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, shift)));
    }
  }
}

}  // namespace ignis::cpu
