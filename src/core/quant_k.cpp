// Scalar reference (de)quantization of the K-quants (256-element super-blocks).
//
// NOTE: like quants.cpp, every expression mirrors ggml's definition in operation order so that
// dequantization is bit-exact and the reference quantizers (ggml's make_qkx2 / make_qx searches for
// Q4_K / Q5_K / Q6_K, and Q8_K) produce the same bytes. The searches are re-derived here from ggml's
// published algorithm, not copied.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quants.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace ignis::quants {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even (the current rounding mode), for |x| < 2^22.
inline int round_even(float x) {
#if defined(__SSE2__)
  return _mm_cvtss_si32(_mm_set_ss(x));
#else
  return static_cast<int>(std::nearbyint(x));
#endif
}

// Fits x[i] ~ scale * L[i] - min with L in [0, nmax], weighted least squares over a small grid of
// candidate inverse scales (ggml's make_qkx2_quants). Returns scale; *neg_min = -min (>= 0).
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                    uint8_t* Laux, float rmin, float rdelta, int nstep) {
  float mn = x[0], mx = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (mn > 0) mn = 0;
  if (mx == mn) {
    std::memset(L, 0, n);
    *neg_min = -mn;
    return 0.0f;
  }
  float iscale = nmax / (mx - mn);
  float scale = 1 / iscale;
  float best_err = 0;
  for (int i = 0; i < n; ++i) {
    const int l = round_even(iscale * (x[i] - mn));
    L[i] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
    const float diff = scale * L[i] + mn - x[i];
    best_err += w[i] * (diff * diff);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (mx - mn);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(round_even(iscale * (x[i] - mn)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float err = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * Laux[i] + this_min - x[i];
        err += w[i] * (diff * diff);
      }
      if (err < best_err) {
        std::memcpy(L, Laux, n);
        best_err = err;
        scale = this_scale;
        mn = this_min;
      }
    }
  }
  *neg_min = -mn;
  return scale;
}

// Symmetric fit x[i] ~ scale * (L[i] - nmax) with weights x^2, trying 19 inverse scales around
// -nmax / max (ggml's make_qx_quants with rmse_type 1). L[i] in [0, 2 nmax).
float fit_scale_symmetric(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, n);
    return 0.0f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(round_even(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(round_even(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i)
        L[i] = static_cast<int8_t>(nmax + std::clamp(round_even(iscale * x[i]), -nmax, nmax - 1));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Shared by Q4_K and Q5_K: per 32-element sub-block scale/min search, 6-bit packing of scales and
// mins, then requantization of every element against the packed (rounded) scales. L gets 0..nmax.
void quantize_k_scales_mins(const float* x, int nmax, float rmin, float rdelta, int nstep,
                            uint16_t* d_out, uint16_t* dmin_out, uint8_t* packed, uint8_t* L) {
  float scales[kQKK / 32], mins[kQKK / 32], w[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQKK / 32; ++j) {
    const float* xj = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(xj[l]);
    scales[j] = fit_scale_min(32, nmax, xj, w, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(packed, 0, kKScaleBytes);
  for (int j = 0; j < kQKK / 32; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(round_even(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(round_even(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xf) | ((lm & 0xf) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = f32_to_f16(max_scale / 63.f);
  *dmin_out = f32_to_f16(max_min / 63.f);
  for (int j = 0; j < kQKK / 32; ++j) {
    uint8_t sc, m;
    k4_scale_min(j, packed, &sc, &m);
    const float d = f16_to_f32(*d_out) * sc;
    if (d == 0.0f) continue;
    const float dm = f16_to_f32(*dmin_out) * m;
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = static_cast<uint8_t>(std::clamp(round_even((x[32 * j + i] + dm) / d), 0, nmax));
  }
}

}  // namespace

void to_float_q2_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    // Element e = 128*h + 32*s + l (l < 32): 2-bit field s of qs[32*h + l]; scale index e / 16.
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, s = (e % 128) / 32, l = e % 32;
      const uint8_t sc = b[i].scales[e / 16];
      const float dl = d * (sc & 0xf);
      const float ml = dmin * (sc >> 4);
      *dst++ = dl * ((b[i].qs[32 * h + l] >> (2 * s)) & 3) - ml;
    }
  }
}

void to_float_q3_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d_all = f16_to_f32(b[i].d);
    int8_t scales[16];
    q3k_scales(b[i].scales, scales);
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, s = (e % 128) / 32, l = e % 32;
      const int low = (b[i].qs[32 * h + l] >> (2 * s)) & 3;
      const int high = (b[i].hmask[l] >> (4 * h + s)) & 1;
      const float dl = d_all * scales[e / 16];
      *dst++ = dl * (low - (high ? 0 : 4));
    }
  }
}

void to_float_q4_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    for (int e = 0; e < kQKK; ++e) {
      const int sub = e / 32, l = e % 32;
      uint8_t sc, m;
      k4_scale_min(sub, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      const uint8_t byte = b[i].qs[32 * (sub / 2) + l];
      *dst++ = d1 * ((sub & 1) ? (byte >> 4) : (byte & 0xf)) - m1;
    }
  }
}

void to_float_q5_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    for (int e = 0; e < kQKK; ++e) {
      const int sub = e / 32, l = e % 32;
      uint8_t sc, m;
      k4_scale_min(sub, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      const uint8_t byte = b[i].qs[32 * (sub / 2) + l];
      const int low = (sub & 1) ? (byte >> 4) : (byte & 0xf);
      const int high = ((b[i].qh[l] >> sub) & 1) ? 16 : 0;
      *dst++ = d1 * (low + high) - m1;
    }
  }
}

void to_float_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(b[i].d);
    // Element e = 128*h + 32*s + l: low nibble of ql[64*h + 32*(s&1) + l] (high nibble for s >= 2),
    // high 2 bits at bit 2*s of qh[32*h + l]; scale index e / 16.
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, s = (e % 128) / 32, l = e % 32;
      const uint8_t lo = b[i].ql[64 * h + 32 * (s & 1) + l];
      const int low = s >= 2 ? (lo >> 4) : (lo & 0xf);
      const int high = (b[i].qh[32 * h + l] >> (2 * s)) & 3;
      const int q = (low | (high << 4)) - 32;
      *dst++ = d * b[i].scales[e / 16] * q;
    }
  }
}

void from_float_q4_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  uint8_t L[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    quantize_k_scales_mins(src, 15, -1.f, 0.1f, 20, &b[i].d, &b[i].dmin, b[i].scales, L);
    for (int j = 0; j < kQKK / 64; ++j)
      for (int l = 0; l < 32; ++l)
        b[i].qs[32 * j + l] = static_cast<uint8_t>(L[64 * j + l] | (L[64 * j + 32 + l] << 4));
  }
}

void from_float_q5_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  uint8_t L[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    quantize_k_scales_mins(src, 31, -0.5f, 0.1f, 15, &b[i].d, &b[i].dmin, b[i].scales, L);
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    for (int j = 0; j < kQKK / 64; ++j) {
      for (int l = 0; l < 32; ++l) {
        const int l1 = L[64 * j + l], l2 = L[64 * j + 32 + l];
        b[i].qh[l] |= static_cast<uint8_t>(((l1 >> 4) << (2 * j)) | ((l2 >> 4) << (2 * j + 1)));
        b[i].qs[32 * j + l] = static_cast<uint8_t>((l1 & 0xf) | ((l2 & 0xf) << 4));
      }
    }
  }
}

void from_float_q6_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  int8_t L[kQKK];
  float scales[kQKK / 16];
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQKK / 16; ++ib) {
      scales[ib] = fit_scale_symmetric(16, 32, src + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&b[i], 0, sizeof(BlockQ6_K));
      continue;
    }
    const float iscale = -128.f / max_scale;
    b[i].d = f32_to_f16(1 / iscale);
    for (int ib = 0; ib < kQKK / 16; ++ib)
      b[i].scales[ib] = static_cast<int8_t>(std::min(127, round_even(iscale * scales[ib])));
    for (int j = 0; j < kQKK / 16; ++j) {
      const float d = f16_to_f32(b[i].d) * b[i].scales[j];
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = static_cast<int8_t>(std::clamp(round_even(src[16 * j + ii] / d), -32, 31) + 32);
    }
    for (int h = 0; h < 2; ++h) {
      const int8_t* Lh = L + 128 * h;
      uint8_t* ql = b[i].ql + 64 * h;
      uint8_t* qh = b[i].qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((Lh[l] & 0xf) | ((Lh[l + 64] & 0xf) << 4));
        ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xf) | ((Lh[l + 96] & 0xf) << 4));
        qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                     ((Lh[l + 96] >> 4) << 6));
      }
    }
  }
}

void from_float_q8_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    float max = 0, amax = 0;
    for (int j = 0; j < kQKK; ++j) {
      if (std::fabs(src[j]) > amax) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&b[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    // -127 (not -128) keeps every quant within [-127, 127], as ggml does.
    const float iscale = -127.f / max;
    for (int j = 0; j < kQKK; ++j) b[i].qs[j] = static_cast<int8_t>(std::min(127, round_even(iscale * src[j])));
    for (int j = 0; j < kQKK / 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b[i].qs[16 * j + l];
      b[i].bsums[j] = static_cast<int16_t>(sum);
    }
    b[i].d = 1 / iscale;
  }
}

}  // namespace ignis::quants
