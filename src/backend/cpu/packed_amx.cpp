// AMX-INT8 kernels for the packed 32-element types (Q4_0, Q5_0, Q8_0) and the K-quants Q4_K, Q6_K:
// prefill on Sapphire Rapids and later Xeons. (The K-quants at the end of the file; the description
// below is of the 32-element ones.)
//
// A packed record's chunks are already AMX's B-tile layout: chunk j holds elements 4j..4j+3 of each of
// the 16 rows, 4 bytes per row, which is row j of a K = 32 x N = 16 tile in the "VNNI" order tdpbssd
// reads. Once per call (for all the tiles of 16 tokens it is given) a row group's records are written
// out as signed bytes (q itself: Q8_0 without the + 128, Q4_0 / Q5_0 with their nibbles and fifth bits
// spread to bytes). The
// activation rows (ggml's Q8_0 quants, 32 bytes per block per token) are the A tile: 16 tokens x 32 bytes
// at the activation row stride. One tdpbssd gives a block's exact integer dots for 16 rows x 16 tokens;
// each token's row of the result takes one convert and one multiply-add with the 16 rows' scales times
// the token's activation scale (from the block-major table, so the 16 scales sit side by side). Those
// are the operations, in the order, of the AVX-512 one-token kernel (packed_avx512.cpp), whose exact
// integer dot (with its -off * sum correction) equals tdpbssd's, so every token's outputs are
// bit-identical to it.
//
// NOTE (measured on a 2-core Sapphire Rapids class VM, through matmul at 512 tokens): 1.17-1.37x the
// VNNI kernel's rate on one thread and 1.01-1.31x on two (the model's Q8_0 shapes). The result tile must
// be stored after every block (its scales differ per block, and a tdpbssd sums over all of K), and the
// vector loads of the scaling wait for that store; block b + 1's tile work is issued before block b is
// scaled. The two do not overlap at all on this core, dependent or not (bench/amx-step.cpp, TSC ticks
// per 16 x 16 x 32 step with everything in L1): tile work 26-27 (loads 10, tdpbssd 12-13, store 11-12),
// scaling 17-17.5 (10-10.5 without the multiply by the token's scale), together 45-49 whether the
// scaling reads the tile results or unrelated data; tdpbssd alone with the scaling 33-35. Tried on the same Xeon and dropped (Llama-3.2-1B
// Q4_0 pp512 at 2 threads): bf16 tiles of the integer quants on tdpbf16ps (their dots are exact in
// fp32, checked on 5 million random and extreme dots, and the floats need no convert) 523-545 -> 376-403
// t/s: the bf16 tiles are twice the bytes and the tile loads bound it; three result tiles in flight
// (blocks b + 1 and b + 2 issued before b is scaled) 544-548 -> 461-469.
//
// Thread safety: the tile configuration is loaded at the start of every call (the kernel keeps no tile
// state between calls) and released at its end; scratch is thread_local.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

#include "backend/cpu/packed.h"
#include "backend/cpu/packed_avx512.h"
#include "core/quant_blocks.h"

namespace ignis::cpu {
namespace {

#define IGNIS_UNROLL _Pragma("GCC unroll 16")

constexpr int kTileTokens = kAmxTileTokens;  // A tile rows
constexpr int64_t kUnpacked = 512;  // bytes of one block's B tile: 8 rows of 64
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

// Tile registers: 0, 1 results (16 tokens x 16 rows int32), 2, 3 activations (16 tokens x 32 bytes),
// 4, 5 weights (8 rows x 64 bytes); even for even blocks, odd for odd ones.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 32, 32, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 8, 8};
};

// Writes nb records' weights as signed bytes (q itself, without the packed layout's + off) in B tiles of
// 8 x 64 bytes, so the tile loads of every token tile read ready bytes and tdpbssd gives the exact dot
// with no correction term.
template <DType T>
__attribute__((always_inline)) inline void unpack_b(int64_t nb, const uint8_t* group, uint8_t* dst) {
  const __m512i m0f = _mm512_set1_epi8(0x0f);
  const __m512i off = _mm512_set1_epi8(T == DType::Q8_0 ? -128 : T == DType::Q5_0 ? 16 : 8);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * packed_record_bytes(T);
    uint8_t* o = dst + b * kUnpacked;
    if constexpr (T == DType::Q8_0) {
      IGNIS_UNROLL for (int j = 0; j < 8; ++j)
        _mm512_store_si512(o + 64 * j, _mm512_xor_si512(_mm512_loadu_si512(rec + 32 + 64 * j), off));
      continue;
    }
    IGNIS_UNROLL for (int m = 0; m < 4; ++m) {
      const __m512i c = _mm512_loadu_si512(rec + 32 + 64 * m);
      __m512i lo = _mm512_and_si512(c, m0f), hi = _mm512_and_si512(_mm512_srli_epi16(c, 4), m0f);
      if constexpr (T == DType::Q5_0) {
        const __m512i qh = _mm512_loadu_si512(rec + 32 + 256);
        lo = q5_group_quants(lo, qh, 2 * m);
        hi = q5_group_quants(hi, qh, 2 * m + 1);
      }
      _mm512_store_si512(o + 128 * m, _mm512_sub_epi8(lo, off));
      _mm512_store_si512(o + 128 * m + 64, _mm512_sub_epi8(hi, off));
    }
  }
}

// Stores result tiles 2p and 2p + 1 (the two of parity p in the kernels that keep four) to c[p].
__attribute__((always_inline)) inline void store_results(int64_t p, int32_t (&c)[2][2][kTileTokens * 16]) {
  if (p == 0) {
    _tile_stored(0, c[0][0], 64);
    _tile_stored(1, c[0][1], 64);
  } else {
    _tile_stored(2, c[1][0], 64);
    _tile_stored(3, c[1][1], 64);
  }
}

// Per token of the tile: acc[m] += float(c[m]) * (dw * dx[m]), the AVX-512 one-token kernel's block
// step (its integer dot, correction included, equals c[m]); dx: the block's 16 activation scales.
inline void scale_block(const int32_t* c, const float* dx, __m512 dw, __m512 acc[kTileTokens]) {
  IGNIS_UNROLL for (int m = 0; m < kTileTokens; ++m)
    acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * m)), _mm512_mul_ps(dw, _mm512_set1_ps(dx[m])),
                             acc[m]);
}

// n_tiles tiles of 16 tokens against one row group: out[t * out_stride + k] for t < 16 n_tiles, k < n_rows.
template <DType T>
void amx_dot32(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, const uint8_t* scales, float* out,
               int64_t out_stride, int n_rows, int n_tiles) {
  constexpr int64_t kRec = packed_record_bytes(T);
  struct alignas(64) Line {
    uint8_t b[64];
  };
  thread_local std::vector<Line> scratch;
  if (scratch.size() < static_cast<size_t>(nb) * (kUnpacked / 64)) scratch.resize(static_cast<size_t>(nb) * (kUnpacked / 64));
  const auto* bt = reinterpret_cast<const uint8_t*>(scratch.data());
  auto* bw = reinterpret_cast<uint8_t*>(scratch.data());
  // Block b's weights into the scratch tiles (during the first token tile; see the NOTE below).
  auto unpack = [&](int64_t b) { unpack_b<T>(1, group + b * kRec, bw + b * kUnpacked); };
  static const TileConfig cfg;
  _tile_loadconfig(&cfg);
  const __mmask16 row_mask = n_rows >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n_rows) - 1);
  alignas(64) int32_t c[2][kTileTokens * 16];
  for (int tt = 0; tt < n_tiles; ++tt) {
    const uint8_t* xt = x + tt * kTileTokens * x_stride;
    const auto* dxs = reinterpret_cast<const float*>(scales + tt * amx_table_bytes(nb, kTileTokens));
    __m512 acc[kTileTokens];
    IGNIS_UNROLL for (int m = 0; m < kTileTokens; ++m) acc[m] = _mm512_setzero_ps();
    auto dw = [&](int64_t b) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + b * kRec)));
    };
    // Block b's products into result tile b % 2 (the tile numbers are immediates).
    auto issue = [&](int64_t b) {
      if (b % 2 == 0) {
        _tile_zero(0);
        _tile_loadd(2, xt + b * 32, x_stride);
        _tile_loadd(4, bt + b * kUnpacked, 64);
        _tile_dpbssd(0, 2, 4);
      } else {
        _tile_zero(1);
        _tile_loadd(3, xt + b * 32, x_stride);
        _tile_loadd(5, bt + b * kUnpacked, 64);
        _tile_dpbssd(1, 3, 5);
      }
    };
    // NOTE: block b + 1's tile work is issued before block b's results are scaled, so the tile unit runs
    // while the vector units scale. (The accumulators must stay in registers: scaling from a lambda
    // called in two places made GCC keep them in memory, and that cost more than AMX saved.)
    // The first token tile unpacks the weights a block ahead of its tile work, which then overlaps it.
    const bool first = tt == 0;
    if (first) unpack(0);
    issue(0);
    if (first && nb > 1) unpack(1);
    for (int64_t b = 0; b < nb; ++b) {
      if (b % 2 == 0) {
        _tile_stored(0, c[0], 64);
      } else {
        _tile_stored(1, c[1], 64);
      }
      if (b + 1 < nb) issue(b + 1);
      if (first && b + 2 < nb) unpack(b + 2);
      scale_block(c[b % 2], dxs + b * kTileTokens, dw(b), acc);
    }
    IGNIS_UNROLL for (int m = 0; m < kTileTokens; ++m)
      _mm512_mask_storeu_ps(out + (tt * kTileTokens + m) * out_stride, row_mask, acc[m]);
  }
  _tile_release();
}

// Two row groups (the second at group + group_bytes, n_rows_last rows of it) against n_tiles token
// tiles: each activation tile load serves both groups' tile products.
// NOTE: the activation tiles come from L2 (a token tile's activations are read once per call), and
// loading them was about a third of the tile work; shared by two groups, the kernel through its
// steps (16 tokens x 16 rows x 32 elements) took 44-45 instead of 50-58 cycles in a microbenchmark of
// Q8_0 at the 0.5B and 1.5B FFN shapes. The 32 accumulators fill the vector registers; GCC keeps them.
template <DType T>
void amx_dot32_two(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x, size_t x_stride,
                   const uint8_t* scales, float* out, int64_t out_stride, int n_rows_last, int n_tiles) {
  constexpr int64_t kRec = packed_record_bytes(T);
  struct alignas(64) Line {
    uint8_t b[64];
  };
  thread_local std::vector<Line> scratch;
  const size_t lines = static_cast<size_t>(2 * nb) * (kUnpacked / 64);
  if (scratch.size() < lines) scratch.resize(lines);
  const auto* bt = reinterpret_cast<const uint8_t*>(scratch.data());
  auto* bw = reinterpret_cast<uint8_t*>(scratch.data());
  const int64_t second = nb * kUnpacked;  // the second group's weight tiles in the scratch
  const uint8_t* group2 = group + group_bytes;
  auto unpack = [&](int64_t b) {
    unpack_b<T>(1, group + b * kRec, bw + b * kUnpacked);
    unpack_b<T>(1, group2 + b * kRec, bw + second + b * kUnpacked);
  };
  // Tiles 0, 1: results of the two groups for even blocks, 2, 3 for odd ones; 4, 5 activations (even,
  // odd blocks); 6, 7 the two groups' weights.
  static const TileConfig cfg = [] {
    TileConfig c;
    const uint16_t colsb[8] = {64, 64, 64, 64, 32, 32, 64, 64};
    const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, 8, 8};
    for (int i = 0; i < 8; ++i) c.colsb[i] = colsb[i], c.rows[i] = rows[i];
    return c;
  }();
  _tile_loadconfig(&cfg);
  const __mmask16 mask2 = n_rows_last >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n_rows_last) - 1);
  alignas(64) int32_t c[2][2][kTileTokens * 16];  // [parity][group]
  // (The first token tile, which unpacks, and the others are separate loops: the unpacking's registers
  // in the others' loop made GCC spill accumulators.)
  auto tile = [&]<bool first>(int tt) {
    const uint8_t* xt = x + tt * kTileTokens * x_stride;
    const auto* dxs = reinterpret_cast<const float*>(scales + tt * amx_table_bytes(nb, kTileTokens));
    __m512 acc[kTileTokens], acc2[kTileTokens];
    IGNIS_UNROLL for (int m = 0; m < kTileTokens; ++m) acc[m] = _mm512_setzero_ps(), acc2[m] = _mm512_setzero_ps();
    auto dw = [&](const uint8_t* g, int64_t b) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + b * kRec)));
    };
    auto issue = [&](int64_t b) {
      const uint8_t* w0 = bt + b * kUnpacked;
      if (b % 2 == 0) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_loadd(4, xt + b * 32, x_stride);
        _tile_loadd(6, w0, 64);
        _tile_dpbssd(0, 4, 6);
        _tile_loadd(7, w0 + second, 64);
        _tile_dpbssd(1, 4, 7);
      } else {
        _tile_zero(2);
        _tile_zero(3);
        _tile_loadd(5, xt + b * 32, x_stride);
        _tile_loadd(6, w0, 64);
        _tile_dpbssd(2, 5, 6);
        _tile_loadd(7, w0 + second, 64);
        _tile_dpbssd(3, 5, 7);
      }
    };
    if (first) unpack(0);
    issue(0);
    if (first && nb > 1) unpack(1);
    for (int64_t b = 0; b < nb; ++b) {
      store_results(b % 2, c);
      if (b + 1 < nb) issue(b + 1);
      if (first && b + 2 < nb) unpack(b + 2);
      scale_block(c[b % 2][0], dxs + b * kTileTokens, dw(group, b), acc);
      scale_block(c[b % 2][1], dxs + b * kTileTokens, dw(group2, b), acc2);
    }
    IGNIS_UNROLL for (int m = 0; m < kTileTokens; ++m) {
      float* o = out + (tt * kTileTokens + m) * out_stride;
      _mm512_storeu_ps(o, acc[m]);
      _mm512_mask_storeu_ps(o + 16, mask2, acc2[m]);
    }
  };
  if (n_tiles > 0) tile.template operator()<true>(0);
  for (int tt = 1; tt < n_tiles; ++tt) tile.template operator()<false>(tt);
  _tile_release();
}

// dott: one or two groups (tile_groups is 2 for Q8_0 and Q4_0: see packed_kernels_amx). Q4_0 takes two
// groups in one pass only for rows of up to kQ4TwoGroupBlocks blocks, and longer rows a group at a time.
constexpr int64_t kQ4TwoGroupBlocks = 32;
template <DType T>
void amx_dot32_groups(int64_t nb, const uint8_t* group, size_t group_bytes, int n_groups, const uint8_t* x,
                      size_t x_stride, const uint8_t* scales, float* out, int64_t out_stride, int n_rows_last,
                      int n_tiles) {
  if (n_groups == 2) {
    if (T == DType::Q8_0 || nb <= kQ4TwoGroupBlocks)
      return amx_dot32_two<T>(nb, group, group_bytes, x, x_stride, scales, out, out_stride, n_rows_last, n_tiles);
    amx_dot32<T>(nb, group, x, x_stride, scales, out, out_stride, 16, n_tiles);
    group += group_bytes, out += 16;
  }
  amx_dot32<T>(nb, group, x, x_stride, scales, out, out_stride, n_rows_last, n_tiles);
}

// ---- Q4_K and Q6_K ----
// NOTE (scales in the weights): a sub-block's integer scale multiplies its weights before the tile
// product, v = scale x q (Q4_K: 0..945; Q6_K: scale x (q - 32), -4,064..4,096), written as two byte
// digits v = 256 hi + lo (lo unsigned, hi unsigned for Q4_K and signed for Q6_K). Two tile products per
// 64 elements (tdpbsud for lo; tdpbsud / tdpbssd for hi) then sum a whole super-block's scaled dots
// exactly in the tiles, and its integer sum is lo + 256 hi, the same integer the VNNI kernels form
// sub-block by sub-block (sum of scale x dot). So the result tiles are stored once per super-block, not
// once per sub-block with a multiply per token (the former Q4_K kernel stored 8 and multiplied 128
// vectors per super-block and 16 tokens), and Q6_K's 16-element sub-blocks cost nothing extra.
// Qwen2.5-1.5B Q4_K_M pp512 on a 2-core Xeon, alternated twice against the binary before: 1 thread
// 141-145 -> 182-183 t/s, 2 threads 281-286 -> 360-368; Qwen2.5-0.5B Q4_K_M 2 threads 979-1020 ->
// 1061-1108.
// Digit tiles of a super-block: [4 chunks of 64 elements][lo, hi][16 tile rows][16 weight rows x 4].
constexpr int64_t kDigitTile = 1024;  // one 16 x 64-byte B tile
constexpr int64_t kSuperTiles = 8 * kDigitTile;  // per super-block

// A sub-block's scales (signed bytes, s: one per byte of a tile row) ready for scaled_digits: the even
// and the odd bytes alone (maddubs operands), and for Q6_K 32 x s in the 16-bit lanes of each.
struct RowScales {
  __m512i even, odd, even32, odd32;
};
inline RowScales row_scales(__m512i s) {
  const __m512i m_lo = _mm512_set1_epi16(0x00ff);
  return {_mm512_and_si512(s, m_lo), _mm512_andnot_si512(m_lo, s),
          _mm512_slli_epi16(_mm512_srai_epi16(_mm512_slli_epi16(s, 8), 8), 5),
          _mm512_slli_epi16(_mm512_srai_epi16(s, 8), 5)};
}

// Writes the digits of v = s x q (Q4_K: q unsigned) or s x (q - 32) (Q6_K: q = the stored q + 32,
// 0..63) as the lo and hi tile rows at lo, lo + kDigitTile. maddubs of q with the even (odd) bytes of
// s gives the even (odd) bytes' products in 16-bit lanes (at most 63 x 128: no saturation).
// NOTE: 8 vector operations per 64 digits of each kind, against 14 with sign extension and vpmullw;
// Qwen2.5-1.5B Q4_K_M pp64 at 2 threads (where a call unpacks for 4 token tiles), alternated 3 times:
// 360-363 -> 366-367 t/s; pp512 within the noise (the unpacking overlaps the tile work there).
template <bool Offset32>
inline void scaled_digits(__m512i q, const RowScales& s, uint8_t* lo) {
  __m512i ve = _mm512_maddubs_epi16(q, s.even), vo = _mm512_maddubs_epi16(q, s.odd);
  if constexpr (Offset32) ve = _mm512_sub_epi16(ve, s.even32), vo = _mm512_sub_epi16(vo, s.odd32);
  // Byte 2k of a row: the low (high) byte of ve's lane k; byte 2k + 1: vo's. The high byte of a 16-bit
  // two's complement lane is floor(v / 256), the signed digit.
  constexpr __mmask64 kOdd = 0xaaaaaaaaaaaaaaaaull;
  _mm512_store_si512(lo, _mm512_mask_blend_epi8(kOdd, ve, _mm512_slli_epi16(vo, 8)));
  _mm512_store_si512(lo + kDigitTile, _mm512_mask_blend_epi8(kOdd, _mm512_srli_epi16(ve, 8), vo));
}

template <DType T>
void unpack_digits(int64_t nb, const uint8_t* group, uint8_t* dst) {
  constexpr int64_t kRec = packed_record_bytes(T);
  const __m512i m0f = _mm512_set1_epi8(0x0f);
  // Byte b of a tile row belongs to weight row b / 4: the index vector of row_scales.
  alignas(64) static const auto kRowOf = [] {
    std::array<uint8_t, 64> r{};
    for (int b = 0; b < 64; ++b) r[b] = static_cast<uint8_t>(b / 4);
    return r;
  }();
  const __m512i row_of = _mm512_load_si512(kRowOf.data());
  auto scales = [&](const uint8_t* sc) {
    return _mm512_permutexvar_epi8(row_of, _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc))));
  };
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* rec = group + s * kRec;
    uint8_t* o = dst + s * kSuperTiles;
    if constexpr (T == DType::Q4_K) {
      // Chunk (i, c): low nibbles = sub-block 2i group c (tile row c of chunk i), high = sub-block 2i + 1
      // group c (tile row 8 + c).
      const uint8_t* sc = rec + 64;
      const uint8_t* qs = rec + 64 + 256;
      for (int i = 0; i < 4; ++i) {
        const RowScales s0 = row_scales(scales(sc + 2 * i * 16)), s1 = row_scales(scales(sc + (2 * i + 1) * 16));
        IGNIS_UNROLL for (int c = 0; c < 8; ++c) {
          const __m512i ch = _mm512_loadu_si512(qs + (8 * i + c) * 64);
          scaled_digits<false>(_mm512_and_si512(ch, m0f), s0, o + i * 2 * kDigitTile + 64 * c);
          scaled_digits<false>(_mm512_and_si512(_mm512_srli_epi16(ch, 4), m0f), s1, o + i * 2 * kDigitTile + 64 * (8 + c));
        }
      }
    } else {
      // Triple h holds groups h, h + 16, h + 32, h + 48: tile row h of chunks 0..3; group 16u + h is in
      // sub-block 4u + h / 4.
      const uint8_t* sc = rec + 32;
      const uint8_t* tri = rec + 32 + 256;
      for (int hq = 0; hq < 4; ++hq) {
        RowScales rs[4];
        IGNIS_UNROLL for (int u = 0; u < 4; ++u) rs[u] = row_scales(scales(sc + (4 * u + hq) * 16));
        IGNIS_UNROLL for (int hh = 0; hh < 4; ++hh) {
          const int h = 4 * hq + hh;
          __m512i q[4];
          q6k_triple_quants(tri, h, q);
          IGNIS_UNROLL for (int u = 0; u < 4; ++u) scaled_digits<true>(q[u], rs[u], o + u * 2 * kDigitTile + 64 * h);
        }
      }
    }
  }
}

// n_tiles tiles of 16 tokens of Q8_K activations (packed.h) against one Q4_K or Q6_K row group. Per
// super-block and token the exact integer sum of scale x dot comes from the digit tiles; then the
// AVX-512 one-token kernel's float steps in its order (packed_avx512.cpp packed_dot_q4k, packed_dot_q6k:
// Q4_K's mins' sum from the activation's 32-element sums, then d and dmin; Q6_K's d): every output is
// bit-identical to it.
template <DType T>
void amx_dot_k(int64_t nb, const uint8_t* group, size_t, int, const uint8_t* x, size_t x_stride, const uint8_t*,
               float* out, int64_t out_stride, int n_rows, int n_tiles) {
  constexpr int64_t kRec = packed_record_bytes(T);
  constexpr int64_t kAct = sizeof(BlockQ8_K);
  struct alignas(64) Line {
    uint8_t b[64];
  };
  thread_local std::vector<Line> scratch;
  const size_t lines = static_cast<size_t>(nb) * (kSuperTiles / 64);
  if (scratch.size() < lines) scratch.resize(lines);
  const auto* bt = reinterpret_cast<const uint8_t*>(scratch.data());
  auto* bw = reinterpret_cast<uint8_t*>(scratch.data());
  // NOTE: the first token tile writes each super-block's digit tiles one super-block ahead of its tile
  // work, so the unpacking (about 800 vector operations per super-block) overlaps the tile unit instead
  // of preceding all of it. pp512 at 2 threads, alternated twice: Qwen2.5-1.5B Q4_K_M 377-378 -> 390-400
  // t/s; the same for the 32-element kernel: Qwen2.5-0.5B Q4_0 1141-1198 -> 1277-1289, Llama-3.2-1B
  // Q4_0 573-578 -> 581-608.
  auto unpack = [&](int64_t s) { unpack_digits<T>(1, group + s * kRec, bw + s * kSuperTiles); };
  // Tiles 0, 1: lo and hi sums of even super-blocks, 2, 3 of odd ones; 4, 7: activations (16 tokens x
  // 64 bytes); 5, 6: lo and hi digits.
  static const TileConfig cfg = [] {
    TileConfig c;
    for (int i = 0; i < 8; ++i) c.colsb[i] = 64, c.rows[i] = 16;
    return c;
  }();
  _tile_loadconfig(&cfg);
  const __mmask16 row_mask = n_rows >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n_rows) - 1);
  alignas(64) int32_t c[2][2][kTileTokens * 16];  // [parity][lo, hi]
  alignas(64) float acc[kTileTokens * 16];
  for (int tt = 0; tt < n_tiles; ++tt) {
    const uint8_t* xt = x + tt * kTileTokens * x_stride;
    std::fill(acc, acc + kTileTokens * 16, 0.0f);
    // Super-block s's products into tiles 2 (s % 2) and 2 (s % 2) + 1 (tile numbers are immediates).
    auto issue = [&](int64_t s) {
      const uint8_t* xa = xt + s * kAct + offsetof(BlockQ8_K, qs);
      const uint8_t* bs = bt + s * kSuperTiles;
      // (The tile intrinsics take their tile numbers as literal tokens, hence a macro.)
#define IGNIS_DIGIT_CHUNK(C0, C1, A, i)                      \
  _tile_loadd(A, xa + 64 * (i), x_stride);                   \
  _tile_loadd(5, bs + 2 * (i) * kDigitTile, 64);             \
  _tile_loadd(6, bs + (2 * (i) + 1) * kDigitTile, 64);       \
  _tile_dpbsud(C0, A, 5);                                    \
  if constexpr (T == DType::Q4_K) {                          \
    _tile_dpbsud(C1, A, 6);                                  \
  } else {                                                   \
    _tile_dpbssd(C1, A, 6);                                  \
  }
#define IGNIS_DIGIT_SUPER(C0, C1)     \
  _tile_zero(C0);                     \
  _tile_zero(C1);                     \
  IGNIS_DIGIT_CHUNK(C0, C1, 4, 0)     \
  IGNIS_DIGIT_CHUNK(C0, C1, 7, 1)     \
  IGNIS_DIGIT_CHUNK(C0, C1, 4, 2)     \
  IGNIS_DIGIT_CHUNK(C0, C1, 7, 3)
      if (s % 2 == 0) {
        IGNIS_DIGIT_SUPER(0, 1)
      } else {
        IGNIS_DIGIT_SUPER(2, 3)
      }
#undef IGNIS_DIGIT_SUPER
#undef IGNIS_DIGIT_CHUNK
    };
    const bool first = tt == 0;
    if (first) unpack(0);
    issue(0);
    if (first && nb > 1) unpack(1);
    for (int64_t s = 0; s < nb; ++s) {
      const int p = static_cast<int>(s % 2);
      store_results(p, c);
      if (s + 1 < nb) issue(s + 1);
      if (first && s + 2 < nb) unpack(s + 2);
      const uint8_t* rec = group + s * kRec;
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
      if constexpr (T == DType::Q4_K) {
        const uint8_t* mn = rec + 64 + 128;
        __m512i mins[4];
        IGNIS_UNROLL for (int i = 0; i < 4; ++i)
          mins[i] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mn + 32 * i)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32)));
        IGNIS_UNROLL for (int m = 0; m < kTileTokens; ++m) {
          const uint8_t* xr = xt + m * x_stride;
          const auto* side = reinterpret_cast<const int32_t*>(xr + nb * kAct) + 16 * s;
          __m512i msum = _mm512_setzero_si512();
          IGNIS_UNROLL for (int i = 0; i < 4; ++i) msum = _mm512_dpwssd_epi32(msum, mins[i], _mm512_set1_epi32(side[i]));
          const __m512i isum = _mm512_add_epi32(_mm512_load_si512(c[p][0] + 16 * m),
                                                _mm512_slli_epi32(_mm512_load_si512(c[p][1] + 16 * m), 8));
          float dxs;
          std::memcpy(&dxs, xr + s * kAct, 4);
          const __m512 dx = _mm512_set1_ps(dxs);
          __m512 a = _mm512_load_ps(acc + 16 * m);
          a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, dx), a);
          a = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, dx), a);
          _mm512_store_ps(acc + 16 * m, a);
        }
      } else {
        IGNIS_UNROLL for (int m = 0; m < kTileTokens; ++m) {
          const uint8_t* xr = xt + m * x_stride;
          const __m512i isum = _mm512_add_epi32(_mm512_load_si512(c[p][0] + 16 * m),
                                                _mm512_slli_epi32(_mm512_load_si512(c[p][1] + 16 * m), 8));
          float dxs;
          std::memcpy(&dxs, xr + s * kAct, 4);
          const __m512 a = _mm512_load_ps(acc + 16 * m);
          _mm512_store_ps(acc + 16 * m, _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, _mm512_set1_ps(dxs)), a));
        }
      }
    }
    IGNIS_UNROLL for (int m = 0; m < kTileTokens; ++m)
      _mm512_mask_storeu_ps(out + (tt * kTileTokens + m) * out_stride, row_mask, _mm512_load_ps(acc + 16 * m));
  }
  _tile_release();
}

bool cpu_has_amx_int8() {
  unsigned a, b, c, d;
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
  const bool tile = (d >> 24) & 1, int8 = (d >> 25) & 1;
  if (!tile || !int8) return false;
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
  if (!((c >> 27) & 1)) return false;  // OSXSAVE
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((lo >> 17) & 3) == 3;  // XTILECFG and XTILEDATA enabled by the OS
}

}  // namespace

size_t amx_table_bytes(int64_t nb, int64_t n_tokens) {
  return static_cast<size_t>(((n_tokens + kTileTokens - 1) / kTileTokens) * nb * kTileTokens * 4);
}

void amx_table_column(const uint8_t* x_row, int64_t nb, int64_t t, uint8_t* table) {
  auto* dxs = reinterpret_cast<float*>(table + (t / kTileTokens) * amx_table_bytes(nb, kTileTokens));
  const int64_t m = t % kTileTokens;
  for (int64_t b = 0; b < nb; ++b) std::memcpy(&dxs[b * kTileTokens + m], x_row + nb * 32 + 4 * b, 4);
}

bool amx_bf16_supported() {
  // (Once: cpuid traps to the hypervisor on a VM, and products ask for their kernels on every call.)
  static const bool ok = [] {
    if (!amx_supported()) return false;
    unsigned a, b, c, d;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    return ((d >> 22) & 1) != 0;
  }();
  return ok;
}

bool amx_supported() {
  // NOTE: Linux hands out the 8 KiB tile state only to processes that ask (ARCH_REQ_XCOMP_PERM); the
  // permission covers every thread of the process, so one request before the first kernel suffices.
  static const bool ok = cpu_has_amx_int8() && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return ok;
}

PackedKernels packed_kernels_amx(DType t) {
  PackedKernels k = packed_kernels_avx512(t);
  switch (t) {
    // NOTE: Q5_0 one group at a time, Q4_0 two only for rows of up to 32 blocks (amx_dot32_groups), Q8_0
    // two. pp512 at 1 thread on a 2-vCPU Xeon, alternated: Q4_0 two groups for every row length took
    // Qwen2.5-1.5B Q4_0 from 221-240 to 210 t/s; with the rows' blocks taken in spans of 32 (so that the
    // two groups' unpacked weights stay in L1) still 191-193 -> 167-172, and Llama-3.2-1B Q4_0 279-280
    // -> 257-269. For rows of up to 32 blocks alone, Qwen2.5-0.5B Q4_0 (896-element rows) 529-573 ->
    // 553-591, the others unchanged. Q8_0 two groups: 0.5B 632-679 -> 716-746.
    case DType::Q4_0: k.dott = amx_dot32_groups<DType::Q4_0>, k.tile_groups = 2; break;
    case DType::Q5_0: k.dott = amx_dot32_groups<DType::Q5_0>; break;
    case DType::Q8_0: k.dott = amx_dot32_groups<DType::Q8_0>, k.tile_groups = 2; break;
    case DType::Q4_K: k.dott = amx_dot_k<DType::Q4_K>; break;
    case DType::Q6_K: k.dott = amx_dot_k<DType::Q6_K>; break;
    case DType::F16:
      if (amx_bf16_supported()) k = packed_kernels_f16_amx(false);
      break;
    default: break;
  }
  return k;
}

}  // namespace ignis::cpu
