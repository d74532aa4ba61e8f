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
#include "model/vec_math_avx512.h"

namespace ignis::model {
namespace {

#define IGNIS_UNROLL _Pragma("GCC unroll 16")

// Lane j of the result = sum of the 16 lanes of t[j] (a fixed tree: the order never depends on data).
inline __m512 hsum16(const __m512 t[16]) {
  __m512 u[8], v[4];
  IGNIS_UNROLL for (int i = 0; i < 8; ++i)
    u[i] = _mm512_add_ps(_mm512_unpacklo_ps(t[2 * i], t[2 * i + 1]), _mm512_unpackhi_ps(t[2 * i], t[2 * i + 1]));
  IGNIS_UNROLL for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(u[2 * i]), b = _mm512_castps_pd(u[2 * i + 1]);
    v[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  const __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// One query vector against one chunk. ND = head_dim / 16. kp/vp hold 16 valid row pointers (past the
// chunk's end they point at zeros); lanes i >= nj are masked out of the softmax and skipped in P.V.
// lv: the vector's 16 lane sums of the softmax weights (reduced once, after the last chunk).
// NOTE: every loop is unrolled so scores and outputs stay in registers: with a runtime trip count GCC
// kept the output in memory and each FMA waited on the previous one's store.
// NOTE (per-chunk cost): the sums stay in lanes and the rescale (exp(m - m_new), its multiplies) runs only
// when the running max grows: the horizontal sum and the scalar exp were a dependent chain in every step,
// and past the first chunks the max seldom moves.
template <int ND>
inline void chunk_step(const float* qv, const float* const kp[16], const float* const vp[16], int nj, float scale,
                       float& m, float* lv, float* ov) {
  __m512 qr[ND];
  IGNIS_UNROLL for (int c = 0; c < ND; ++c) qr[c] = _mm512_loadu_ps(qv + 16 * c);
  __m512 t[16];
  IGNIS_UNROLL for (int i = 0; i < 16; ++i) {
    __m512 a = _mm512_mul_ps(qr[0], _mm512_loadu_ps(kp[i]));
    IGNIS_UNROLL for (int c = 1; c < ND; ++c) a = _mm512_fmadd_ps(qr[c], _mm512_loadu_ps(kp[i] + 16 * c), a);
    t[i] = a;
  }
  const __mmask16 valid = nj >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << nj) - 1);
  const __m512 s = _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), valid,
                                      _mm512_mul_ps(hsum16(t), _mm512_set1_ps(scale)));
  const float m_new = std::max(m, _mm512_reduce_max_ps(s));
  const __m512 p = _mm512_maskz_mov_ps(valid, simd::exp512(_mm512_sub_ps(s, _mm512_set1_ps(m_new))));
  alignas(64) float pw[16];
  _mm512_store_ps(pw, p);
  __m512 o[ND];
  if (m_new > m) {  // the max grew (always on the first chunk, where m is -inf and the sums are 0)
    const __m512 va = simd::exp512(_mm512_set1_ps(m - m_new));
    _mm512_store_ps(lv, _mm512_fmadd_ps(_mm512_load_ps(lv), va, p));
    IGNIS_UNROLL for (int c = 0; c < ND; ++c) o[c] = _mm512_mul_ps(_mm512_loadu_ps(ov + 16 * c), va);
  } else {
    _mm512_store_ps(lv, _mm512_add_ps(_mm512_load_ps(lv), p));
    IGNIS_UNROLL for (int c = 0; c < ND; ++c) o[c] = _mm512_loadu_ps(ov + 16 * c);
  }
  m = m_new;
  IGNIS_UNROLL for (int i = 0; i < 16; ++i) {
    if (i >= nj) break;
    const __m512 pi = _mm512_set1_ps(pw[i]);
    IGNIS_UNROLL for (int c = 0; c < ND; ++c) o[c] = _mm512_fmadd_ps(pi, _mm512_loadu_ps(vp[i] + 16 * c), o[c]);
  }
  IGNIS_UNROLL for (int c = 0; c < ND; ++c) _mm512_storeu_ps(ov + 16 * c, o[c]);
}

template <int ND>
void attend(const AttnTile& t, float* scratch) {
  constexpr int64_t d = 16 * ND;
  const int64_t n_vec = t.n_rows * t.n_heads;
  float* m = scratch;
  float* lv = scratch + ((n_vec + 15) / 16) * 16;  // 16 lane sums per vector, 64-byte aligned when scratch is
  float* o = lv + n_vec * 16;
  std::fill(m, m + n_vec, -std::numeric_limits<float>::infinity());
  std::fill(lv, lv + n_vec * 16, 0.0f);
  std::fill(o, o + n_vec * d, 0.0f);
  alignas(64) static const float kZeros[256] = {};
  for_each_chunk(t, kZeros, [&](int64_t v, const float* qv, const float* const kp[16], const float* const vp[16], int nj) {
    chunk_step<ND>(qv, kp, vp, nj, t.scale, m[v], lv + v * 16, o + v * d);
  });
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
