// AVX-512 pieces shared by the attention kernels of attention_avx512.cpp and attention_amx.cpp.
// Internal linkage on purpose: each including file gets its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ignis::model {
namespace {

#define IGNIS_UNROLL _Pragma("GCC unroll 16")

// Phase 2: NV query vectors' outputs (ov[v], head_dim floats each) take the chunk's V rows with their
// weights (pw[v]), after the rescale phase 1 asked for. The vectors share every V load; each vector's
// arithmetic is the same alone or paired.
// The V rows are f32, or f16 (Row = uint16_t: widened as they are loaded, exactly, so either gives the
// same bits on the same values).
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

template <int ND, int NV, class Row = float>
inline void chunk_values(const Row* const vp[16], int nj, float* const ov[NV], const float* const pw[NV],
                         const float va[NV]) {
  __m512 o[NV][ND];
  IGNIS_UNROLL for (int v = 0; v < NV; ++v) {
    const __m512 f = _mm512_set1_ps(va[v]);
    IGNIS_UNROLL for (int c = 0; c < ND; ++c) o[v][c] = _mm512_mul_ps(_mm512_loadu_ps(ov[v] + 16 * c), f);
  }
  IGNIS_UNROLL for (int i = 0; i < 16; ++i) {
    if (i >= nj) break;
    IGNIS_UNROLL for (int c = 0; c < ND; ++c) {
      const __m512 vv = load16(vp[i] + 16 * c);
      IGNIS_UNROLL for (int v = 0; v < NV; ++v) o[v][c] = _mm512_fmadd_ps(_mm512_set1_ps(pw[v][i]), vv, o[v][c]);
    }
  }
  IGNIS_UNROLL for (int v = 0; v < NV; ++v) IGNIS_UNROLL for (int c = 0; c < ND; ++c) _mm512_storeu_ps(ov[v] + 16 * c, o[v][c]);
}

}  // namespace
}  // namespace ignis::model
