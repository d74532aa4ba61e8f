// The portable body of attend_tile (attention_kernel.h), included by attention.cpp (baseline flags)
// and attention_avx2.cpp (AVX2+FMA flags, for the head widths its own kernel does not take).
// Internal linkage on purpose: each including file gets its own copy built with its own flags.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/fp16.h"
#include "model/attention_kernel.h"

namespace ignis::model {
namespace {

// q . k with 8 independent partial sums (vectorizable without reassociation flags).
inline float attn_dot(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 8;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

inline void attend_tile_generic(const AttnTile& t, float* scratch) {
  const int64_t d = t.head_dim, n_vec = t.n_rows * t.n_heads;
  float* m = scratch;            // [n_vec] running max
  float* l = m + n_vec;          // [n_vec] running sum
  float* o = l + n_vec;          // [n_vec, d] running output
  std::fill(m, m + n_vec, -std::numeric_limits<float>::infinity());
  std::fill(l, l + n_vec, 0.0f);
  std::fill(o, o + n_vec * d, 0.0f);
  const int64_t n_kv_max = t.n_kv0 + t.n_rows - 1;
  float* rows = attn_chunk_rows(t, scratch);  // the chunk's f16 K and V rows, widened
  const float* kp[kAttnChunk];
  const float* vp[kAttnChunk];
  float s[kAttnChunk];
  for (int64_t j0 = 0; j0 < n_kv_max; j0 += kAttnChunk) {
    const int64_t n_chunk = std::min<int64_t>(kAttnChunk, n_kv_max - j0);
    for (int64_t i = 0; i < n_chunk; ++i) {
      const int64_t j = j0 + i;
      const int64_t e0 = (j % t.page) * t.width + t.kv_off;
      if (!t.kv_f16) {
        kp[i] = static_cast<const float*>(t.k_pages[j / t.page]) + e0;
        vp[i] = static_cast<const float*>(t.v_pages[j / t.page]) + e0;
        continue;
      }
      const uint16_t* kh = static_cast<const uint16_t*>(t.k_pages[j / t.page]) + e0;
      const uint16_t* vh = static_cast<const uint16_t*>(t.v_pages[j / t.page]) + e0;
      float* kr = rows + i * d;
      float* vr = rows + (kAttnChunk + i) * d;
      for (int64_t e = 0; e < d; ++e) kr[e] = f16_to_f32(kh[e]), vr[e] = f16_to_f32(vh[e]);
      kp[i] = kr;
      vp[i] = vr;
    }
    for (int64_t r = 0; r < t.n_rows; ++r) {
      const int64_t n_kv = t.n_kv0 + r;
      if (j0 >= n_kv) continue;
      const int64_t nj = std::min<int64_t>(kAttnChunk, n_kv - j0);
      for (int64_t h = 0; h < t.n_heads; ++h) {
        const int64_t v = r * t.n_heads + h;
        const float* qv = t.q + r * t.q_stride + h * d;
        float mc = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < nj; ++i) {
          s[i] = attn_dot(qv, kp[i], d) * t.scale;
          mc = std::max(mc, s[i]);
        }
        const float m_new = std::max(m[v], mc);
        const float alpha = std::exp(m[v] - m_new);
        float sum = 0;
        for (int64_t i = 0; i < nj; ++i) {
          s[i] = std::exp(s[i] - m_new);
          sum += s[i];
        }
        m[v] = m_new;
        l[v] = l[v] * alpha + sum;
        float* ov = o + v * d;
        for (int64_t e = 0; e < d; ++e) ov[e] *= alpha;
        for (int64_t i = 0; i < nj; ++i) {
          const float p = s[i];
          const float* vr = vp[i];
          for (int64_t e = 0; e < d; ++e) ov[e] += p * vr[e];
        }
      }
    }
  }
  for (int64_t r = 0; r < t.n_rows; ++r)
    for (int64_t h = 0; h < t.n_heads; ++h) {
      const int64_t v = r * t.n_heads + h;
      const float inv = 1.0f / l[v];
      float* dst = t.out + r * t.q_stride + h * d;
      for (int64_t e = 0; e < d; ++e) dst[e] = o[v * d + e] * inv;
    }
}

}  // namespace
}  // namespace ignis::model
