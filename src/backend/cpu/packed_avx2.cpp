// The packed kernels of packed_avx2.h for AVX2 + FMA + F16C (no AVX-VNNI), and the float types'
// activation rounding off AVX-512.
#include "backend/cpu/packed_avx2.h"

namespace ignis::cpu {

PackedKernels packed_kernels_avx2(DType t) { return avx2_family_kernels(t); }

void f16_round_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
  if (i < n) {
    alignas(32) float tmp[8] = {};
    std::memcpy(tmp, x + i, sizeof(float) * static_cast<size_t>(n - i));
    const __m256 r = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_load_ps(tmp), _MM_FROUND_TO_NEAREST_INT));
    _mm256_store_ps(tmp, r);
    std::memcpy(y + i, tmp, sizeof(float) * static_cast<size_t>(n - i));
  }
}

void bf16_round_avx2(const float* x, float* y, int64_t n) {
  // f32_to_bf16 (core/fp16.h) on 8 lanes: round to nearest even, NaNs made quiet; back as floats.
  const auto round8 = [](__m256 v) {
    const __m256i u = _mm256_castps_si256(v), hi = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i q = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_blendv_epi8(r, q, nan), hi));
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, round8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float tmp[8] = {};
    std::memcpy(tmp, x + i, sizeof(float) * static_cast<size_t>(n - i));
    _mm256_store_ps(tmp, round8(_mm256_load_ps(tmp)));
    std::memcpy(y + i, tmp, sizeof(float) * static_cast<size_t>(n - i));
  }
}

}  // namespace ignis::cpu
