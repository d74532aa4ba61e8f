// Portable row kernels of elementwise_kernel.h (the plain formulas) and the run-time choice of ISA.
#include <cmath>

#include "backend/cpu/kernels.h"
#include "core/fp16.h"
#include "model/elementwise_kernel.h"

namespace ignis::model {

namespace {

void rms_norm_row_portable(const float* x, const float* w, int64_t n, float eps, float* y) {
  double ss = 0;  // NOTE: accumulate in double like ggml, so long rows keep their precision
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void swiglu_row_portable(const float* g, const float* u, const float* gb, const float* ub, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float z = gb ? g[i] + gb[i] : g[i];
    const float v = ub ? u[i] + ub[i] : u[i];
    out[i] = z / (1.0f + std::exp(-z)) * v;
  }
}

void rope_heads_portable(const RopeRow& r, const float* src, const float* bias, int64_t n_heads, float* dst) {
  const int64_t half = r.n_rot / 2;
  // Pair i is (x[i0], x[i1]) with i0 = 2i, i1 = 2i + 1 (normal) or i0 = i, i1 = i + n_rot/2 (neox).
  const int64_t stride = r.neox ? 1 : 2;
  const int64_t offset = r.neox ? half : 1;
  for (int64_t h = 0; h < n_heads; ++h) {
    const float* s = src + h * r.head_dim;
    const float* b = bias ? bias + h * r.head_dim : nullptr;
    float* d = dst + h * r.head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t i0 = i * stride, i1 = i0 + offset;
      const float x0 = b ? s[i0] + b[i0] : s[i0];
      const float x1 = b ? s[i1] + b[i1] : s[i1];
      d[i0] = x0 * r.cos[i] - x1 * r.sin[i];
      d[i1] = x0 * r.sin[i] + x1 * r.cos[i];
    }
    if (d == s && !b) continue;  // the unrotated dims are already in place
    for (int64_t i = r.n_rot; i < r.head_dim; ++i) d[i] = b ? s[i] + b[i] : s[i];
  }
}

void f16_row_portable(const float* x, int64_t n, uint16_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

}  // namespace

const ElementwiseKernels& elementwise_kernels_portable() {
  static const ElementwiseKernels k{rms_norm_row_portable, swiglu_row_portable, rope_heads_portable, f16_row_portable};
  return k;
}

bool elementwise_avx512_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

bool elementwise_avx2_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

const ElementwiseKernels& elementwise_kernels() {
  static const ElementwiseKernels& k = []() -> const ElementwiseKernels& {
    const cpu::Isa cap = cpu::isa_cap();  // IGNIS_ISA caps these as it caps the products
    if (cap >= cpu::Isa::kAvx512 && elementwise_avx512_supported()) return elementwise_kernels_avx512();
    if (cap >= cpu::Isa::kAvx2 && elementwise_avx2_supported()) return elementwise_kernels_avx2();
    return elementwise_kernels_portable();
  }();
  return k;
}

}  // namespace ignis::model
