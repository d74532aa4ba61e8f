// Vector math for AVX-512 translation units (files named *_avx512.cpp): exp over 16 floats.
// Pure inline functions; include only where AVX-512F is enabled.
#pragma once

#include <immintrin.h>

namespace ignis::model::simd {

// e^x for 16 lanes, within 2 ulp of the correctly rounded value for x in [-87, 88]; +-inf-safe:
// x <= -104 (and -inf) gives 0, x >= 88.73 gives +inf. x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two
// parts so r is exact), e^r by its degree-7 Taylor polynomial (truncation error < 6e-9 relative),
// scaled by 2^n with vscalefps (correct for results in the subnormal range too).
inline __m512 exp512(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  x = _mm512_min_ps(x, _mm512_set1_ps(88.8f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.4286068203e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace ignis::model::simd
