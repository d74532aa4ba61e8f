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

// Phase 1 of one query vector against one chunk: the chunk's softmax weights. ND = head_dim / 16. kp
// holds 16 valid row pointers (past the chunk's end they point at zeros); lanes i >= nj are masked out.
// lv: the vector's 16 lane sums of the softmax weights (reduced once, after the last chunk). Writes the
// 16 weights to pw and, when the running max grew, the factor the output must be rescaled by to *va
// (else *va = 0 and *grew = false).
// NOTE: every loop is unrolled so scores stay in registers.
// NOTE (per-chunk cost): the sums stay in lanes and the rescale (exp(m - m_new), its multiplies) runs only
// when the running max grows: the horizontal sum and the scalar exp were a dependent chain in every step,
// and past the first chunks the max seldom moves.
template <int ND>
inline void chunk_weights(const float* qv, const float* const kp[16], int nj, float scale, float& m, float* lv,
                          float* pw, float* va, bool* grew) {
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
  _mm512_store_ps(pw, p);
  *grew = m_new > m;
  if (*grew) {  // the max grew (always on the first chunk, where m is -inf and the sums are 0)
    const __m512 vf = simd::exp512(_mm512_set1_ps(m - m_new));
    _mm512_store_ps(lv, _mm512_fmadd_ps(_mm512_load_ps(lv), vf, p));
    *va = _mm512_cvtss_f32(vf);
  } else {
    _mm512_store_ps(lv, _mm512_add_ps(_mm512_load_ps(lv), p));
  }
  m = m_new;
}

// Phase 2: NV query vectors' outputs (ov[v], head_dim floats each) take the chunk's V rows with their
// weights (pw[v]), after the rescale phase 1 asked for. The vectors share every V load; each vector's
// arithmetic is the same alone or paired.
template <int ND, int NV>
inline void chunk_values(const float* const vp[16], int nj, float* const ov[NV], const float* const pw[NV],
                         const float va[NV], const bool grew[NV]) {
  __m512 o[NV][ND];
  IGNIS_UNROLL for (int v = 0; v < NV; ++v) {
    if (grew[v]) {
      const __m512 f = _mm512_set1_ps(va[v]);
      IGNIS_UNROLL for (int c = 0; c < ND; ++c) o[v][c] = _mm512_mul_ps(_mm512_loadu_ps(ov[v] + 16 * c), f);
    } else {
      IGNIS_UNROLL for (int c = 0; c < ND; ++c) o[v][c] = _mm512_loadu_ps(ov[v] + 16 * c);
    }
  }
  IGNIS_UNROLL for (int i = 0; i < 16; ++i) {
    if (i >= nj) break;
    IGNIS_UNROLL for (int c = 0; c < ND; ++c) {
      const __m512 vv = _mm512_loadu_ps(vp[i] + 16 * c);
      IGNIS_UNROLL for (int v = 0; v < NV; ++v) o[v][c] = _mm512_fmadd_ps(_mm512_set1_ps(pw[v][i]), vv, o[v][c]);
    }
  }
  IGNIS_UNROLL for (int v = 0; v < NV; ++v) IGNIS_UNROLL for (int c = 0; c < ND; ++c) _mm512_storeu_ps(ov[v] + 16 * c, o[v][c]);
}

// NOTE (two phases per row and chunk): first every head's softmax weights, then every head's outputs.
// One vector's chunk is a long dependent chain (scores, horizontal sum, max, exp, then 16-deep FMA chains
// into the output), and done a vector at a time the core overlapped little of one vector's chain with
// the next; in phases the independent vectors sit next to each other, and phase 2 takes the heads in
// pairs that share the V loads. The arithmetic of each vector is unchanged.
template <int ND>
void attend(const AttnTile& t, float* scratch) {
  constexpr int64_t d = 16 * ND;
  constexpr int kPair = ND <= 8 ? 2 : 1;
  const int64_t n_vec = t.n_rows * t.n_heads;
  float* m = scratch;
  float* lv = scratch + ((n_vec + 15) / 16) * 16;  // 16 lane sums per vector, 64-byte aligned when scratch is
  float* o = lv + n_vec * 16;
  float* pw = o + n_vec * d;  // 16 weights per head of the row in flight
  std::fill(m, m + n_vec, -std::numeric_limits<float>::infinity());
  std::fill(lv, lv + n_vec * 16, 0.0f);
  std::fill(o, o + n_vec * d, 0.0f);
  alignas(64) static const float kZeros[256] = {};
  constexpr int kMaxHeads = 64;
  float va[kMaxHeads];
  bool grew[kMaxHeads];
  for_each_chunk_row(t, kZeros, [&](int64_t r, const float* const* kp, const float* const* vp, int nj) {
    const int64_t v0 = r * t.n_heads;
    for (int64_t h0 = 0; h0 < t.n_heads; h0 += kMaxHeads) {
      const int nh = static_cast<int>(std::min<int64_t>(kMaxHeads, t.n_heads - h0));
      for (int h = 0; h < nh; ++h) {
        const int64_t v = v0 + h0 + h;
        chunk_weights<ND>(t.q + r * t.q_stride + (h0 + h) * d, kp, nj, t.scale, m[v], lv + v * 16, pw + 16 * h, &va[h],
                          &grew[h]);
      }
      int h = 0;
      for (; h + kPair <= nh; h += kPair) {
        float* ov[kPair];
        const float* pv[kPair];
        IGNIS_UNROLL for (int k = 0; k < kPair; ++k) {
          ov[k] = o + (v0 + h0 + h + k) * d;
          pv[k] = pw + 16 * (h + k);
        }
        chunk_values<ND, kPair>(vp, nj, ov, pv, &va[h], &grew[h]);
      }
      if (h < nh) {
        float* ov[1] = {o + (v0 + h0 + h) * d};
        const float* pv[1] = {pw + 16 * h};
        chunk_values<ND, 1>(vp, nj, ov, pv, &va[h], &grew[h]);
      }
    }
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
