// attend_tile with AMX-BF16 (attention_kernel.h), for f16 caches and head_dim % 32 == 0: a chunk's 16
// scores for 16 query vectors at a time are one tile product; the softmax and the weighted sum of the V
// rows stay on AVX-512 (the FMA phase of attention_avx512.cpp, chunk_values).
//
// Exactness: a bf16 holds 8 significant bits, so both operands of the scores go in as two bf16 parts,
// hi and lo (split()). K is f16 (11 bits), which the two parts carry exactly; Q is carried to 16 bits
// (llama.cpp rounds Q to f16's 11). A score is the tile product sum of Kh.Qh + Kl.Qh + Kh.Ql (the dropped
// Kl.Ql is below Q's rounding); every product of two bf16 is exact in f32 and tdpbf16ps sums them in f32.
//
// Layout (tdpbf16ps: C[m][n] += sum over k of A[m][2k] B[k][2n] + A[m][2k+1] B[k][2n+1]): scores
// C[key][query], A = the chunk's K rows, 32 dims per tile with element pair k = dims (k, 16 + k) of the
// 32; B = the group's Q vectors as columns with the same pairs (written once per call). The softmax runs
// down the 16 key rows of C with a query per lane (no horizontal sums); its weights are transposed to a
// row per query for the FMA phase.
//
// NOTE (batch invariance): an element of a tile product depends only on its row of A and its column of
// B, so a query vector's scores are the same whatever other vectors share its group of 16, and so is
// everything after them (lane-wise softmax, per-vector FMAs); chunks past a vector's positions are exact
// no-ops for it (weights 0, rescale factor 1). Chunks cover absolute positions [16 c, 16 c + 16) as in
// the other kernels, so decode (one row) gives the bits prefill gives the same row. Deterministic; it
// rounds differently from the FMA kernels.
//
// NOTE (measured on a 2-core Sapphire Rapids class Xeon, `ignis-bench-attention D HEADS 512`, ns per
// query vector and chunk, this kernel against attend_tile_avx512): prefill 22 vs 46 (Qwen2.5-0.5B's 7
// heads of 64), 25 vs 47 (Llama-3.2-1B's 4 of 64), 41 vs 77 (Qwen2.5-1.5B's 6 of 128), 44-46 vs 97
// (Qwen3-0.6B's 2 of 128); decode 1.07-1.44x the FMA kernel's time (1.44 at Qwen3's 2 heads: a chunk's
// K split and its 12 tile products cost the same for 2 vectors as for 16). End to end, Qwen3-0.6B Q8_0
// pp512 at 2 threads 790-805 -> 953-975 t/s, tg128 47.1-48.4 -> 46.4-47.6.
// Tried and dropped: the outputs as tile products too (P and V split into bf16 pairs, C'[query][16
// dims]): prefill 19 ns at 7 heads of 64, but decode 3.4x the FMA kernel's time at Qwen3's shape, the
// V split and the rescale of every output tile after every chunk being per chunk, not per vector. Whole
// batches of V rows widened at once (64 KiB at head_dim 128, past L1): decode 2.5x.
//
// Thread safety: the tile configuration is loaded at the start of every call and released at its end;
// the working memory is the caller's scratch (attn_amx_scratch_floats).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "backend/cpu/transpose_avx512.h"
#include "model/attention_avx512.h"
#include "model/attention_kernel.h"
#include "model/vec_math_avx512.h"

namespace ignis::model {
namespace {

using cpu::transpose16;

constexpr int kGroup = 16;  // query vectors per score tile (its columns)

struct alignas(64) Tile {
  uint32_t w[16][16];
};

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// Q's split: x = hi + lo + (rounding below 16 bits), hi and lo bf16 values as f32 bit patterns (low
// halves zero), each part rounded half away from zero in magnitude.
inline void split(__m512 x, __m512i& hi, __m512i& lo) {
  const __m512i m = _mm512_set1_epi32(static_cast<int>(0xffff0000u)), half = _mm512_set1_epi32(0x8000);
  hi = _mm512_and_si512(_mm512_add_epi32(_mm512_castps_si512(x), half), m);
  const __m512 r = _mm512_sub_ps(x, _mm512_castsi512_ps(hi));
  lo = _mm512_and_si512(_mm512_add_epi32(_mm512_castps_si512(r), half), m);
}
// A bf16 pair per lane: low word from `low`, high word from `high` (both bf16 bit patterns as above).
inline __m512i pair(__m512i low, __m512i high) { return _mm512_or_si512(high, _mm512_srli_epi32(low, 16)); }

// A group of up to 16 query vectors (consecutive in the tile): the columns of its score tiles.
struct Group {
  int64_t v0 = 0;
  int n = 0;          // vectors in the group
  int64_t reach = 0;  // positions its last vector attends to
  alignas(64) int32_t n_kv[16] = {};
  alignas(64) float m[16];  // running max per vector
  alignas(64) float l[16];  // running sum of the softmax weights per vector
};

constexpr int kBatch = 4;  // at most this many chunks' score products in flight together (a result tile each)

// One chunk's K as tiles kh, kl [head_dim / 32] (A of the scores).
struct ChunkK {
  Tile* kh;
  Tile* kl;
};

// Position j of the tile's KV head, stepped along chunk by chunk: row `off` of page `pg`.
struct Cursor {
  int64_t pg = 0, off = 0;
  const uint16_t* row(const AttnTile& t, const void* const* pages) const {
    return static_cast<const uint16_t*>(pages[pg]) + off * t.width + t.kv_off;
  }
  void next(const AttnTile& t) {
    if (++off == t.page) off = 0, ++pg;
  }
};

// K rows [j0, j0 + 16) as tiles (zeros past n_kv_max). K splits exactly by truncation (f16 has 11
// significant bits: hi keeps 8, lo the other 3).
void convert_k(const AttnTile& t, int64_t j0, int64_t n_kv_max, Cursor& cur, const ChunkK& ck) {
  const int64_t nt = t.head_dim / 32;
  const __m512i m = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int i = 0; i < 16; ++i) {
    if (j0 + i >= n_kv_max) {
      for (int64_t j = 0; j < nt; ++j) {
        _mm512_store_si512(ck.kh[j].w[i], _mm512_setzero_si512());
        _mm512_store_si512(ck.kl[j].w[i], _mm512_setzero_si512());
      }
      continue;
    }
    const uint16_t* kr = cur.row(t, t.k_pages);
    cur.next(t);
    for (int64_t j = 0; j < nt; ++j) {
      const __m512 a = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(kr + 32 * j)));
      const __m512 b = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(kr + 32 * j + 16)));
      const __m512i ah = _mm512_and_si512(_mm512_castps_si512(a), m), bh = _mm512_and_si512(_mm512_castps_si512(b), m);
      const __m512i al = _mm512_castps_si512(_mm512_sub_ps(a, _mm512_castsi512_ps(ah)));
      const __m512i bl = _mm512_castps_si512(_mm512_sub_ps(b, _mm512_castsi512_ps(bh)));
      _mm512_store_si512(ck.kh[j].w[i], pair(ah, bh));
      _mm512_store_si512(ck.kl[j].w[i], pair(al, bl));
    }
  }
}

// V rows [j0, j0 + 16) in place (f16; zeros past n_kv_max), for decode's single pass over them.
void v_rows_f16(const AttnTile& t, int64_t j0, int64_t n_kv_max, Cursor& cur, const uint16_t* vp[16]) {
  alignas(64) static const uint16_t kZeros[256] = {};
  for (int i = 0; i < 16; ++i) {
    if (j0 + i >= n_kv_max) {
      vp[i] = kZeros;
      continue;
    }
    vp[i] = cur.row(t, t.v_pages);
    cur.next(t);
  }
}

// V rows [j0, j0 + 16) widened to f32 into rows [16][head_dim] (vp[i]: row i; zeros past n_kv_max).
void widen_v(const AttnTile& t, int64_t j0, int64_t n_kv_max, Cursor& cur, float* rows, const float* vp[16]) {
  const int64_t d = t.head_dim;
  for (int i = 0; i < 16; ++i) {
    float* r = rows + i * d;
    vp[i] = r;
    if (j0 + i >= n_kv_max) {
      for (int64_t c = 0; c < d; c += 16) _mm512_store_ps(r + c, _mm512_setzero_ps());
      continue;
    }
    const uint16_t* vr = cur.row(t, t.v_pages);
    cur.next(t);
    for (int64_t c = 0; c < d; c += 16)
      _mm512_store_ps(r + c, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vr + c))));
  }
}

// Scores of NB <= kBatch chunks against one group: C[b] (tiles 0..3) += over the 32-dim blocks of
// Kh.Qh, Kl.Qh, Kh.Ql; stored to cs[b]. The group's Q tiles (4, 5) are loaded once per block for all
// chunks; each chunk's sum is its own chain.
template <int NB>
void scores(int64_t nt, const ChunkK* ck, const Tile* qt, Tile* cs) {
#define IGNIS_QK(B)                    \
  if constexpr (NB > B) {              \
    _tile_loadd(6, ck[B].kh[j].w, 64); \
    _tile_loadd(7, ck[B].kl[j].w, 64); \
    _tile_dpbf16ps(B, 6, 4);           \
    _tile_dpbf16ps(B, 7, 4);           \
    _tile_dpbf16ps(B, 6, 5);           \
  }
  if constexpr (NB > 0) _tile_zero(0);
  if constexpr (NB > 1) _tile_zero(1);
  if constexpr (NB > 2) _tile_zero(2);
  if constexpr (NB > 3) _tile_zero(3);
  for (int64_t j = 0; j < nt; ++j) {
    _tile_loadd(4, qt[2 * j].w, 64);
    _tile_loadd(5, qt[2 * j + 1].w, 64);
    IGNIS_QK(0)
    IGNIS_QK(1)
    IGNIS_QK(2)
    IGNIS_QK(3)
  }
#undef IGNIS_QK
  if constexpr (NB > 0) _tile_stored(0, cs[0].w, 64);
  if constexpr (NB > 1) _tile_stored(1, cs[1].w, 64);
  if constexpr (NB > 2) _tile_stored(2, cs[2].w, 64);
  if constexpr (NB > 3) _tile_stored(3, cs[3].w, 64);
}

// One chunk's softmax step for a group, down the 16 key rows of its scores cs (a query per lane): the
// running max and sum move on; row q of pw gets vector q's 16 weights (0 past its positions) and vf[q]
// the factor its output is rescaled by (exactly 1 where the max did not grow).
inline void softmax_step(const Tile& cs, int64_t j0, float scale, Group& gr, float (*pw)[16], float* vf) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i nkv = _mm512_load_si512(gr.n_kv);
  __m512 s[16];
  __mmask16 valid[16];
  __m512 mx = ninf;
  IGNIS_UNROLL for (int i = 0; i < 16; ++i) {
    valid[i] = _mm512_cmpgt_epi32_mask(nkv, _mm512_set1_epi32(static_cast<int>(j0 + i)));
    s[i] = _mm512_mask_mul_ps(ninf, valid[i], _mm512_load_ps(reinterpret_cast<const float*>(cs.w[i])), _mm512_set1_ps(scale));
    mx = _mm512_max_ps(mx, s[i]);
  }
  const __m512 mo = _mm512_load_ps(gr.m);
  const __m512 mn = _mm512_max_ps(mo, mx);
  __m512 p[16], sum[8];
  IGNIS_UNROLL for (int i = 0; i < 16; ++i) p[i] = _mm512_maskz_mov_ps(valid[i], simd::exp512(_mm512_sub_ps(s[i], mn)));
  IGNIS_UNROLL for (int i = 0; i < 8; ++i) sum[i] = _mm512_add_ps(p[i], p[i + 8]);
  IGNIS_UNROLL for (int w = 4; w >= 1; w /= 2) IGNIS_UNROLL for (int i = 0; i < w; ++i) sum[i] = _mm512_add_ps(sum[i], sum[i + w]);
  const __m512 f = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(mn, mo, _CMP_GT_OQ), _mm512_set1_ps(1.0f),
                                        simd::exp512(_mm512_sub_ps(mo, mn)));
  _mm512_store_ps(gr.l, _mm512_fmadd_ps(_mm512_load_ps(gr.l), f, sum[0]));
  _mm512_store_ps(gr.m, mn);
  _mm512_store_ps(vf, f);
  __m512i r[16];
  IGNIS_UNROLL for (int i = 0; i < 16; ++i) r[i] = _mm512_castps_si512(p[i]);
  transpose16(r);
  IGNIS_UNROLL for (int q = 0; q < 16; ++q) _mm512_store_si512(pw[q], r[q]);
}

// softmax_step for a group of n <= kRowsSoftmax vectors, bit for bit: the scores transposed to a row
// per vector, each vector's 16 keys in the lanes of one register. The max is exact in any order, each
// exp sees the same input, and the sum takes the pairs of softmax_step's tree (i + 8, then + 4, + 2,
// + 1); so the weights, sums and factors are the same bits.
// NOTE (decode): softmax_step's cost is 16 registers of exps whatever n is; decode's groups hold the
// query heads of one KV head (2 for Qwen3-0.6B), for which this costs a transpose and n exps.
constexpr int kRowsSoftmax = 8;

inline void softmax_rows(const Tile& cs, int64_t j0, float scale, Group& gr, float (*pw)[16], float* vf) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512i r[16];
  IGNIS_UNROLL for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(cs.w[i]);
  transpose16(r);
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (int q = 0; q < gr.n; ++q) {
    const __mmask16 valid = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(gr.n_kv[q]), _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int>(j0))));
    const __m512 s = _mm512_mask_mul_ps(ninf, valid, _mm512_castsi512_ps(r[q]), _mm512_set1_ps(scale));
    const float mo = gr.m[q];
    const float mn = std::max(mo, _mm512_reduce_max_ps(s));
    const __m512 p = _mm512_maskz_mov_ps(valid, simd::exp512(_mm512_sub_ps(s, _mm512_set1_ps(mn))));
    _mm512_store_ps(pw[q], p);
    // The tree of softmax_step, lane 0 of each step: x[i] + x[i + w] for w = 8, 4, 2, 1.
    __m512 x = _mm512_add_ps(p, _mm512_shuffle_f32x4(p, p, _MM_SHUFFLE(3, 2, 3, 2)));
    x = _mm512_add_ps(x, _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(1, 1, 1, 1)));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(3, 2, 3, 2)));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(1, 1, 1, 1)));
    const float f = mn > mo ? _mm512_cvtss_f32(simd::exp512(_mm512_set1_ps(mo - mn))) : 1.0f;
    gr.l[q] = std::fma(gr.l[q], f, _mm512_cvtss_f32(x));
    gr.m[q] = mn;
    vf[q] = f;
  }
}

// Batches of chunks per head width (at head_dim 64 and below, 2).
constexpr int batch_for(int64_t head_dim) { return head_dim <= 64 ? 2 : kBatch; }

// The working memory in floats: Q (hi, lo tiles) per group and 32 dims; a batch of chunks' K tiles;
// per group and chunk of the batch its scores, twice (this batch's and the next's); one chunk's V rows
// as f32; the outputs, head_dim floats per vector; the groups.
// NOTE: this stays near L1's size for decode (one group): with the V rows of a whole batch widened as
// well (64 KiB at head_dim 128) decode of Qwen3-0.6B's shape ran 2.5x the FMA kernel's time.
int64_t scratch_floats(const AttnTile& t) {
  const int64_t d = t.head_dim, nt = d / 32, n_vec = t.n_rows * t.n_heads, n_grp = (n_vec + kGroup - 1) / kGroup;
  const int64_t kb = batch_for(d);
  const int64_t tiles = n_grp * nt * 2 + kb * 2 * nt + 2 * n_grp * kb + d / 16;
  return tiles * 256 + (n_vec * d + 15) / 16 * 16 + n_grp * static_cast<int64_t>(sizeof(Group) / sizeof(float));
}

template <int ND>
void attend(const AttnTile& t, float* scratch) {
  constexpr int64_t d = 16 * ND, nt = ND / 2;
  constexpr int kVals = ND <= 4 ? 4 : ND <= 8 ? 2 : 1;  // vectors per V pass (as attention_avx512.cpp)
  // NOTE: decode of one KV head's 4 query heads of 64 (Llama-3.2-1B's shape) ran 78-80 ns per vector and
  // chunk with batches of 4 chunks, 61-68 with 2; at head_dim 128, 2 were slower than 4 (251 vs 229).
  constexpr int kB = batch_for(16 * ND);
  const int64_t n_vec = t.n_rows * t.n_heads, n_grp = (n_vec + kGroup - 1) / kGroup;
  const int64_t n_kv_max = t.n_kv0 + t.n_rows - 1;
  const int64_t q_tiles = n_grp * nt * 2;
  Tile* qt = reinterpret_cast<Tile*>(scratch);
  ChunkK ck[kBatch];
  Tile* p = qt + q_tiles;
  for (int b = 0; b < kB; ++b) {
    ck[b] = {p, p + nt};
    p += 2 * nt;
  }
  Tile* cs = p;  // [2][group][kB]
  auto* vrows = reinterpret_cast<float*>(cs + 2 * n_grp * kB);
  auto* o = vrows + 16 * d;  // [vector][d]
  std::fill(o, o + n_vec * d, 0.0f);
  auto* groups = reinterpret_cast<Group*>(o + (n_vec * d + 15) / 16 * 16);
  for (int64_t g = 0; g < n_grp; ++g) new (&groups[g]) Group{};

  // Q as B tiles: row k, column n = pair (dims 32 j + k, 32 j + 16 + k) of the group's vector n.
  for (int64_t g = 0; g < n_grp; ++g) {
    Group& gr = groups[g];
    gr.v0 = g * kGroup;
    gr.n = static_cast<int>(std::min<int64_t>(kGroup, n_vec - gr.v0));
    for (int n = 0; n < gr.n; ++n) gr.n_kv[n] = static_cast<int32_t>(t.n_kv0 + (gr.v0 + n) / t.n_heads);
    gr.reach = gr.n_kv[gr.n - 1];
    std::fill(gr.m, gr.m + 16, -std::numeric_limits<float>::infinity());
    std::fill(gr.l, gr.l + 16, 0.0f);
    for (int64_t j = 0; j < nt; ++j) {
      __m512i hi[16], lo[16];
      IGNIS_UNROLL for (int n = 0; n < 16; ++n) {
        if (n >= gr.n) {
          hi[n] = lo[n] = _mm512_setzero_si512();
          continue;
        }
        const int64_t v = gr.v0 + n;
        const float* qv = t.q + (v / t.n_heads) * t.q_stride + (v % t.n_heads) * d + 32 * j;
        __m512i ah, al, bh, bl;
        split(_mm512_loadu_ps(qv), ah, al);
        split(_mm512_loadu_ps(qv + 16), bh, bl);
        hi[n] = pair(ah, bh);
        lo[n] = pair(al, bl);
      }
      transpose16(hi);
      transpose16(lo);
      Tile* th = qt + (g * nt + j) * 2;
      IGNIS_UNROLL for (int k = 0; k < 16; ++k) {
        _mm512_store_si512(th[0].w[k], hi[k]);
        _mm512_store_si512(th[1].w[k], lo[k]);
      }
    }
  }

  static const TileConfig cfg;
  _tile_loadconfig(&cfg);
  Cursor kcur, vcur;
  alignas(64) float pw[16][16], vf[16];
  const float* vp[16];
  const uint16_t* vh[16];
  // NOTE (decode): one group taken in one pass over the V rows reads them in place, widening
  // as it loads (the same bits); widening a chunk into scratch first was 23% of decode's time at
  // Qwen3-0.6B's shape (253 -> 218 ns per vector and chunk), and pays only when passes share it.
  const bool v_in_place = n_grp == 1 && groups[0].n <= kVals;
  // Batch b0's K tiles and scores (into cs[parity]).
  auto batch_scores = [&](int64_t b0, Tile* cs_b) {
    const int nb = static_cast<int>(std::min<int64_t>(kB, (n_kv_max - b0 + 15) / 16));
    for (int b = 0; b < nb; ++b) convert_k(t, b0 + 16 * b, n_kv_max, kcur, ck[b]);
    for (int64_t g = 0; g < n_grp; ++g) {
      if (b0 >= groups[g].reach) continue;
      const Tile* qg = qt + g * nt * 2;
      switch (std::min<int64_t>(nb, (groups[g].reach - b0 + 15) / 16)) {  // the chunks it reaches
        case 1: scores<1>(nt, ck, qg, cs_b + g * kB); break;
        case 2: scores<2>(nt, ck, qg, cs_b + g * kB); break;
        case 3: scores<3>(nt, ck, qg, cs_b + g * kB); break;
        default: scores<4>(nt, ck, qg, cs_b + g * kB); break;
      }
    }
  };
  // NOTE (pipelining): the next batch's scores are issued before this batch's softmax and values, so the
  // tile products run under the vector work; done in order, decode (one group, nothing else to overlap)
  // waited on each batch's chain of tile products and its store.
  batch_scores(0, cs);
  for (int64_t b0 = 0, k = 0; b0 < n_kv_max; b0 += 16 * kB, ++k) {
    const int nb = static_cast<int>(std::min<int64_t>(kB, (n_kv_max - b0 + 15) / 16));
    if (b0 + 16 * kB < n_kv_max) batch_scores(b0 + 16 * kB, cs + ((k + 1) % 2) * n_grp * kB);
    const Tile* cs_k = cs + (k % 2) * n_grp * kB;
    for (int b = 0; b < nb; ++b) {
      const int64_t j0 = b0 + 16 * b;
      if (v_in_place)
        v_rows_f16(t, j0, n_kv_max, vcur, vh);
      else
        widen_v(t, j0, n_kv_max, vcur, vrows, vp);
      for (int64_t g = 0; g < n_grp; ++g) {
        Group& gr = groups[g];
        if (j0 >= gr.reach) continue;
        if (gr.n <= kRowsSoftmax)
          softmax_rows(cs_k[g * kB + b], j0, t.scale, gr, pw, vf);
        else
          softmax_step(cs_k[g * kB + b], j0, t.scale, gr, pw, vf);
        // The weighted V rows, kVals vectors per pass over them (nj: the keys any of them attends).
        auto values = [&]<int NV>(int n) {
          float* ov[NV];
          const float* pv[NV];
          IGNIS_UNROLL for (int k = 0; k < NV; ++k) {
            ov[k] = o + (gr.v0 + n + k) * d;
            pv[k] = pw[n + k];
          }
          const int nj = static_cast<int>(std::min<int64_t>(16, gr.n_kv[n + NV - 1] - j0));
          if (nj <= 0) return;
          if (v_in_place)
            chunk_values<ND, NV>(vh, nj, ov, pv, vf + n);
          else
            chunk_values<ND, NV>(vp, nj, ov, pv, vf + n);
        };
        int n = 0;
        if constexpr (kVals >= 4) for (; n + 4 <= gr.n; n += 4) values.template operator()<4>(n);
        if constexpr (kVals >= 2) for (; n + 2 <= gr.n; n += 2) values.template operator()<2>(n);
        for (; n < gr.n; ++n) values.template operator()<1>(n);
      }
    }
  }
  _tile_release();

  for (int64_t g = 0; g < n_grp; ++g) {
    const Group& gr = groups[g];
    for (int n = 0; n < gr.n; ++n) {
      const int64_t v = gr.v0 + n;
      const __m512 inv = _mm512_set1_ps(1.0f / gr.l[n]);
      float* dst = t.out + (v / t.n_heads) * t.q_stride + (v % t.n_heads) * d;
      const float* src = o + v * d;
      IGNIS_UNROLL for (int c = 0; c < ND; ++c) _mm512_storeu_ps(dst + 16 * c, _mm512_mul_ps(_mm512_loadu_ps(src + 16 * c), inv));
    }
  }
}

template <int... N>
constexpr auto make_table(std::integer_sequence<int, N...>) {
  return std::array<AttnTileFn, sizeof...(N)>{attend<2 * (N + 1)>...};
}

}  // namespace

int64_t attn_amx_scratch_floats(const AttnTile& tile) { return scratch_floats(tile); }

void attend_tile_amx(const AttnTile& tile, float* scratch) {
  // NOTE: attention.cpp routes only f16 pages with head_dim % 32 == 0 and <= 256 here.
  static constexpr auto kByWidth = make_table(std::make_integer_sequence<int, 8>{});
  kByWidth[tile.head_dim / 32 - 1](tile, scratch);
}

}  // namespace ignis::model
