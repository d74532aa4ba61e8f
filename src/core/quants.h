// Scalar reference implementations of ggml's tensor types: block layouts, dequantization (bit-exact
// with ggml's definitions) and reference quantization. These are the "scalar twins" every SIMD kernel in
// backend/cpu is tested against. Pure functions: thread-safe.
//
// Functions take n = number of elements, a multiple of the type's block size.
#pragma once

#include <cstdint>

namespace ignis::quants {

void to_float_f32(const void* src, float* dst, int64_t n);
void from_float_f32(const float* src, void* dst, int64_t n);
void to_float_f16(const void* src, float* dst, int64_t n);
void from_float_f16(const float* src, void* dst, int64_t n);
void to_float_bf16(const void* src, float* dst, int64_t n);
void from_float_bf16(const float* src, void* dst, int64_t n);
void to_float_q4_0(const void* src, float* dst, int64_t n);
void from_float_q4_0(const float* src, void* dst, int64_t n);
void to_float_q4_1(const void* src, float* dst, int64_t n);
void from_float_q4_1(const float* src, void* dst, int64_t n);
void to_float_q5_0(const void* src, float* dst, int64_t n);
void from_float_q5_0(const float* src, void* dst, int64_t n);
void to_float_q5_1(const void* src, float* dst, int64_t n);
void from_float_q5_1(const float* src, void* dst, int64_t n);
void to_float_q8_0(const void* src, float* dst, int64_t n);
void from_float_q8_0(const float* src, void* dst, int64_t n);
void from_float_q8_1(const float* src, void* dst, int64_t n);
void to_float_q2_k(const void* src, float* dst, int64_t n);
void to_float_q3_k(const void* src, float* dst, int64_t n);
void to_float_q4_k(const void* src, float* dst, int64_t n);
void from_float_q4_k(const float* src, void* dst, int64_t n);
void to_float_q5_k(const void* src, float* dst, int64_t n);
void from_float_q5_k(const float* src, void* dst, int64_t n);
void to_float_q6_k(const void* src, float* dst, int64_t n);
void from_float_q6_k(const float* src, void* dst, int64_t n);
void from_float_q8_k(const float* src, void* dst, int64_t n);

}  // namespace ignis::quants
