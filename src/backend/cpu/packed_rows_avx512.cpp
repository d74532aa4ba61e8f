// AVX-512 VNNI kernels on ggml's rows in place, for the packed types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K) while PackedStore makes their packed copy in the background (copied_in_background, packed.h).
//
// A "group" here is 16 consecutive rows of ggml blocks. Per block (super-block) the kernels build, in
// registers, exactly the vectors the packed kernels load from a record: for every 4-element group
// one int32 lane per row holding its 4 unsigned quants (q + off), the rows' f16 scales as one vector,
// the K-quants' sub-block scales and mins per row. The 16 rows' bytes come in by 4 x 4 dword
// transposes within 128-bit lanes (16 loads of 16 bytes and 8 unpacks give 4 vectors), the per-row
// scales by gathers. The integer dots are then exact as in the packed kernels, and the float steps
// are the same functions (packed_avx512.h: scale_add, scale_add_q4k) in the same order per row and
// token, so a product has the same bits before and after the copy exists (tests: Packed.*).
// Rows past n_rows in the last group read row n_rows - 1 again; their lanes are not stored.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "backend/cpu/packed.h"
#include "backend/cpu/packed_avx512.h"
#include "core/quant_blocks.h"

namespace ignis::cpu {
namespace {

#define IGNIS_UNROLL _Pragma("GCC unroll 8")

// The 16 rows of a group and their byte offsets from the first (64-bit: gathers take them as is).
struct Rows {
  const uint8_t* r[kPackRows];
  __m512i off_lo, off_hi;  // rows 0-7, 8-15
  const char* next;        // the next group (consecutive in memory: a thread's next group in decode)
  int64_t next_lines;      // cache lines of it to prefetch per block
  Rows(const uint8_t* group, size_t row_bytes, int n_rows, int64_t nb)
      : next(reinterpret_cast<const char*>(group + kPackRows * row_bytes)),
        next_lines((static_cast<int64_t>(kPackRows * row_bytes) / 64 + nb) / nb) {
    alignas(64) int64_t o[kPackRows];
    for (int k = 0; k < kPackRows; ++k) {
      o[k] = static_cast<int64_t>(row_bytes) * std::min(k, n_rows - 1);
      r[k] = group + o[k];
    }
    off_lo = _mm512_load_si512(o);
    off_hi = _mm512_load_si512(o + 8);
  }
  // NOTE: the 16 rows are 16 streams each advancing one block per step, which the hardware prefetcher
  // followed slowly: a Q8_0 896 x 4864 matvec from DRAM read 5.9 GB/s on one Zen 5 core (44 GB/s from
  // L3). So the next group (the rows that follow, one region) is prefetched front to back, spread over
  // this group's blocks. (Prefetches past the matrix do not fault.)
  // NOTE: an asm prefetch: GCC 12 deletes a loop of a run-time trip count whose body is only
  // _mm_prefetch (a loop without side effects, -ffinite-loops), and this one had been compiled to
  // nothing: Q8_0 1536 x 8960 from DRAM (`IGNIS_BENCH_ROWS=1 ignis-bench-matmul q8_0 1536 8960 1 T 20 8`)
  // read 8.6 GB/s at 1 thread and 14.3 at 2.
  void prefetch_next(int64_t b) const {
    for (int64_t l = b * next_lines; l < (b + 1) * next_lines; ++l) asm volatile("prefetcht0 %0" : : "m"(next[64 * l]));
  }
  // Lane k: the 4 bytes at row k + at.
  __m512i gather32(size_t at) const {
    const uint8_t* base = r[0] + at;
    const __m256i lo = _mm512_i64gather_epi32(off_lo, base, 1), hi = _mm512_i64gather_epi32(off_hi, base, 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  // The 16 rows' f16 at row + at as floats (low half of the gathered dword, or the high half).
  __m512 f16s(size_t at, bool high = false) const {
    __m512i v = gather32(at);
    if (high) v = _mm512_srli_epi32(v, 16);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
  }
  // out[c] lane k: dword c of the 16 bytes at row k + at.
  void t4(size_t at, __m512i out[4]) const {
    __m512i z[4];
    IGNIS_UNROLL for (int i = 0; i < 4; ++i) {
      __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[i] + at)));
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[i + 4] + at)), 1);
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[i + 8] + at)), 2);
      z[i] = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[i + 12] + at)), 3);
    }
    // 128-bit lane l of z[i]: row i + 4l; after the transpose lane l of out[c] holds rows 4l..4l+3.
    const __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]), a3 = _mm512_unpackhi_epi32(z[2], z[3]);
    out[0] = _mm512_unpacklo_epi64(a0, a2);
    out[1] = _mm512_unpackhi_epi64(a0, a2);
    out[2] = _mm512_unpacklo_epi64(a1, a3);
    out[3] = _mm512_unpackhi_epi64(a1, a3);
  }
};

// ---- 32-element blocks: the 8 element groups' chunks (decode32's) and the rows' scales ----

template <DType T>
constexpr size_t kBlockBytes = T == DType::Q4_0   ? sizeof(BlockQ4_0)
                               : T == DType::Q4_1 ? sizeof(BlockQ4_1)
                               : T == DType::Q5_0 ? sizeof(BlockQ5_0)
                               : T == DType::Q5_1 ? sizeof(BlockQ5_1)
                                                  : sizeof(BlockQ8_0);
// Where a block's qs (and Q5_0 / Q5_1's qh) start.
template <DType T>
constexpr size_t kQsAt = T == DType::Q4_0 ? offsetof(BlockQ4_0, qs)
                         : T == DType::Q4_1 ? offsetof(BlockQ4_1, qs)
                         : T == DType::Q5_0 ? offsetof(BlockQ5_0, qs)
                                            : offsetof(BlockQ5_1, qs);
template <DType T>
constexpr size_t kQhAt = T == DType::Q5_0 ? offsetof(BlockQ5_0, qh) : offsetof(BlockQ5_1, qh);

// Returns the rows' scales; Q4_1 / Q5_1 also their mins in *mw.
template <DType T>
inline __m512 rows_block32(const Rows& rows, int64_t b, __m512i w[8], __m512* mw = nullptr) {
  const size_t at = static_cast<size_t>(b) * kBlockBytes<T>;
  if constexpr (T == DType::Q8_0) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));  // q + 128
    rows.t4(at + 2, w);
    rows.t4(at + 18, w + 4);
    IGNIS_UNROLL for (int j = 0; j < 8; ++j) w[j] = _mm512_xor_si512(w[j], flip);
  } else {
    // qs byte i: element i (low nibble), element i + 16 (high): dword c holds groups c and c + 4.
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    __m512i u[4];
    rows.t4(at + kQsAt<T>, u);
    IGNIS_UNROLL for (int c = 0; c < 4; ++c) {
      w[c] = _mm512_and_si512(u[c], m0f);
      w[c + 4] = _mm512_and_si512(_mm512_srli_epi16(u[c], 4), m0f);
    }
    if constexpr (kFifthBit<T>) {
      // Bit 4g + j of qh: the 5th bit of element 4g + j, to bit 4 of byte j (a 16-entry table).
      alignas(64) static constexpr uint32_t kSpread[16] = {
          0x00000000, 0x00000010, 0x00001000, 0x00001010, 0x00100000, 0x00100010, 0x00101000, 0x00101010,
          0x10000000, 0x10000010, 0x10001000, 0x10001010, 0x10100000, 0x10100010, 0x10101000, 0x10101010};
      const __m512i spread = _mm512_load_si512(kSpread), m4 = _mm512_set1_epi32(0xf);
      const __m512i qh = rows.gather32(at + kQhAt<T>);
      IGNIS_UNROLL for (int g = 0; g < 8; ++g)
        w[g] = _mm512_or_si512(w[g], _mm512_permutexvar_epi32(_mm512_and_si512(_mm512_srli_epi32(qh, 4 * g), m4), spread));
    }
  }
  if constexpr (kHasMin<T>) *mw = rows.f16s(at, true);  // d and m: the block's first dword
  return rows.f16s(at);
}

// NX tokens (1 to 6); per row and token the integer dots and float steps of packed_dot32.
template <DType T, int NX>
void rows_dot32(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                int n_rows) {
  const Rows rows(group, static_cast<size_t>(nb) * kBlockBytes<T>, n_rows, nb);
  __m512 acc[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    rows.prefetch_next(b);
    __m512i w[8];
    __m512 mw;
    const __m512 dw = rows_block32<T>(rows, b, w, &mw);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const uint8_t* xt = x + t * x_stride;
      __m512i i0 = _mm512_set1_epi32(kHasMin<T> ? 0 : act32_correction(xt, nb, b));
      IGNIS_UNROLL for (int j = 0; j < 8; ++j) i0 = dpbusd_bcast(i0, w[j], xt + b * 32 + 4 * j);
      if constexpr (kHasMin<T>) {
        acc[t] = scale_add_min(acc[t], i0, dw, act32_scale(xt, nb, b), mw, act32_sum(xt, nb, b));
      } else {
        acc[t] = scale_add(acc[t], i0, dw, act32_scale(xt, nb, b));
      }
    }
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) store_rows(out + t * out_stride, n_rows, acc[t]);
}

// ---- K-quants against Q8_K activations (the side array of packed.h) ----

// Per super-block: sub-block scales and mins from the 12 scale bytes (k4_scale_min on every lane),
// then per pair i of sub-blocks the chunks (i, c) of packed.h, dword c of qs[32i..32i+31].
// Q5_K (K5): the same with qs 32 bytes further on, after qh, whose dword c (bytes 4c..4c+3) per row is
// the packed record's qh chunk c.
template <int NX, bool K5 = false>
void rows_dot_q4k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                  int n_rows) {
  constexpr size_t kBlock = K5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  constexpr size_t kQs = K5 ? offsetof(BlockQ5_K, qs) : offsetof(BlockQ4_K, qs);
  const Rows rows(group, static_cast<size_t>(nb) * kBlock, n_rows, nb);
  const __m512i m0f = _mm512_set1_epi8(0x0f), m3f = _mm512_set1_epi32(63), m03 = _mm512_set1_epi32(3);
  __m512 acc[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const size_t at = static_cast<size_t>(s) * kBlock;
    rows.prefetch_next(s);
    __m512i qh[8];
    if constexpr (K5) {
      rows.t4(at + offsetof(BlockQ5_K, qh), qh);
      rows.t4(at + offsetof(BlockQ5_K, qh) + 16, qh + 4);
    }
    const __m512i q0 = rows.gather32(at + 4), q1 = rows.gather32(at + 8), q2 = rows.gather32(at + 12);
    // Scale / min j of every row as an int32 lane.
    auto scale = [&](int j) {
      if (j < 4) return _mm512_and_si512(_mm512_srli_epi32(q0, 8 * j), m3f);
      const int b = 8 * (j - 4);
      return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(q2, b), _mm512_set1_epi32(0xf)),
                             _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(q0, b + 6), m03), 4));
    };
    auto min = [&](int j) {
      if (j < 4) return _mm512_and_si512(_mm512_srli_epi32(q1, 8 * j), m3f);
      const int b = 8 * (j - 4);
      return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(q2, b + 4), _mm512_set1_epi32(0xf)),
                             _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(q1, b + 6), m03), 4));
    };
    __m512i isum[NX], msum[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = msum[t] = _mm512_setzero_si512();
    IGNIS_UNROLL for (int i = 0; i < 4; ++i) {
      __m512i ch[8];
      rows.t4(at + kQs + 32 * i, ch);
      rows.t4(at + kQs + 16 + 32 * i, ch + 4);
      __m512i a0[NX], a1[NX];
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) a0[t] = a1[t] = _mm512_setzero_si512();
      IGNIS_UNROLL for (int c = 0; c < 8; ++c) {
        __m512i lo, hi;
        if constexpr (K5) {
          q5k_chunk_quants(ch[c], qh[c], i, lo, hi);
        } else {
          lo = _mm512_and_si512(ch[c], m0f);
          hi = _mm512_and_si512(_mm512_srli_epi16(ch[c], 4), m0f);
        }
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
          const int8_t* xq = act_k(x + t * x_stride, s)->qs + 64 * i + 4 * c;
          a0[t] = dpbusd_bcast(a0[t], lo, reinterpret_cast<const uint8_t*>(xq));
          a1[t] = dpbusd_bcast(a1[t], hi, reinterpret_cast<const uint8_t*>(xq + 32));
        }
      }
      const __m512i s0 = scale(2 * i), s1 = scale(2 * i + 1);
      const __m512i m = _mm512_or_si512(min(2 * i), _mm512_slli_epi32(min(2 * i + 1), 16));  // int16 pairs
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
        isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(a0[t], s0), _mm512_mullo_epi32(a1[t], s1)));
        msum[t] = _mm512_dpwssd_epi32(msum[t], m, _mm512_set1_epi32(side_k(x + t * x_stride, nb, s)[i]));
      }
    }
    const __m512 d = rows.f16s(at), dmin = rows.f16s(at, true);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t)
      acc[t] = scale_add_q4k(acc[t], isum[t], msum[t], d, dmin, act_k(x + t * x_stride, s)->d);
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) store_rows(out + t * out_stride, n_rows, acc[t]);
}

// The super-block walk Q6_K and Q3_K share on ggml's rows (both end in their f16 d): per j < 4, element
// groups h = 4j + hh (hh < 4) against sub-blocks j + 4u, each dot started from the activation's side
// entry, then times its int8 scale (scales(rows, at, sc): dword u of sc holds sub-blocks 4u..4u+3), and
// the super-block's sum times d. load(rows, at, j) returns quants(hh, q[4]): the quants of element groups
// h + 16u, as packed_dot_q6k takes them.
template <int NX, size_t kBlock, class Scales, class Load>
void rows_dot_q6k_shape(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                        int64_t out_stride, int n_rows, Scales&& scales, Load&& load) {
  const Rows rows(group, static_cast<size_t>(nb) * kBlock, n_rows, nb);
  __m512 acc[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const size_t at = static_cast<size_t>(s) * kBlock;
    rows.prefetch_next(s);
    __m512i sc[4];
    scales(rows, at, sc);
    __m512i isum[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) {
      __m512i a[NX][4];
      IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
        const int32_t* sd = side_k(x + t * x_stride, nb, s);
        IGNIS_UNROLL for (int u = 0; u < 4; ++u) a[t][u] = _mm512_set1_epi32(sd[j + 4 * u]);
      }
      const auto quants = load(rows, at, j);
      IGNIS_UNROLL for (int hh = 0; hh < 4; ++hh) {
        const int h = 4 * j + hh;
        __m512i q[4];
        quants(hh, q);
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
          const auto* xq = reinterpret_cast<const uint8_t*>(act_k(x + t * x_stride, s)->qs);
          IGNIS_UNROLL for (int u = 0; u < 4; ++u) a[t][u] = dpbusd_bcast(a[t][u], q[u], xq + 4 * (h + 16 * u));
        }
      }
      IGNIS_UNROLL for (int u = 0; u < 4; ++u) {
        const __m512i scv = _mm512_srai_epi32(_mm512_slli_epi32(sc[u], 24 - 8 * j), 24);  // byte j, sign-extended
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(a[t][u], scv));
      }
    }
    // d: the high half of the dword ending the block (a gather of the last 4 bytes stays inside it).
    const __m512 d = rows.f16s(at + kBlock - 4, true);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[t] = scale_add(acc[t], isum[t], d, act_k(x + t * x_stride, s)->d);
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) store_rows(out + t * out_stride, n_rows, acc[t]);
}

// Element group h + 16u (u < 4) of a Q6_K super-block is ql dword h of half u / 2 (high nibbles for odd
// u) with 2 bits of qh dword h % 8 of that half (shifted by 2 (h / 8) + 4 (u % 2)).
template <int NX>
void rows_dot_q6k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                  int n_rows) {
  auto scales = [](const Rows& rows, size_t at, __m512i sc[4]) { rows.t4(at + offsetof(BlockQ6_K, scales), sc); };
  auto load = [](const Rows& rows, size_t at, int j) {
    struct Quants {
      __m512i ql[2][4], qh[2][4];
      int j;
      void operator()(int hh, __m512i q[4]) const {
        const __m512i m0f = _mm512_set1_epi8(0x0f), m03 = _mm512_set1_epi8(0x03);
        IGNIS_UNROLL for (int u = 0; u < 4; ++u) {
          const __m512i l = ql[u / 2][hh], hb = qh[u / 2][hh];
          const __m512i lo = _mm512_and_si512(u % 2 ? _mm512_srli_epi16(l, 4) : l, m0f);
          const int sh = 2 * (j / 2) + 4 * (u % 2);
          q[u] = _mm512_or_si512(lo, _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hb, sh), m03), 4));
        }
      }
    } qs;
    qs.j = j;
    IGNIS_UNROLL for (int half = 0; half < 2; ++half) {
      rows.t4(at + 64 * half + 16 * j, qs.ql[half]);
      rows.t4(at + offsetof(BlockQ6_K, qh) + 32 * half + 16 * (j % 2), qs.qh[half]);
    }
    return qs;
  };
  rows_dot_q6k_shape<NX, sizeof(BlockQ6_K)>(nb, group, x, x_stride, out, out_stride, n_rows, scales, load);
}

// Q3_K: element group h + 16u (u < 4) has its low bits in qs dword 8 (u / 2) + h % 8 at bits 2 (h / 8 +
// 2 (u % 2)) of each byte and its high bits in hmask dword h % 8 at bit 4 (u / 2) + 2 (u % 2) + h / 8
// (ggml: element 128 a + 32 b + l has qs[32 a + l] >> 2 b and bit 4 a + b of hmask[l]); the i8 scales
// come from the 12 packed bytes.
template <int NX>
void rows_dot_q3k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                  int n_rows) {
  auto scales = [](const Rows& rows, size_t at, __m512i sc[4]) {
    // The 16 scales (q3k_scales): dword u of sc holds sub-blocks 4u..4u+3, each minus 32.
    const __m512i m03 = _mm512_set1_epi8(0x03), m0f = _mm512_set1_epi8(0x0f);
    const size_t sa = at + offsetof(BlockQ3_K, scales);
    const __m512i w0 = rows.gather32(sa), w1 = rows.gather32(sa + 4), w2 = rows.gather32(sa + 8);
    sc[0] = _mm512_ternarylogic_epi32(w0, _mm512_slli_epi32(_mm512_and_si512(w2, m03), 4), m0f, 0xEC);
    sc[1] = _mm512_ternarylogic_epi32(w1, _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w2, 2), m03), 4), m0f, 0xEC);
    sc[2] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(w0, 4), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w2, 4), m03), 4), m0f, 0xEC);
    sc[3] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(w1, 4), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w2, 6), m03), 4), m0f, 0xEC);
    IGNIS_UNROLL for (int u = 0; u < 4; ++u) sc[u] = _mm512_sub_epi8(sc[u], _mm512_set1_epi8(32));
  };
  auto load = [](const Rows& rows, size_t at, int j) {
    struct Quants {
      __m512i ql[2][4], hm[4];
      int j;
      void operator()(int hh, __m512i q[4]) const {
        auto move = [](__m512i v, int from, int to, int n) {
          return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(static_cast<long long>(gf_move_bits(from, to, n))), 0);
        };
        const int h = 4 * j + hh;
        IGNIS_UNROLL for (int u = 0; u < 4; ++u) {
          const __m512i lo = move(ql[u / 2][hh], 2 * (h / 8 + 2 * (u % 2)), 0, 2);
          q[u] = _mm512_or_si512(lo, move(hm[hh], 4 * (u / 2) + 2 * (u % 2) + h / 8, 2, 1));
        }
      }
    } qs;
    qs.j = j;
    IGNIS_UNROLL for (int half = 0; half < 2; ++half) rows.t4(at + offsetof(BlockQ3_K, qs) + 32 * half + 16 * (j % 2), qs.ql[half]);
    rows.t4(at + offsetof(BlockQ3_K, hmask) + 16 * (j % 2), qs.hm);
    return qs;
  };
  rows_dot_q6k_shape<NX, sizeof(BlockQ3_K)>(nb, group, x, x_stride, out, out_stride, n_rows, scales, load);
}

// Q2_K: ggml's qs dwords are the packed record's chunks (packed.h), so the same loop as packed_dot_q2k;
// the pair's scale bytes (dword i / 2 of the scales, its low or high half) spread to two int16.
template <int NX>
void rows_dot_q2k(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                  int n_rows) {
  const Rows rows(group, static_cast<size_t>(nb) * sizeof(BlockQ2_K), n_rows, nb);
  const __m512i lo8 = _mm512_set1_epi32(0xff);
  __m512 acc[NX];
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const size_t at = static_cast<size_t>(s) * sizeof(BlockQ2_K);
    rows.prefetch_next(s);
    __m512i sc[4];  // dword u: the scale bytes of sub-blocks 4u..4u+3
    rows.t4(at + offsetof(BlockQ2_K, scales), sc);
    __m512i isum[NX], msum[NX];
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) isum[t] = msum[t] = _mm512_setzero_si512();
    for (int hh = 0; hh < 2; ++hh) {
      __m512i ch[8];
      rows.t4(at + offsetof(BlockQ2_K, qs) + 32 * hh, ch);
      rows.t4(at + offsetof(BlockQ2_K, qs) + 32 * hh + 16, ch + 4);
      IGNIS_UNROLL for (int f = 0; f < 4; ++f) {
        const int i = 4 * hh + f;
        __m512i a0[NX], a1[NX];
        q2k_pair_dots<NX>(ch, hh, f, x, x_stride, s, a0, a1);
        const __m512i half = _mm512_srli_epi32(sc[i / 2], 16 * (i % 2));
        const __m512i v = _mm512_or_si512(_mm512_and_si512(half, lo8), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(half, 8), lo8), 16));
        IGNIS_UNROLL for (int t = 0; t < NX; ++t) q2k_pair(a0[t], a1[t], v, side_k(x + t * x_stride, nb, s)[i], isum[t], msum[t]);
      }
    }
    const __m512 d = rows.f16s(at + offsetof(BlockQ2_K, d)), dmin = rows.f16s(at + offsetof(BlockQ2_K, d), true);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t)
      acc[t] = scale_add_q4k(acc[t], isum[t], msum[t], d, dmin, act_k(x + t * x_stride, s)->d);
  }
  IGNIS_UNROLL for (int t = 0; t < NX; ++t) store_rows(out + t * out_stride, n_rows, acc[t]);
}

template <DType T>
PackedKernels kernels32() {
  PackedKernels k{rows_dot32<T, 1>, rows_dot32<T, 6>, 6};
  k.dotn_rest = packed_dot_rest<rows_dot32<T, 1>, rows_dot32<T, 2>, rows_dot32<T, 3>, rows_dot32<T, 4>, rows_dot32<T, 5>>;
  return k;
}

}  // namespace

PackedKernels packed_kernels_rows_avx512(DType t) {
  switch (t) {
    case DType::Q4_0: return kernels32<DType::Q4_0>();
    case DType::Q5_0: return kernels32<DType::Q5_0>();
    case DType::Q4_1: return kernels32<DType::Q4_1>();
    case DType::Q5_1: return kernels32<DType::Q5_1>();
    case DType::Q8_0: return kernels32<DType::Q8_0>();
    case DType::Q4_K: return kquant_kernels<rows_dot_q4k<1>, rows_dot_q4k<2>, rows_dot_q4k<3>, rows_dot_q4k<4>>();
    case DType::Q5_K:
      return kquant_kernels<rows_dot_q4k<1, true>, rows_dot_q4k<2, true>, rows_dot_q4k<3, true>,
                            rows_dot_q4k<4, true>>();
    case DType::Q6_K: return kquant_kernels<rows_dot_q6k<1>, rows_dot_q6k<2>, rows_dot_q6k<3>, rows_dot_q6k<4>>();
    case DType::Q2_K: return kquant_kernels<rows_dot_q2k<1>, rows_dot_q2k<2>, rows_dot_q2k<3>, rows_dot_q2k<4>>();
    case DType::Q3_K: return kquant_kernels<rows_dot_q3k<1>, rows_dot_q3k<2>, rows_dot_q3k<3>, rows_dot_q3k<4>>();
    case DType::F16:
    case DType::BF16: return packed_kernels_float_avx512(t, true);
    default: return {};
  }
}

}  // namespace ignis::cpu
