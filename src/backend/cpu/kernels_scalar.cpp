// Scalar reference vec_dot kernels (the twins of kernels_avx2.cpp / kernels_avx512.cpp).
// See kernels.h for the formulation: exact integer dots per block, one float multiply-add per block.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <iterator>

#include "backend/cpu/kernels.h"
#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quants.h"

namespace ignis::cpu {
namespace {

float dot_f32(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const float*>(w);
  const auto* b = static_cast<const float*>(x);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return static_cast<float>(s);
}

float dot_f16(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const uint16_t*>(w);
  const auto* b = static_cast<const uint16_t*>(x);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(f16_to_f32(a[i])) * f16_to_f32(b[i]);
  return static_cast<float>(s);
}

float dot_bf16(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const uint16_t*>(w);
  const auto* b = static_cast<const uint16_t*>(x);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(bf16_to_f32(a[i])) * bf16_to_f32(b[i]);
  return static_cast<float>(s);
}

// Low nibble of qs[j] is element j, high nibble element j + 16; qh bit j is the 5th bit of element j.
inline int nib(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0xf) : (qs[j - 16] >> 4); }
inline int bit5(const uint8_t* qh, int j) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return static_cast<int>((h >> j) & 1) << 4;
}

float dot_q4_0(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ4_0*>(w);
  const auto* b = static_cast<const BlockQ8_0*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += (nib(a[i].qs, j) - 8) * b[i].qs[j];
    s += sumi * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d));
  }
  return s;
}

float dot_q4_1(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ4_1*>(w);
  const auto* b = static_cast<const BlockQ8_1*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += nib(a[i].qs, j) * b[i].qs[j];
    s += sumi * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d)) + f16_to_f32(a[i].m) * f16_to_f32(b[i].s);
  }
  return s;
}

float dot_q5_0(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ5_0*>(w);
  const auto* b = static_cast<const BlockQ8_0*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += ((nib(a[i].qs, j) | bit5(a[i].qh, j)) - 16) * b[i].qs[j];
    s += sumi * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d));
  }
  return s;
}

float dot_q5_1(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ5_1*>(w);
  const auto* b = static_cast<const BlockQ8_1*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += (nib(a[i].qs, j) | bit5(a[i].qh, j)) * b[i].qs[j];
    s += sumi * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d)) + f16_to_f32(a[i].m) * f16_to_f32(b[i].s);
  }
  return s;
}

float dot_q8_0(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ8_0*>(w);
  const auto* b = static_cast<const BlockQ8_0*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += a[i].qs[j] * b[i].qs[j];
    s += sumi * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d));
  }
  return s;
}

// K-quants: element e = 128*h + 32*s + l (h < 2, s < 4, l < 32) for Q2_K / Q3_K / Q6_K.
float dot_q2_k(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ2_K*>(w);
  const auto* b = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int sumi = 0, summ = 0;
    for (int g = 0; g < 16; ++g) {
      int gs = 0;
      for (int k = 0; k < 16; ++k) {
        const int e = 16 * g + k, h = e / 128, sh = (e % 128) / 32, l = e % 32;
        gs += ((a[i].qs[32 * h + l] >> (2 * sh)) & 3) * b[i].qs[e];
      }
      sumi += (a[i].scales[g] & 0xf) * gs;
      summ += (a[i].scales[g] >> 4) * b[i].bsums[g];
    }
    s += b[i].d * f16_to_f32(a[i].d) * sumi - b[i].d * f16_to_f32(a[i].dmin) * summ;
  }
  return s;
}

float dot_q3_k(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ3_K*>(w);
  const auto* b = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int8_t sc[16];
    q3k_scales(a[i].scales, sc);
    int sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int gs = 0;
      for (int k = 0; k < 16; ++k) {
        const int e = 16 * g + k, h = e / 128, sh = (e % 128) / 32, l = e % 32;
        const int low = (a[i].qs[32 * h + l] >> (2 * sh)) & 3;
        const int high = (a[i].hmask[l] >> (4 * h + sh)) & 1;
        gs += (low - (high ? 0 : 4)) * b[i].qs[e];
      }
      sumi += sc[g] * gs;
    }
    s += b[i].d * f16_to_f32(a[i].d) * sumi;
  }
  return s;
}

// Q4_K / Q5_K: sub-block j (32 elements) uses the low (j even) or high nibble of qs[32*(j/2) + l].
float dot_q4_k(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ4_K*>(w);
  const auto* b = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int sumi = 0, summ = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      k4_scale_min(j, a[i].scales, &sc, &m);
      int js = 0;
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = a[i].qs[32 * (j / 2) + l];
        js += ((j & 1) ? (byte >> 4) : (byte & 0xf)) * b[i].qs[32 * j + l];
      }
      sumi += sc * js;
      summ += m * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
    }
    s += b[i].d * f16_to_f32(a[i].d) * sumi - b[i].d * f16_to_f32(a[i].dmin) * summ;
  }
  return s;
}

float dot_q5_k(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ5_K*>(w);
  const auto* b = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int sumi = 0, summ = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      k4_scale_min(j, a[i].scales, &sc, &m);
      int js = 0;
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = a[i].qs[32 * (j / 2) + l];
        const int q = ((j & 1) ? (byte >> 4) : (byte & 0xf)) | (((a[i].qh[l] >> j) & 1) << 4);
        js += q * b[i].qs[32 * j + l];
      }
      sumi += sc * js;
      summ += m * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
    }
    s += b[i].d * f16_to_f32(a[i].d) * sumi - b[i].d * f16_to_f32(a[i].dmin) * summ;
  }
  return s;
}

float dot_q6_k(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ6_K*>(w);
  const auto* b = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int gs = 0;
      for (int k = 0; k < 16; ++k) {
        const int e = 16 * g + k, h = e / 128, sh = (e % 128) / 32, l = e % 32;
        const uint8_t lo = a[i].ql[64 * h + 32 * (sh & 1) + l];
        const int low = sh >= 2 ? (lo >> 4) : (lo & 0xf);
        const int high = (a[i].qh[32 * h + l] >> (2 * sh)) & 3;
        gs += ((low | (high << 4)) - 32) * b[i].qs[e];
      }
      sumi += a[i].scales[g] * gs;
    }
    s += b[i].d * f16_to_f32(a[i].d) * sumi;
  }
  return s;
}

// Activation quantizers as ggml-cpu converts activations at run time on x86 (see vec_dot_x86.h):
// id = 127 / amax and halves rounded to even. Q8_K is the reference quantizer (ggml uses it at run time).
template <bool kWithSum>
void act_q8_32(const float* src, void* dst, int64_t n) {
  using Block = std::conditional_t<kWithSum, BlockQ8_1, BlockQ8_0>;
  auto* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    b[i].d = f32_to_f16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      const int q = static_cast<int>(std::nearbyint(src[j] * id));  // default mode: halves to even
      b[i].qs[j] = static_cast<int8_t>(q);
      sum += q;
    }
    if constexpr (kWithSum) b[i].s = f32_to_f16(sum * d);
  }
}

constexpr ActQuantEntry kScalarAct[] = {
    {DType::Q8_0, act_q8_32<false>},
    {DType::Q8_1, act_q8_32<true>},
    {DType::Q8_K, quants::from_float_q8_k},
};

constexpr VecDotEntry kScalar[] = {
    {DType::F32, dot_f32},   {DType::F16, dot_f16},   {DType::BF16, dot_bf16}, {DType::Q4_0, dot_q4_0},
    {DType::Q4_1, dot_q4_1}, {DType::Q5_0, dot_q5_0}, {DType::Q5_1, dot_q5_1}, {DType::Q8_0, dot_q8_0},
    {DType::Q2_K, dot_q2_k}, {DType::Q3_K, dot_q3_k}, {DType::Q4_K, dot_q4_k}, {DType::Q5_K, dot_q5_k},
    {DType::Q6_K, dot_q6_k},
};

}  // namespace

KernelTable scalar_kernels() {
  return {kScalar, static_cast<int>(std::size(kScalar)), kScalarAct, static_cast<int>(std::size(kScalarAct))};
}

}  // namespace ignis::cpu
