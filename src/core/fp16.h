// IEEE half (f16) and bfloat16 conversions, scalar and exact.
//
// f32 -> f16 and f32 -> bf16 round to nearest, ties to even; NaN stays NaN (quieted). These are the
// rounding rules ggml uses, so blocks quantized here carry the same scale bits as ggml's.
// Pure inline functions: thread-safe.
#pragma once

#include <cstdint>
#include <cstring>

namespace ignis {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in f32.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return f32_from_bits(sign | 0x7f800000u | (mant << 13));
  return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // rounds to +-inf (>= 65520)
  if (x < 0x38800000u) {
    // Result is subnormal (or zero): adding 0.5 aligns the f32 ulp with the f16 subnormal ulp (2^-24),
    // so the hardware addition performs the round-to-nearest-even for us.
    const float t = f32_from_bits(x) + 0.5f;
    return sign | static_cast<uint16_t>(f32_bits(t) - 0x3f000000u);
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // rebias exponent (127 -> 15) and round to nearest even
  return sign | static_cast<uint16_t>(x >> 13);
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace ignis
