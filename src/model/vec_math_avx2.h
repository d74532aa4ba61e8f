// Vector math for AVX2 translation units (files named *_avx2.cpp): exp over 8 floats.
// Pure inline functions; include only where AVX2 and FMA are enabled.
#pragma once

#include <immintrin.h>

namespace ignis::model::simd {

// e^x for 8 lanes: exp512's algorithm (vec_math_avx512.h: same reduction and polynomial), within 2 ulp
// for x in [-87, 88]; x <= -104 (and -inf) gives 0, x >= 88.73 +inf. AVX2 has no vscalefps, so 2^n is
// applied as two exact powers of two, 2^(n/2) then 2^(n - n/2), each a normal float for every n the
// clamped input gives: the product rounds once, also when the result is subnormal.
inline __m256 exp256(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-104.0f));
  x = _mm256_min_ps(x, _mm256_set1_ps(88.8f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.4286068203e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // n in [-150, 128]: n1 = floor(n / 2) and n2 = n - n1 both lie in [-75, 64].
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

}  // namespace ignis::model::simd
