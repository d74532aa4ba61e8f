// attend_tile with AVX2 + FMA (attention_kernel.h), for head_dim % 8 == 0 and <= 256; other widths
// take the portable loops built with these flags. Per query vector and chunk of 16 positions, the
// scores come out as two vectors of 8 (8 dot products accumulated in 8 registers across head_dim,
// then summed with a fixed hadd tree), softmax runs on them with exp256, and the output takes the
// weighted V rows with broadcast FMAs, 64 columns at a time in registers.
//
// NOTE: AVX2 has 16 registers, so neither the query vector (up to 32 registers) nor the output stays
// in registers across a chunk as in the AVX-512 kernel: the query is re-read from L1 for each group
// of 8 keys (9 loads per 8 FMAs) and the output is updated in blocks of 8 registers. The generic
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

// Lane i = q . k_i for the 8 rows kp[0..7] of d floats.
inline __m256 scores8(const float* q, const float* const* kp, int64_t d) {
  __m256 a[8];
  IGNIS_UNROLL for (int i = 0; i < 8; ++i) a[i] = _mm256_setzero_ps();
  for (int64_t c = 0; c < d; c += 8) {
    const __m256 qv = _mm256_loadu_ps(q + c);
    IGNIS_UNROLL for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kp[i] + c), a[i]);
  }
  return hsum8(a);
}

// ov[c .. c + 8 CB) = ov * alpha + sum_{i < nj} p[i] * vp[i][c ..].
template <int CB>
inline void pv_block(float* ov, int64_t c, const float* p, const float* const* vp, int nj, __m256 alpha) {
  __m256 o[CB];
  IGNIS_UNROLL for (int k = 0; k < CB; ++k) o[k] = _mm256_mul_ps(_mm256_loadu_ps(ov + c + 8 * k), alpha);
  for (int i = 0; i < nj; ++i) {
    const __m256 pi = _mm256_broadcast_ss(p + i);
    IGNIS_UNROLL for (int k = 0; k < CB; ++k) o[k] = _mm256_fmadd_ps(pi, _mm256_loadu_ps(vp[i] + c + 8 * k), o[k]);
  }
  IGNIS_UNROLL for (int k = 0; k < CB; ++k) _mm256_storeu_ps(ov + c + 8 * k, o[k]);
}

// One query vector against one chunk. kp/vp hold 16 valid row pointers (past the chunk's end they
// point at zeros); lanes i >= nj are masked out of the softmax and skipped in P.V.
inline void chunk_step(const float* qv, const float* const kp[16], const float* const vp[16], int64_t d, int nj,
                       float scale, float& m, float& l, float* ov) {
  const __m256 sc = _mm256_set1_ps(scale);
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 valid0 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(nj), lane));
  const __m256 valid1 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(nj - 8), lane));
  const __m256 s0 = _mm256_blendv_ps(ninf, _mm256_mul_ps(scores8(qv, kp, d), sc), valid0);
  const __m256 s1 = nj > 8 ? _mm256_blendv_ps(ninf, _mm256_mul_ps(scores8(qv, kp + 8, d), sc), valid1) : ninf;
  const float m_new = std::max(m, hmax8(_mm256_max_ps(s0, s1)));
  const __m256 mn = _mm256_set1_ps(m_new);
  const __m256 p0 = _mm256_and_ps(valid0, simd::exp256(_mm256_sub_ps(s0, mn)));
  const __m256 p1 = _mm256_and_ps(valid1, simd::exp256(_mm256_sub_ps(s1, mn)));
  const __m256 va = simd::exp256(_mm256_set1_ps(m - m_new));
  m = m_new;
  l = l * _mm256_cvtss_f32(va) + hsum(_mm256_add_ps(p0, p1));
  alignas(32) float pw[16];
  _mm256_store_ps(pw, p0);
  _mm256_store_ps(pw + 8, p1);
  int64_t c = 0;
  for (; c + 64 <= d; c += 64) pv_block<8>(ov, c, pw, vp, nj, va);
  switch ((d - c) / 8) {
    case 7: pv_block<7>(ov, c, pw, vp, nj, va); break;
    case 6: pv_block<6>(ov, c, pw, vp, nj, va); break;
    case 5: pv_block<5>(ov, c, pw, vp, nj, va); break;
    case 4: pv_block<4>(ov, c, pw, vp, nj, va); break;
    case 3: pv_block<3>(ov, c, pw, vp, nj, va); break;
    case 2: pv_block<2>(ov, c, pw, vp, nj, va); break;
    case 1: pv_block<1>(ov, c, pw, vp, nj, va); break;
    default: break;
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
  for_each_chunk(t, kZeros, [&](int64_t v, const float* qv, const float* const kp[16], const float* const vp[16], int nj) {
    chunk_step(qv, kp, vp, d, nj, t.scale, m[v], l[v], o + v * d);
  });
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
