// Vector kernels of the attention block: a portable version and an AVX2+FMA one (blocks_avx2.cpp,
// compiled with AVX2 flags), picked at run time by blocks.cpp. Pure functions: thread-safe.
#pragma once

#include <cstdint>

namespace ignis::model::simd {

float dot_avx2(const float* a, const float* b, int64_t n);
void axpy_avx2(float* y, float a, const float* x, int64_t n);  // y += a * x

}  // namespace ignis::model::simd
