// AVX-512 helpers shared by the packed kernels that read the same packed records (packed_avx512.cpp, the
// VNNI kernels, and packed_amx.cpp, which unpacks records into AMX tiles). Include only from files built
// with AVX-512 (and GFNI) flags. Pure inline functions: thread-safe.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/dtype.h"
#include "core/quant_blocks.h"

namespace ignis::cpu {

// Of a K-quant product's packed activation row xt (packed.h): super-block s's Q8_K block, and its side
// array's 16 int32 entries.
inline const BlockQ8_K* act_k(const uint8_t* xt, int64_t s) {
  return reinterpret_cast<const BlockQ8_K*>(xt + s * sizeof(BlockQ8_K));
}
inline const int32_t* side_k(const uint8_t* xt, int64_t nb, int64_t s) {
  return reinterpret_cast<const int32_t*>(xt + nb * sizeof(BlockQ8_K)) + 16 * s;
}

// acc += w . (p's 4 bytes in every lane), with the broadcast folded into vpdpbusd's memory operand
// ({1to16}): GCC emits a separate vpbroadcastd per use otherwise, one extra instruction per vpdpbusd.
inline __m512i dpbusd_bcast(__m512i acc, __m512i w, const uint8_t* p) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
}

inline void store_rows(float* out, int n_rows, __m512 v) {
  const __mmask16 k = n_rows >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n_rows) - 1);
  _mm512_mask_storeu_ps(out, k, v);
}

// The float steps of the VNNI kernels, one definition for those on packed records (packed_avx512.cpp)
// and those on ggml's rows (packed_rows_avx512.cpp), so that both round alike: a block's (super-block's)
// exact integer dots, one per row, times the rows' scales dw and the token's scale dx, added to acc.
inline __m512 scale_add(__m512 acc, __m512i dots, __m512 dw, float dx) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc);
}
// Q4_1 / Q5_1: the scaled dots, then the rows' mins mw times the token's block sum sx (Q8_1's s).
inline __m512 scale_add_min(__m512 acc, __m512i dots, __m512 dw, float dx, __m512 mw, float sx) {
  return _mm512_fmadd_ps(mw, _mm512_set1_ps(sx), scale_add(acc, dots, dw, dx));
}
// The 32-element types' record traits (packed.h): a min per row (Q4_1, Q5_1), a qh chunk of 5th bits (Q5_0,
// Q5_1), and where the quant chunks start (after the f16 scales, and the mins).
template <DType T>
constexpr bool kHasMin = T == DType::Q4_1 || T == DType::Q5_1;
template <DType T>
constexpr bool kFifthBit = T == DType::Q5_0 || T == DType::Q5_1;
template <DType T>
constexpr int64_t kQuantsAt = kHasMin<T> ? 64 : 32;
// Q4_K: the scaled dots, then the mins' sums times dmin.
inline __m512 scale_add_q4k(__m512 acc, __m512i isum, __m512i msum, __m512 d, __m512 dmin, float dx) {
  const __m512 vdx = _mm512_set1_ps(dx);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, vdx), acc);
  return _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, vdx), acc);
}

// The bit matrix of vgf2p8affineqb that moves each byte's bits [from, from + n) to [to, to + n) and
// clears the others (row 7 - i of the matrix: the input bits that make output bit i).
constexpr uint64_t gf_move_bits(int from, int to, int n) {
  uint64_t m = 0;
  for (int k = 0; k < n; ++k) m |= uint64_t{1} << (from + k) << (8 * (7 - (to + k)));
  return m;
}

// The quants (q + 32, 0..63, one byte per element) of triple h of a packed Q6_K record (packed.h; tri:
// the record's first triple): q[u] = element group h + 16u of the 16 rows.
// NOTE (GFNI): vgf2p8affineqb moves a byte's bit field in one instruction, where a 16-bit shift also
// drags in the next byte's bits and needs an AND to clear them: 5 moves and 4 merges per triple against
// 17 shifts, ANDs and ORs. On Zen 5, 1536 x 4096 from L3 on one core 88 -> 110-113 GMAC/s; the output head
// of Qwen2.5-1.5B (1536 x 151,936) from DRAM on one core 35.8-39.6 -> 39.7-42.3 GB/s (alternated 3x).
inline void q6k_triple_quants(const uint8_t* tri, int h, __m512i q[4]) {
  const __m512i n1 = _mm512_loadu_si512(tri + 192 * h), n2 = _mm512_loadu_si512(tri + 192 * h + 64);
  const __m512i hb = _mm512_loadu_si512(tri + 192 * h + 128);
  const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
  auto move = [](__m512i v, int from, int to, int n) {
    return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(static_cast<long long>(gf_move_bits(from, to, n))), 0);
  };
  q[0] = _mm512_ternarylogic_epi32(n1, move(hb, 0, 4, 2), m0f, 0xEC);  // (n1 & 0x0f) | bits
  q[1] = _mm512_ternarylogic_epi32(n2, move(hb, 2, 4, 2), m0f, 0xEC);
  q[2] = _mm512_ternarylogic_epi32(move(n1, 4, 0, 4), hb, m30, 0xF8);  // nibble | (hb & 0x30)
  q[3] = _mm512_or_si512(move(n2, 4, 0, 4), move(hb, 6, 4, 2));
}

// The quants (q + 4, 0..7, one byte per element) of element groups h + 16u of a packed Q3_K record
// (packed.h; tri: the record's first triple), as q6k_triple_quants gives Q6_K's: the low 2 bits from
// lo(h), the high bit 4 (h % 2) + u of hi(h / 2) moved to bit 2.
inline void q3k_quants(const uint8_t* tri, int h, __m512i q[4]) {
  const __m512i lo = _mm512_loadu_si512(tri + 192 * (h / 2) + 64 * (h % 2));
  const __m512i hi = _mm512_loadu_si512(tri + 192 * (h / 2) + 128);
  const __m512i m03 = _mm512_set1_epi8(0x03);
  for (int u = 0; u < 4; ++u) {
    const __m512i bit = _mm512_gf2p8affine_epi64_epi8(
        hi, _mm512_set1_epi64(static_cast<long long>(gf_move_bits(4 * (h % 2) + u, 2, 1))), 0);
    q[u] = _mm512_ternarylogic_epi32(u ? _mm512_srli_epi16(lo, 2 * u) : lo, bit, m03, 0xEC);  // (lo & 3) | bit
  }
}

// Q2_K's sub-block pair i, for the packed kernel and the rows kernel alike: the 16 rows' dots of
// sub-blocks 2i (a0) and 2i + 1 (a1) times their 4-bit scales, added to isum; the mins times the token's
// pair of 16-element sums (side: the two int16) added to msum. v holds per row the pair's two bytes
// (scale | min << 4) as two int16. (A sub-block's dot of 16 quants 0..3 and int8 activations fits int16.)
inline void q2k_pair(__m512i a0, __m512i a1, __m512i v, int32_t side, __m512i& isum, __m512i& msum) {
  const __m512i m0f = _mm512_set1_epi16(0x0f);
  const __m512i dots = _mm512_mask_blend_epi16(0xAAAAAAAAu, a0, _mm512_slli_epi32(a1, 16));
  isum = _mm512_dpwssd_epi32(isum, dots, _mm512_and_si512(v, m0f));
  msum = _mm512_dpwssd_epi32(msum, _mm512_srli_epi16(v, 4), _mm512_set1_epi32(side));
}

// Element group g's quants (0..31) of a packed Q5_0 / Q5_1 record: the nibbles nib (a chunk for even g,
// the chunk shifted right by 4 for odd g; bits above the low nibble are dropped) with bit g of each
// byte of the record's qh chunk moved to bit 4.
// NOTE (GFNI): the 5th bits were 8 64-bit masks per record, each a kmovq load and a masked add; in the
// two-row-group decode kernel that ran Qwen2.5-0.5B Q5_1 tg128 at 2 threads at 75 t/s against 123 for
// Q4_1 (perf: 44% of the kernel's samples at one stall after the first kmovq). With one qh chunk, the
// same A/B alternated twice on Zen 5: 84.8, 69.5 -> 93.2, 85.4 t/s (Q4_1 110-113 then); pp512 at one
// thread 595-624 -> 638-640. A prefetch two records ahead on top measured within the noise.
inline __m512i q5_group_quants(__m512i nib, __m512i qh, int g) {
  const __m512i bit = _mm512_gf2p8affine_epi64_epi8(qh, _mm512_set1_epi64(static_cast<long long>(gf_move_bits(g, 4, 1))), 0);
  return _mm512_ternarylogic_epi32(nib, bit, _mm512_set1_epi8(0x0f), 0xEC);  // (nib & 0x0f) | bit
}

// Q2_K's dots of sub-block pair i = 4 hh + f of super-block s, for the packed and the rows kernel alike:
// ch holds half hh's 8 chunks (ggml's qs dwords 8 hh .. 8 hh + 7 of the 16 rows); field f of chunks 0..3
// is sub-block 2i, of chunks 4..7 sub-block 2i + 1; a0 / a1 get each token's dots with them.
template <int NX>
inline void q2k_pair_dots(const __m512i ch[8], int hh, int f, const uint8_t* x, size_t x_stride, int64_t s,
                          __m512i a0[NX], __m512i a1[NX]) {
  const __m512i m03 = _mm512_set1_epi8(0x03);
  _Pragma("GCC unroll 8") for (int t = 0; t < NX; ++t) a0[t] = a1[t] = _mm512_setzero_si512();
  _Pragma("GCC unroll 4") for (int c = 0; c < 4; ++c) {
    const __m512i qa = _mm512_and_si512(f ? _mm512_srli_epi16(ch[c], 2 * f) : ch[c], m03);
    const __m512i qb = _mm512_and_si512(f ? _mm512_srli_epi16(ch[c + 4], 2 * f) : ch[c + 4], m03);
    _Pragma("GCC unroll 8") for (int t = 0; t < NX; ++t) {
      const auto* xq = reinterpret_cast<const uint8_t*>(act_k(x + t * x_stride, s)->qs) + 4 * (32 * hh + 8 * f + c);
      a0[t] = dpbusd_bcast(a0[t], qa, xq);
      a1[t] = dpbusd_bcast(a1[t], qb, xq + 16);
    }
  }
}

// The quants (0..31) of chunk (i, c) of a packed Q5_K record (packed.h) from the chunk ch and qh chunk c:
// the low (high) nibbles with bit 2i (2i + 1) of each qh byte moved to bit 4.
inline void q5k_chunk_quants(__m512i ch, __m512i qh, int i, __m512i& lo, __m512i& hi) {
  const __m512i m0f = _mm512_set1_epi8(0x0f);
  auto fifth = [&](int bit) {
    return _mm512_gf2p8affine_epi64_epi8(qh, _mm512_set1_epi64(static_cast<long long>(gf_move_bits(bit, 4, 1))), 0);
  };
  lo = _mm512_ternarylogic_epi32(ch, fifth(2 * i), m0f, 0xEC);  // (ch & 0x0f) | bit
  hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ch, 4), fifth(2 * i + 1), m0f, 0xEC);
}

// Lane i of the result: the reduction of v[i]'s 16 lanes by op (a commutative, associative operation
// on these values, on float lanes: max, or integer add through casts); 30 shuffles and 15 ops for 16
// reductions, against 16 x (4 shuffles + 4 ops) one vector at a time.
template <class Op>
inline __m512 reduce16(const __m512 v[16], Op op) {
  __m512 a[8], b[4], c[2];
  for (int i = 0; i < 8; ++i)  // 256-bit halves: lanes 0-7 of a[i] reduce v[2i], 8-15 v[2i + 1]
    a[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xee));
  for (int i = 0; i < 4; ++i)  // 128-bit lane L of b[i] reduces v[4i + L]
    b[i] = op(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x88), _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xdd));
  for (int i = 0; i < 2; ++i)  // floats 0, 1 of lane L: v[8i + L]; 2, 3: v[8i + 4 + L]
    c[i] = op(_mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0x44), _mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0xee));
  // Float j of lane L: v[4j + L]; the permutation puts v[i] at lane i.
  const __m512 d = op(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xdd));
  return _mm512_permutexvar_ps(_mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0), d);
}

}  // namespace ignis::cpu
