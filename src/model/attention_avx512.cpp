// attend_tile with AVX-512 (attention_kernel.h): per query vector and chunk of 16 positions, the 16
// scores come out as one vector (16 dot products accumulated across head_dim / 16 registers, then
// summed with a fixed transpose-and-add tree), softmax runs on that vector with exp512, and the
// output (head_dim / 16 registers) takes the 16 weighted V rows with broadcast FMAs.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 false positives inside the AVX-512 headers
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>
#include <limits>

#include "model/attention_kernel.h"
#include "model/attention_avx512.h"
#include "model/vec_math_avx512.h"

namespace ignis::model {
namespace {

// The sum tree of 16 score vectors t[0..15] (lane j of the result = sum of the 16 lanes of t[j]), a
// fixed order that never depends on data, taken in two steps so that only a quarter of it is live at a
// time: quad(t[4k..4k+3]) gives the k-th of four partial vectors as soon as its keys are scored, and
// combine() folds the four.
inline __m512 quad(const __m512 t[4]) {
  const __m512 u0 = _mm512_add_ps(_mm512_unpacklo_ps(t[0], t[1]), _mm512_unpackhi_ps(t[0], t[1]));
  const __m512 u1 = _mm512_add_ps(_mm512_unpacklo_ps(t[2], t[3]), _mm512_unpackhi_ps(t[2], t[3]));
  const __m512d a = _mm512_castps_pd(u0), b = _mm512_castps_pd(u1);
  return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
}
inline __m512 combine(const __m512 v[4]) {
  const __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// The 16 raw scores of NQ query vectors qv[] against one chunk's K rows (ND = head_dim / 16), the
// vectors sharing every K load; each vector's arithmetic is the same whatever shares the chunk with it.
// The K rows are f32 or f16 (Row = uint16_t, widened exactly as they are loaded: the same bits).
// NOTE (no hoisting): the K loads do not depend on the vectors, and GCC 12 hoisted a chunk's
// head_dim / 16 x 16 f32 loads out of the loop over a row's heads: it copied the whole widened chunk to
// the stack once per row (128 more loads and 128 stores at head_dim 128) and read the copy. An empty asm
// on each row pointer keeps the loads in place. `ignis-bench-attention 128 2 4096 10` prefill, ns per
// vector and chunk, alternated 4x: 91-94 -> 69-73; 64 x 4 and 128 x 6 gained 5-10%. f16 rows (decode,
// converted as they are read) keep the hoisted copy, which shares the conversions among the heads:
// laundered, 128 x 6 decode read 82-83 against 69-73.
template <int ND, int NQ, class Row>
inline void chunk_scores(const float* const qv[NQ], const Row* const kp[16], __m512 s[NQ]) {
  __m512 qr[NQ][ND];
  IGNIS_UNROLL for (int q = 0; q < NQ; ++q) IGNIS_UNROLL for (int c = 0; c < ND; ++c) qr[q][c] = _mm512_loadu_ps(qv[q] + 16 * c);
  __m512 part[NQ][4];
  IGNIS_UNROLL for (int k = 0; k < 4; ++k) {
    __m512 t[NQ][4];
    IGNIS_UNROLL for (int i = 0; i < 4; ++i) {
      const Row* kr = kp[4 * k + i];
      if constexpr (std::is_same_v<Row, float>) asm("" : "+r"(kr));  // NOTE (no hoisting)
      __m512 kc = load16(kr);
      IGNIS_UNROLL for (int q = 0; q < NQ; ++q) t[q][i] = _mm512_mul_ps(qr[q][0], kc);
      IGNIS_UNROLL for (int c = 1; c < ND; ++c) {
        kc = load16(kr + 16 * c);
        IGNIS_UNROLL for (int q = 0; q < NQ; ++q) t[q][i] = _mm512_fmadd_ps(qr[q][c], kc, t[q][i]);
      }
    }
    IGNIS_UNROLL for (int q = 0; q < NQ; ++q) part[q][k] = quad(t[q]);
  }
  IGNIS_UNROLL for (int q = 0; q < NQ; ++q) s[q] = combine(part[q]);
}

// Phase 1 of one query vector against one chunk: the chunk's softmax weights from its raw scores. Lanes
// i >= nj are masked out. The vector keeps its running max in m and its 16 lane sums of the softmax
// weights in lv (reduced once, after the last chunk); its 16 weights go to pw and the factor its output
// must be rescaled by to va (exactly 1 when the max did not grow, so the multiplies by it are then exact;
// on the first chunk m is -inf and what it scales is 0).
// NOTE (per-chunk cost): the sums stay in lanes: the horizontal sum and the scalar exp were a dependent
// chain in every step. There is no branch on whether the max grew (data: about one chunk in five on a
// 512-token prompt). Taking 4 vectors through each step together measured the same as one at a time.
inline void chunk_weights(__m512 raw, int nj, float scale, float& m, float* lv, float* pw, float* va) {
  const __mmask16 valid = nj >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << nj) - 1);
  const __m512 s = _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), valid,
                                      _mm512_mul_ps(raw, _mm512_set1_ps(scale)));
  const float m_new = std::max(m, _mm512_reduce_max_ps(s));
  const __m512 mo = _mm512_set1_ps(m), mn = _mm512_set1_ps(m_new);
  m = m_new;
  const __m512 p = _mm512_maskz_mov_ps(valid, simd::exp512(_mm512_sub_ps(s, mn)));
  _mm512_store_ps(pw, p);
  const __m512 vf = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(mn, mo, _CMP_GT_OQ), _mm512_set1_ps(1.0f),
                                         simd::exp512(_mm512_sub_ps(mo, mn)));
  _mm512_store_ps(lv, _mm512_fmadd_ps(_mm512_load_ps(lv), vf, p));
  *va = _mm512_cvtss_f32(vf);
}

// NOTE (two phases per row and chunk): first every head's softmax weights, then every head's outputs.
// One vector's chunk is a long dependent chain (scores, horizontal sum, max, exp, then 16-deep FMA chains
// into the output), and done a vector at a time the core overlapped little of one vector's chain with
// the next; in phases the independent vectors sit next to each other. Phase 1 scores the heads in pairs
// that share the K loads (head_dim <= 64), phase 2 takes them in fours (<= 64) or pairs (<= 128) that
// share the V loads: with pairs, a pair's 8 accumulators were 16-FMA chains whose latency equalled their
// throughput, and the chains, not the FMA ports, set the pace. Causal 512-token prefill of one KV head
// on one Zen 5 core (kRowsPerTile-row tiles), ns per query vector and 16-key chunk, before -> after
// (pairs scoring, no rescale branch, fours in phase 2), alternated: 7 heads of 64 (Qwen2.5-0.5B)
// 49-53 -> 38-42, 4 of 64 (Llama-3.2-1B) 48-49 -> 37, 6 of 128 (Qwen2.5-1.5B) 89-92 -> 77-85. The
// arithmetic of each vector is unchanged (the same bits as before these changes).
template <int ND>
void attend(const AttnTile& t, float* scratch) {
  constexpr int64_t d = 16 * ND;
  constexpr int kValHeads = ND <= 4 ? 4 : ND <= 8 ? 2 : 1;  // phase 2: vectors per V pass
  constexpr int kQPair = ND <= 4 ? 2 : 1;  // phase 1: query vectors per K pass
  const int64_t n_vec = t.n_rows * t.n_heads;
  float* m = scratch;
  float* lv = scratch + ((n_vec + 15) / 16) * 16;  // 16 lane sums per vector, 64-byte aligned when scratch is
  float* o = lv + n_vec * 16;
  float* pw = o + n_vec * d;  // 16 weights per vector in flight
  std::fill(m, m + n_vec, -std::numeric_limits<float>::infinity());
  std::fill(lv, lv + n_vec * 16, 0.0f);
  std::fill(o, o + n_vec * d, 0.0f);
  alignas(64) static const float kZeros[256] = {};
  alignas(64) static const uint16_t kZeros16[256] = {};
  constexpr int kMaxHeads = kAttnMaxVectors;
  constexpr int64_t kGroupVectors = 8;
  float va[kMaxHeads];
  auto widen = [](const uint16_t* src, float* dst, int64_t) {
    IGNIS_UNROLL for (int c = 0; c < ND; ++c)
      _mm512_store_ps(dst + 16 * c, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 16 * c))));
  };
  // The vectors of rows r .. r + nr - 1 (nr > 1 only when they number at most kMaxHeads), or of one row's
  // heads h0 .. kMaxHeads at a time.
  // NOTE (row groups): the phases run over the vectors of several rows at once when a row has fewer
  // than kGroupVectors (a row of Qwen3-0.6B has 2 per KV head): one row's 2 vectors left the core one
  // dependent chain of scores, max and exp at a time. Rows group only while they see the same positions
  // of the chunk (the same nj), so every vector's arithmetic is unchanged. Qwen3-0.6B Q8_0 `ignis bench
  // -p 512 -n 0 -d 4096 -t 2 -r 2`, groups of 1 against 8 vectors, alternated twice: 138-139 against
  // 152-163 t/s (4 vectors 144-149, 16 148-156).
  auto step_rows = [&]<class Row>(int64_t r, int64_t nr, const Row* const* kp, const Row* const* vp, int nj) {
    for (int64_t h0 = 0; h0 < t.n_heads; h0 += kMaxHeads) {
      const int nh = static_cast<int>(std::min<int64_t>(kMaxHeads, t.n_heads - h0));
      const int nv = nh * static_cast<int>(nr);
      const float* qv[kMaxHeads];
      int64_t vid[kMaxHeads];  // the vectors' indices into m, lv and o
      int i = 0;
      for (int64_t row = r; row < r + nr; ++row)
        for (int64_t h = h0; h < h0 + nh; ++h, ++i) {
          qv[i] = t.q + row * t.q_stride + h * d;
          vid[i] = row * t.n_heads + h;
        }
      __m512 raw[kMaxHeads];
      i = 0;
      for (; i + kQPair <= nv; i += kQPair) chunk_scores<ND, kQPair>(qv + i, kp, raw + i);
      if (i < nv) chunk_scores<ND, 1>(qv + i, kp, raw + i);
      for (i = 0; i < nv; ++i) chunk_weights(raw[i], nj, t.scale, m[vid[i]], lv + vid[i] * 16, pw + 16 * i, &va[i]);
      auto values = [&]<int NV>(int i0) {
        float* ov[NV];
        const float* pv[NV];
        IGNIS_UNROLL for (int k = 0; k < NV; ++k) {
          ov[k] = o + vid[i0 + k] * d;
          pv[k] = pw + 16 * (i0 + k);
        }
        chunk_values<ND, NV, Row>(vp, nj, ov, pv, va + i0);
      };
      i = 0;
      if constexpr (kValHeads >= 4) for (; i + 4 <= nv; i += 4) values.template operator()<4>(i);
      if constexpr (kValHeads >= 2) for (; i + 2 <= nv; i += 2) values.template operator()<2>(i);
      for (; i < nv; ++i) values.template operator()<1>(i);
    }
  };
  // Rows in groups of at least kGroupVectors vectors (bounded by kMaxHeads), when a row has fewer heads.
  const int64_t group_rows = t.n_heads < 1 || t.n_heads >= kMaxHeads
                                 ? 1
                                 : std::clamp<int64_t>((kGroupVectors + t.n_heads - 1) / t.n_heads, 1, kMaxHeads / t.n_heads);
  // Decode tiles (one row) read f16 rows in place (attention_kernel.h, NOTE (f16 cache)).
  if (t.kv_f16 && t.n_rows == 1)
    for_each_chunk_row_f16(t, kZeros16, step_rows);
  else
    for_each_chunk_row(t, kZeros, attn_chunk_rows(t, scratch), group_rows, widen, step_rows);
  for (int64_t r = 0; r < t.n_rows; ++r)
    for (int64_t h = 0; h < t.n_heads; ++h) {
      const int64_t v = r * t.n_heads + h;
      const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_load_ps(lv + v * 16)));
      float* dst = t.out + r * t.q_stride + h * d;
      for (int c = 0; c < ND; ++c) _mm512_storeu_ps(dst + 16 * c, _mm512_mul_ps(_mm512_loadu_ps(o + v * d + 16 * c), inv));
    }
}

template <int... N>
constexpr auto make_table(std::integer_sequence<int, N...>) {
  return std::array<AttnTileFn, sizeof...(N)>{attend<N + 1>...};
}

}  // namespace

void attend_tile_avx512(const AttnTile& tile, float* scratch) {
  // NOTE: attention.cpp routes only head_dim % 16 == 0 and <= 256 here.
  static constexpr auto kByWidth = make_table(std::make_integer_sequence<int, 16>{});
  kByWidth[tile.head_dim / 16 - 1](tile, scratch);
}

}  // namespace ignis::model
