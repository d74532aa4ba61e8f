// attend_tile with AVX2 + FMA (attention_kernel.h), for head_dim % 8 == 0 and <= 256; other widths
// take the portable loops built with these flags. Per query vector and chunk of 16 positions, the
// scores come out as two vectors of 8 (8 dot products accumulated in 8 registers across head_dim,
// then summed with a fixed hadd tree), softmax runs on them with exp256, and the output takes the
// weighted V rows with broadcast FMAs, 64 columns at a time in registers.
//
// NOTE: AVX2 has 16 registers, so neither the query vector (up to 32 registers) nor the output stays
// in registers across a chunk as in the AVX-512 kernel: the query is re-read from L1 for each group
// of keys and the output is updated in blocks of registers. Two query vectors of a row (heads that
// share the KV head) go together: 2 x 4 keys take 6 loads per 8 FMAs (one vector x 8 keys took 9),
// and in P.V each V load feeds both. The generic
// loops kept one accumulator per dot product (an FMA latency chain per key) and the output in memory.
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "model/attention_generic.h"
#include "model/attention_kernel.h"
#include "model/vec_math_avx2.h"

namespace ignis::model {
namespace {

#define IGNIS_UNROLL _Pragma("GCC unroll 8")

constexpr int64_t kMaxWidth = 256;

// Lane i = sum of the 8 lanes of a[i] (a fixed tree: the order never depends on data).
inline __m256 hsum8(const __m256 a[8]) {
  const __m256 q0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 q1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20), _mm256_permute2f128_ps(q0, q1, 0x31));
}

inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 8 floats of a row: f32, or f16 widened exactly as it is loaded (either gives the same bits on the
// same values).
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// a[j][i] = the 8 column-lane partial sums of q[j] . k_i (columns in order), for keys i < n_keys (a
// multiple of 4; the rest zero). Keys go 4 at a time so that NQ query vectors share each K load: 2
// vectors take 6 loads per 8 FMAs, one took 9.
template <int NQ, class Row>
inline void partial_scores(const float* const q[NQ], const Row* const* kp, int64_t d, int n_keys, __m256 a[NQ][16]) {
  for (int kb = 0; kb < 16; kb += 4) {
    __m256 acc[NQ][4];
    IGNIS_UNROLL for (int j = 0; j < NQ; ++j) IGNIS_UNROLL for (int i = 0; i < 4; ++i) acc[j][i] = _mm256_setzero_ps();
    if (kb < n_keys) {
      for (int64_t c = 0; c < d; c += 8) {
        __m256 qv[NQ];
        IGNIS_UNROLL for (int j = 0; j < NQ; ++j) qv[j] = _mm256_loadu_ps(q[j] + c);
        IGNIS_UNROLL for (int i = 0; i < 4; ++i) {
          const __m256 kv = load8(kp[kb + i] + c);
          IGNIS_UNROLL for (int j = 0; j < NQ; ++j) acc[j][i] = _mm256_fmadd_ps(qv[j], kv, acc[j][i]);
        }
      }
    }
    IGNIS_UNROLL for (int j = 0; j < NQ; ++j) IGNIS_UNROLL for (int i = 0; i < 4; ++i) a[j][kb + i] = acc[j][i];
  }
}

// ov[j][c .. c + 8 CB) = ov[j] * alpha[j] + sum_{i < nj} p[j][i] * vp[i][c ..], for NQ vectors sharing
// the V loads.
template <int NQ, int CB, class Row>
inline void pv_block(float* const ov[NQ], int64_t c, const float (*p)[16], const Row* const* vp, int nj,
                     const __m256 alpha[NQ]) {
  __m256 o[NQ][CB];
  IGNIS_UNROLL for (int j = 0; j < NQ; ++j) IGNIS_UNROLL for (int k = 0; k < CB; ++k)
    o[j][k] = _mm256_mul_ps(_mm256_loadu_ps(ov[j] + c + 8 * k), alpha[j]);
  for (int i = 0; i < nj; ++i) {
    __m256 pi[NQ];
    IGNIS_UNROLL for (int j = 0; j < NQ; ++j) pi[j] = _mm256_broadcast_ss(p[j] + i);
    IGNIS_UNROLL for (int k = 0; k < CB; ++k) {
      const __m256 v = load8(vp[i] + c + 8 * k);
      IGNIS_UNROLL for (int j = 0; j < NQ; ++j) o[j][k] = _mm256_fmadd_ps(pi[j], v, o[j][k]);
    }
  }
  IGNIS_UNROLL for (int j = 0; j < NQ; ++j) IGNIS_UNROLL for (int k = 0; k < CB; ++k) _mm256_storeu_ps(ov[j] + c + 8 * k, o[j][k]);
}

template <int NQ, int CB, class Row>
inline void pv_row(float* const ov[NQ], int64_t d, const float (*p)[16], const Row* const* vp, int nj,
                   const __m256 alpha[NQ]) {
  int64_t c = 0;
  for (; c + 8 * CB <= d; c += 8 * CB) pv_block<NQ, CB, Row>(ov, c, p, vp, nj, alpha);
  for (; c < d; c += 8) pv_block<NQ, 1, Row>(ov, c, p, vp, nj, alpha);
}

// NQ query vectors of one row (so the same nj) against one chunk. kp/vp hold 16 valid row pointers
// (past the chunk's end they point at zeros); lanes i >= nj are masked out of the softmax and skipped
// in P.V. Each vector's arithmetic is the same for NQ = 1 and 2 (its own accumulators, in the same
// order), so a result does not depend on which vectors share its tile.
template <int NQ, class Row>
inline void chunk_step(const float* const qv[NQ], const Row* const kp[16], const Row* const vp[16], int64_t d,
                       int nj, float scale, float* m, float* l, float* const ov[NQ]) {
  const __m256 sc = _mm256_set1_ps(scale);
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 valid0 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(nj), lane));
  const __m256 valid1 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(nj - 8), lane));
  __m256 a[NQ][16];
  partial_scores<NQ, Row>(qv, kp, d, nj > 8 ? 16 : 8, a);
  alignas(32) float pw[NQ][16];
  __m256 va[NQ];
  IGNIS_UNROLL for (int j = 0; j < NQ; ++j) {
    const __m256 s0 = _mm256_blendv_ps(ninf, _mm256_mul_ps(hsum8(a[j]), sc), valid0);
    const __m256 s1 = nj > 8 ? _mm256_blendv_ps(ninf, _mm256_mul_ps(hsum8(a[j] + 8), sc), valid1) : ninf;
    const float m_new = std::max(m[j], hmax8(_mm256_max_ps(s0, s1)));
    const __m256 mn = _mm256_set1_ps(m_new);
    const __m256 p0 = _mm256_and_ps(valid0, simd::exp256(_mm256_sub_ps(s0, mn)));
    const __m256 p1 = _mm256_and_ps(valid1, simd::exp256(_mm256_sub_ps(s1, mn)));
    va[j] = simd::exp256(_mm256_set1_ps(m[j] - m_new));
    m[j] = m_new;
    l[j] = l[j] * _mm256_cvtss_f32(va[j]) + hsum(_mm256_add_ps(p0, p1));
    _mm256_store_ps(pw[j], p0);
    _mm256_store_ps(pw[j] + 8, p1);
  }
  if constexpr (NQ == 1) {
    pv_row<1, 8, Row>(ov, d, pw, vp, nj, va);
  } else {
    pv_row<NQ, 4, Row>(ov, d, pw, vp, nj, va);
  }
}

void attend(const AttnTile& t, float* scratch) {
  const int64_t d = t.head_dim;
  const int64_t n_vec = t.n_rows * t.n_heads;
  float* m = scratch;
  float* l = m + n_vec;
  float* o = scratch + ((2 * n_vec + 15) / 16) * 16;
  std::fill(m, m + n_vec, -std::numeric_limits<float>::infinity());
  std::fill(l, l + n_vec, 0.0f);
  std::fill(o, o + n_vec * d, 0.0f);
  alignas(32) static const float kZeros[kMaxWidth] = {};
  alignas(32) static const uint16_t kZeros16[kMaxWidth] = {};
  // The row's query vectors in pairs (they share every K and V load), the odd one alone.
  auto widen = [](const uint16_t* src, float* dst, int64_t n) {
    for (int64_t c = 0; c < n; c += 8)
      _mm256_store_ps(dst + c, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c))));
  };
  auto step_row = [&]<class Row>(int64_t r, int64_t /*nr: 1*/, const Row* const* kp, const Row* const* vp, int nj) {
    const float* q = t.q + r * t.q_stride;
    const int64_t v0 = r * t.n_heads;
    int64_t h = 0;
    for (; h + 2 <= t.n_heads; h += 2) {
      const float* const qv[2] = {q + h * d, q + (h + 1) * d};
      float* const ov[2] = {o + (v0 + h) * d, o + (v0 + h + 1) * d};
      chunk_step<2, Row>(qv, kp, vp, d, nj, t.scale, m + v0 + h, l + v0 + h, ov);
    }
    if (h < t.n_heads) {
      const float* const qv[1] = {q + h * d};
      float* const ov[1] = {o + (v0 + h) * d};
      chunk_step<1, Row>(qv, kp, vp, d, nj, t.scale, m + v0 + h, l + v0 + h, ov);
    }
  };
  // Decode tiles (one row) read f16 rows in place (attention_kernel.h, NOTE (f16 cache)).
  if (t.kv_f16 && t.n_rows == 1)
    for_each_chunk_row_f16(t, kZeros16, step_row);
  else
    for_each_chunk_row(t, kZeros, attn_chunk_rows(t, scratch), 1, widen, step_row);
  for (int64_t r = 0; r < t.n_rows; ++r)
    for (int64_t h = 0; h < t.n_heads; ++h) {
      const int64_t v = r * t.n_heads + h;
      const __m256 inv = _mm256_set1_ps(1.0f / l[v]);
      float* dst = t.out + r * t.q_stride + h * d;
      for (int64_t c = 0; c < d; c += 8) _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_loadu_ps(o + v * d + c), inv));
    }
}

}  // namespace

void attend_tile_avx2(const AttnTile& tile, float* scratch) {
  if (tile.head_dim % 8 == 0 && tile.head_dim <= kMaxWidth) {
    attend(tile, scratch);
  } else {
    attend_tile_generic(tile, scratch);
  }
}

}  // namespace ignis::model
