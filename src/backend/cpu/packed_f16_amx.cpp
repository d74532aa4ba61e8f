// F16 products on AMX-BF16 (Sapphire Rapids and later Xeons): prefill and decode, one kernel.
//
// Every f16 value v splits exactly into two bf16 numbers, v = h + l: h keeps the top 8 of its 11
// significant bits (its f32 bits truncated to 16), l the other 3 (v - h, exact in bf16; bf16's exponent
// range covers f16's subnormals). The activations are rounded to f16 first, as ggml-cpu multiplies F16
// weights, so both operands split exactly, and the four tile products wh.xh + wl.xh + wh.xl + wl.xl give
// every product w.x exactly (bf16 x bf16 is exact in f32); only the f32 accumulation rounds, as in the
// FMA kernels. The four tdpbf16ps of a 32-element chunk cost 44 cycles for 16 tokens x 16 rows, against
// 256 cycles of AVX-512 FMAs.
//
// Bits: tdpbf16ps' accumulation order matches no IEEE model that AVX-512 could reproduce (BENCHMARKS.md,
// sixth session), so on a CPU with AMX-BF16 every F16 product goes through this kernel: one token (decode)
// as an A tile of one row, prefill as tiles of 16. An element of a tile product depends only on its own
// row and column, so a token's outputs are the same bits in any tile and alone.
//
// Layout (packed in the background after load; PackedStore in packed.cpp): rows in groups of 16 (the
// last padded with zero rows), each group nc = ceil(n_in / 32) chunks of 1 KB, chunk c = 16 "pair rows"
// r, each 16 weight rows n x the two f16 of elements 32c + 2r and 32c + 2r + 1 (zero past n_in): AMX's
// B-tile ("VNNI") order. Until a weight's copy exists, the rows kernel (packed_kernels_f16_amx(true))
// makes the same tiles from ggml's rows as it reads them (a 16 x 16 transpose per chunk): same bits.
// The activation row of a token (f16_split_activation) is [32 nc bf16 hi][32 nc bf16 lo]: A-tile rows.
// The weights' split into bf16 tiles is done once per call and reused by every token tile; for one
// token tile it runs two chunks ahead of the tile products in a ring of 4 chunks.
//
// NOTE (the rows kernel for good, the weights left in place): loads in 25 ms instead of making a 1 GB
// copy, but Qwen2.5-0.5B F16 tg64 fell from 21.4 to 14.5 t/s at 2 threads (11.2 -> 7.6 at 1) and pp512
// by 7-12%. Its split with the transpose takes 136-147 TSC ticks per chunk in L1 against 83-90 for a
// packed chunk (both bound by port 5's shuffles), and the 16 row streams per group are slower to read
// than the copy's one: software prefetch of the next group front to back (T0, T1) or of each row 8
// chunks ahead, or a copy of the group's rows to scratch first, all stayed at 5.6-7.9 t/s at 1 thread.
//
// NOTE (measured on a 2-vCPU Sapphire Rapids class Xeon, Qwen2.5-0.5B F16, against IGNIS_AMX=0's
// AVX-512 FMA kernel, alternated twice): pp512 at 1 thread 184 -> 406-457 t/s, at 2 threads 339-340 ->
// 824-829. Decode costs more: the weights must be split for every token (10 vector operations per 32
// values), tg64 at 1 thread 13.3-13.5 -> 12.9-13.0 t/s, at 2 threads 26.0-26.3 -> 24.2-24.3. Tried for
// decode: software prefetch of the group 4 chunks ahead (12.7 at 1 thread, 23.4 at 2; 8 chunks ahead
// 10.7; to L2 or non-temporal worse), and the split through two f32-to-bf16 converts (12.2-12.4 at 1 thread,
// 22.3-22.7 at 2) before the permute that takes the high halves.
//
// Thread safety: the tile configuration is loaded by every call and released at its end; scratch is
// thread_local.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/packed.h"
#include "backend/cpu/transpose_avx512.h"

namespace ignis::cpu {
namespace {

#define IGNIS_UNROLL _Pragma("GCC unroll 16")

constexpr int kT = kAmxTileTokens;
constexpr int64_t kChunk = 1024;  // bytes of one packed chunk
constexpr int64_t kSplit = 2048;  // its bf16 hi and lo B tiles
constexpr int64_t kRing = 4;      // chunk slots when the split is used once

// Tiles: 0, 1 results of token tiles a and b; 2, 3 tile a's activations (hi, lo); 4, 5 tile b's;
// 6, 7 the weights (hi, lo).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {};
};
TileConfig tile_config(int tokens) {
  TileConfig c;
  for (int i = 0; i < 6; ++i) c.rows[i] = static_cast<uint8_t>(tokens);
  c.rows[6] = c.rows[7] = 16;
  return c;
}

// Pair row p of a chunk (16 weight rows x 2 f16, one register) as row p of its bf16 hi and lo tiles
// (dst, dst + 1024). Both parts have zero low 16 bits in f32 (h by construction, l has at most 3
// significant bits), so their bf16 are the f32's high halves, gathered by one permute per 32.
__attribute__((always_inline)) inline void split_pair_row(__m512i r, int p, uint8_t* dst) {
  const __m512i keep = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  alignas(64) static constexpr uint16_t kHigh[32] = {1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
                                                     33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i high = _mm512_load_si512(kHigh);
  const __m512 a = _mm512_cvtph_ps(_mm512_castsi512_si256(r));
  const __m512 b = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(r, 1));
  const __m512i ah = _mm512_and_si512(_mm512_castps_si512(a), keep), bh = _mm512_and_si512(_mm512_castps_si512(b), keep);
  const __m512i al = _mm512_castps_si512(_mm512_sub_ps(a, _mm512_castsi512_ps(ah)));
  const __m512i bl = _mm512_castps_si512(_mm512_sub_ps(b, _mm512_castsi512_ps(bh)));
  _mm512_store_si512(dst + 64 * p, _mm512_permutex2var_epi16(ah, high, bh));
  _mm512_store_si512(dst + kChunk + 64 * p, _mm512_permutex2var_epi16(al, high, bl));
}

// Chunk c (elements 32c .. 32c + 31) of a group's n_rows rows of ggml's f16 (n_in each) in pair-row
// order, r[p] = the 16 rows' elements 32c + 2p and 32c + 2p + 1 (a 16 x 16 transpose of the rows'
// element pairs), zero past n_rows and n_in: the packed chunk c, and what the rows kernel splits.
__attribute__((always_inline)) inline void pair_rows(const uint16_t* rows, int64_t n_in, int64_t n_rows, int64_t c,
                                                     __m512i r[16]) {
  const int64_t left = n_in - 32 * c;
  const __mmask32 cols = left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << left) - 1);
  IGNIS_UNROLL for (int n = 0; n < 16; ++n)
    r[n] = n < n_rows ? _mm512_maskz_loadu_epi16(cols, rows + n * n_in + 32 * c) : _mm512_setzero_si512();
  transpose16(r);
}

// Chunk c of a packed group (1 KB at group + c kChunk) as its bf16 hi and lo tiles.
inline void split_packed(const uint8_t* group, int64_t c, uint8_t* dst) {
  const uint8_t* src = group + c * kChunk;
  IGNIS_UNROLL for (int p = 0; p < 16; ++p) split_pair_row(_mm512_loadu_si512(src + 64 * p), p, dst);
}

// The same tiles from ggml's rows (the weight in place, before its packed copy exists): elements 32c ..
// 32c + 31 of the group's n_rows rows (n_in each), put in pair-row order by a 16 x 16 transpose of their
// element pairs, zero past n_rows and n_in. The tiles' bytes are the packed chunk's split: same bits.
inline void split_rows(const uint16_t* rows, int64_t n_in, int n_rows, int64_t c, uint8_t* dst) {
  __m512i r[16];
  pair_rows(rows, n_in, n_rows, c, r);
  IGNIS_UNROLL for (int p = 0; p < 16; ++p) split_pair_row(r[p], p, dst);
}

// The row group's weights: a packed group (packed.cpp) or, when rows, ggml's rows in place.
struct Group {
  const uint8_t* data;
  int64_t n_in;
  int n_rows;
  bool rows;
  void split(int64_t c, uint8_t* dst) const {
    if (rows) return split_rows(reinterpret_cast<const uint16_t*>(data), n_in, n_rows, c, dst);
    split_packed(data, c, dst);
  }
};

// One pass over the chunks for token tile a (and b, 16 activation rows further, when Two): results
// stored to ca (cb). Split: write the weights' tiles as they are first needed (slots c & ring_mask).
template <bool Two>
void pass(const Group& group, uint8_t* split, bool do_split, int64_t ring_mask, const uint8_t* x, size_t x_stride,
          float* ca, float* cb) {
  const int64_t nc = (group.n_in + 31) / 32;
  const size_t lo = static_cast<size_t>(nc) * 64;
  auto slot = [&](int64_t c) { return split + (c & ring_mask) * kSplit; };
  if (do_split) {
    group.split(0, slot(0));
    if (nc > 1) group.split(1, slot(1));
  }
  _tile_zero(0);
  if constexpr (Two) _tile_zero(1);
  for (int64_t c = 0; c < nc; ++c) {
    // NOTE: the split runs two chunks ahead, so the tile loads below do not wait for its stores.
    if (do_split && c + 2 < nc) group.split(c + 2, slot(c + 2));
    const uint8_t* s = slot(c);
    _tile_loadd(6, s, 64);
    _tile_loadd(7, s + kChunk, 64);
    const uint8_t* xa = x + 64 * c;
    _tile_loadd(2, xa, x_stride);
    _tile_loadd(3, xa + lo, x_stride);
    _tile_dpbf16ps(0, 2, 6);
    _tile_dpbf16ps(0, 2, 7);
    _tile_dpbf16ps(0, 3, 6);
    _tile_dpbf16ps(0, 3, 7);
    if constexpr (Two) {
      const uint8_t* xb = xa + kT * x_stride;
      _tile_loadd(4, xb, x_stride);
      _tile_loadd(5, xb + lo, x_stride);
      _tile_dpbf16ps(1, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(1, 5, 6);
      _tile_dpbf16ps(1, 5, 7);
    }
  }
  _tile_stored(0, ca, 64);
  if constexpr (Two) _tile_stored(1, cb, 64);
}

// out[t * out_stride + k] for t < n_tokens, k < n_rows: the row group against n_tokens activation rows.
void f16_tokens(const Group& group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                int64_t n_tokens) {
  const int64_t n_in = group.n_in;
  const int n_rows = group.n_rows;
  struct alignas(64) Line {
    uint8_t b[64];
  };
  thread_local std::vector<Line> scratch;
  const int64_t nc = (n_in + 31) / 32;
  const bool once = n_tokens <= kT;
  const size_t lines = static_cast<size_t>(once ? kRing : nc) * (kSplit / 64);
  if (scratch.size() < lines) scratch.resize(lines);
  auto* split = reinterpret_cast<uint8_t*>(scratch.data());
  const int64_t ring_mask = once ? kRing - 1 : ~int64_t{0};
  const __mmask16 row_mask = n_rows >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n_rows) - 1);
  alignas(64) float c[2][kT * 16];
  auto emit = [&](const float* res, int64_t t0, int64_t m) {
    for (int64_t i = 0; i < m; ++i) _mm512_mask_storeu_ps(out + (t0 + i) * out_stride, row_mask, _mm512_load_ps(res + 16 * i));
  };
  bool do_split = true;
  int64_t t = 0;
  if (n_tokens >= kT) {
    static const TileConfig full = tile_config(kT);
    _tile_loadconfig(&full);
    for (; t + 2 * kT <= n_tokens; t += 2 * kT, do_split = false) {
      pass<true>(group, split, do_split, ring_mask, x + t * x_stride, x_stride, c[0], c[1]);
      emit(c[0], t, kT);
      emit(c[1], t + kT, kT);
    }
    if (t + kT <= n_tokens) {
      pass<false>(group, split, do_split, ring_mask, x + t * x_stride, x_stride, c[0], nullptr);
      emit(c[0], t, kT);
      t += kT;
      do_split = false;
    }
  }
  if (t < n_tokens) {
    const int64_t m = n_tokens - t;
    static const auto configs = [] {
      std::array<TileConfig, kT> c;
      for (int i = 0; i < kT; ++i) c[i] = tile_config(i + 1);
      return c;
    }();
    _tile_loadconfig(&configs[m - 1]);
    pass<false>(group, split, do_split, ring_mask, x + t * x_stride, x_stride, c[0], nullptr);
    emit(c[0], t, m);
  }
  _tile_release();
}

template <bool Rows, int N>
void dot_tokens(int64_t n_in, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                int n_rows) {
  f16_tokens({group, n_in, n_rows, Rows}, x, x_stride, out, out_stride, N);
}
template <bool Rows>
void dot_rest(int64_t n_in, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
              int n_rows, int n_tokens) {
  f16_tokens({group, n_in, n_rows, Rows}, x, x_stride, out, out_stride, n_tokens);
}
template <bool Rows>
void dot_tiles(int64_t n_in, const uint8_t* group, size_t, int, const uint8_t* x, size_t x_stride, const uint8_t*,
               float* out, int64_t out_stride, int n_rows, int n_tiles) {
  f16_tokens({group, n_in, n_rows, Rows}, x, x_stride, out, out_stride, int64_t{n_tiles} * kT);
}

}  // namespace

void f16_split_activation(const float* x, int64_t n_in, uint8_t* dst) {
  const int64_t kp = (n_in + 31) / 32 * 32;
  auto* hi = reinterpret_cast<uint16_t*>(dst);
  uint16_t* lo = hi + kp;
  const __m512i keep = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  auto part = [&](int64_t i) {
    const int64_t n = std::max<int64_t>(0, std::min<int64_t>(16, n_in - i));
    const __mmask16 m = n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1);
    const __m512 v = _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
    return v;
  };
  for (int64_t i = 0; i < kp; i += 32) {
    const __m512 a = part(i), b = part(i + 16);
    const __m512 ah = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), keep));
    const __m512 bh = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(b), keep));
    _mm512_storeu_si512(hi + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(bh, ah)));
    _mm512_storeu_si512(lo + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_sub_ps(b, bh), _mm512_sub_ps(a, ah))));
  }
}

void pack_f16_amx_groups(const uint16_t* w, int64_t n_in, int64_t n_out, uint8_t* dst, int64_t g_begin, int64_t g_end) {
  const int64_t nc = (n_in + 31) / 32;
  for (int64_t g = g_begin; g < g_end; ++g) {
    uint8_t* group = dst + g * nc * kChunk;
    for (int64_t c = 0; c < nc; ++c) {
      __m512i r[16];
      pair_rows(w + g * 16 * n_in, n_in, std::min<int64_t>(16, n_out - g * 16), c, r);
      IGNIS_UNROLL for (int p = 0; p < 16; ++p) _mm512_store_si512(group + c * kChunk + 64 * p, r[p]);
    }
  }
}

PackedKernels packed_kernels_f16_amx(bool rows) {
  PackedKernels k = rows ? PackedKernels{dot_tokens<true, 1>, dot_tokens<true, kT>, kT, dot_tiles<true>}
                         : PackedKernels{dot_tokens<false, 1>, dot_tokens<false, kT>, kT, dot_tiles<false>};
  k.dotn_rest = rows ? dot_rest<true> : dot_rest<false>;
  return k;
}

}  // namespace ignis::cpu
