// Scalar reference (de)quantization of the plain and 32-wide block types. K-quants: quant_k.cpp.
//
// NOTE: the arithmetic follows ggml's definitions operation by operation (same products, same order,
// same rounding function) because dequantization must be bit-exact with ggml and quantization must
// reproduce ggml's reference quantizers byte for byte. Do not "simplify" x*d + m into fma(x, d, m):
// this file is compiled without FMA contraction on purpose (see ggml goldens in tests/quant).
#include "core/quants.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/quant_blocks.h"

namespace ignis::quants {

void to_float_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }
void from_float_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void to_float_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
}
void from_float_f16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
}
void to_float_bf16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}
void from_float_bf16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}

namespace {

// The element of largest magnitude (first one on ties), with its sign.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* mn, float* mx) {
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < lo) lo = x[j];
    if (x[j] > hi) hi = x[j];
  }
  *mn = lo;
  *mx = hi;
}

// roundf (halves away from zero) for |x| < 2^31, without the libm call: x - trunc(x) is exact.
inline int round_away(float x) {
  int q = static_cast<int>(x);
  const float frac = x - static_cast<float>(q);
  q += (frac >= 0.5f) - (frac <= -0.5f);
  return q;
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

void to_float_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = ((b[i].qs[j] & 0xf) - 8) * d;
      dst[j + kQK / 2] = ((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void from_float_q4_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const float d = signed_absmax(src, kQK) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>(src[j] * id + 8.5f));
      const int q1 = std::min(15, static_cast<int>(src[j + kQK / 2] * id + 8.5f));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void to_float_q4_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    const float m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = (b[i].qs[j] & 0xf) * d + m;
      dst[j + kQK / 2] = (b[i].qs[j] >> 4) * d + m;
    }
  }
}

void from_float_q4_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float mn, mx;
    min_max(src, kQK, &mn, &mx);
    const float d = (mx - mn) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(mn);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>((src[j] - mn) * id + 0.5f));
      const int q1 = std::min(15, static_cast<int>((src[j + kQK / 2] - mn) * id + 0.5f));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void to_float_q5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    const uint32_t qh = load_u32(b[i].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = ((qh >> j) & 1) << 4;
      const int h1 = ((qh >> (j + 16)) & 1) << 4;
      dst[j] = (((b[i].qs[j] & 0xf) | h0) - 16) * d;
      dst[j + kQK / 2] = (((b[i].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void from_float_q5_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const float d = signed_absmax(src, kQK) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(31, static_cast<int>(src[j] * id + 16.5f));
      const int q1 = std::min(31, static_cast<int>(src[j + kQK / 2] * id + 16.5f));
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0xf) | ((q1 & 0xf) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
    }
    std::memcpy(b[i].qh, &qh, 4);
  }
}

void to_float_q5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    const float m = f16_to_f32(b[i].m);
    const uint32_t qh = load_u32(b[i].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = ((qh >> j) & 1) << 4;
      const int h1 = ((qh >> (j + 16)) & 1) << 4;
      dst[j] = ((b[i].qs[j] & 0xf) | h0) * d + m;
      dst[j + kQK / 2] = ((b[i].qs[j] >> 4) | h1) * d + m;
    }
  }
}

void from_float_q5_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float mn, mx;
    min_max(src, kQK, &mn, &mx);
    const float d = (mx - mn) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(mn);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      // ggml's reference does not clamp here: (max - min) / 31 keeps every value within 31.5.
      const int q0 = static_cast<uint8_t>((src[j] - mn) * id + 0.5f);
      const int q1 = static_cast<uint8_t>((src[j + kQK / 2] - mn) * id + 0.5f);
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0xf) | ((q1 & 0xf) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    std::memcpy(b[i].qh, &qh, 4);
  }
}

void to_float_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = b[i].qs[j] * d;
  }
}

void from_float_q8_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = static_cast<int8_t>(round_away(src[j] * id));
  }
}

void from_float_q8_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      b[i].qs[j] = static_cast<int8_t>(round_away(src[j] * id));
      sum += b[i].qs[j];
    }
    b[i].s = f32_to_f16(sum * d);
  }
}

}  // namespace ignis::quants
