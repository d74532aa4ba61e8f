#include "model/blocks.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

namespace ignis::model {

namespace {

// Runs fn(begin, end) over [0, n) split across the pool, or inline when the work is too small to be
// worth waking the workers.
template <typename F>
void parallel_for(ThreadPool& pool, int64_t n, int64_t min_parallel, F&& fn) {
  if (n < min_parallel || pool.n_threads() == 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool.run([&](int ith, int nth) {
    int64_t begin, end;
    ThreadPool::split(n, ith, nth, 1, &begin, &end);
    if (begin < end) fn(begin, end);
  });
}

}  // namespace

void rms_norm(ThreadPool& pool, const float* x, const float* w, int64_t n_rows, int64_t n, float eps, float* y) {
  parallel_for(pool, n_rows, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * n;
      float* yr = y + r * n;
      double ss = 0;  // NOTE: accumulate in double like ggml, so long rows keep their precision
      for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] * scale) * w[i];
    }
  });
}

void linear(ThreadPool& pool, const cpu::WeightView& w, const float* b, const float* x, int64_t n_tokens,
            float* y) {
  cpu::matmul(pool, w, x, n_tokens, y);
  if (b) {
    for (int64_t t = 0; t < n_tokens; ++t) add_inplace(y + t * w.n_out, b, w.n_out);
  }
}

void linear_parts(ThreadPool& pool, const cpu::WeightView& fused, std::initializer_list<Proj> parts, const float* x,
                  int64_t n_tokens) {
  if (!fused.data) {
    for (const Proj& p : parts) linear(pool, *p.w, p.b, x, n_tokens, p.y);
    return;
  }
  thread_local std::vector<float> tmp;
  tmp.resize(static_cast<size_t>(n_tokens * fused.n_out));
  cpu::matmul(pool, fused, x, n_tokens, tmp.data());
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* src = tmp.data() + t * fused.n_out;
    for (const Proj& p : parts) {
      const int64_t n = p.w->n_out;
      float* dst = p.y + t * n;
      if (p.b) {
        for (int64_t i = 0; i < n; ++i) dst[i] = src[i] + p.b[i];
      } else {
        std::copy(src, src + n, dst);
      }
      src += n;
    }
  }
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

RopeTable::RopeTable(const RopeConfig& cfg, int64_t pos0, int64_t n_tokens) : cfg_(cfg), n_tokens_(n_tokens) {
  std::vector<int64_t> positions(static_cast<size_t>(n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) positions[t] = pos0 + t;
  init(positions);
}

RopeTable::RopeTable(const RopeConfig& cfg, std::span<const SeqSpan> spans) : cfg_(cfg), n_tokens_(0) {
  std::vector<int64_t> positions;
  for (const SeqSpan& sp : spans)
    for (int64_t t = 0; t < sp.n_tokens; ++t) positions.push_back(sp.pos0 + t);
  n_tokens_ = static_cast<int64_t>(positions.size());
  init(positions);
}

void RopeTable::init(const std::vector<int64_t>& positions) {
  const int64_t half = cfg_.n_rot / 2;
  const int64_t n_tokens = static_cast<int64_t>(positions.size());
  cos_.resize(static_cast<size_t>(n_tokens * half));
  sin_.resize(cos_.size());
  for (int64_t i = 0; i < half; ++i) {
    // NOTE: angles in double: positions up to 1e6 times frequencies near 1 keep their fractional part.
    double freq = std::pow(static_cast<double>(cfg_.theta), -2.0 * static_cast<double>(i) / cfg_.n_rot);
    freq *= cfg_.freq_scale;
    if (cfg_.freq_factors) freq /= cfg_.freq_factors[i];
    for (int64_t t = 0; t < n_tokens; ++t) {
      const double angle = static_cast<double>(positions[t]) * freq;
      cos_[t * half + i] = static_cast<float>(std::cos(angle));
      sin_[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void RopeTable::apply(float* x, int64_t n_tokens, int64_t n_heads) const {
  assert(n_tokens == n_tokens_);
  const int64_t half = cfg_.n_rot / 2;
  // Pair i is (x[i0], x[i1]) with i0 = 2i, i1 = 2i + 1 (normal) or i0 = i, i1 = i + n_rot/2 (neox).
  const int64_t stride = cfg_.neox ? 1 : 2;
  const int64_t offset = cfg_.neox ? half : 1;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* c = cos_.data() + t * half;
    const float* s = sin_.data() + t * half;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* xh = x + (t * n_heads + h) * cfg_.head_dim;
      for (int64_t i = 0; i < half; ++i) {
        float* p0 = xh + i * stride;
        float* p1 = p0 + offset;
        const float a = *p0, b = *p1;
        *p0 = a * c[i] - b * s[i];
        *p1 = a * s[i] + b * c[i];
      }
    }
  }
}

void kv_store(KvCache& cache, int64_t il, int64_t pos0, int64_t n_tokens, const float* k, const float* v) {
  const int64_t width = cache.kv_width();
  const int64_t page = cache.page_size();
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t pos = pos0 + t;
    const int64_t row = pos % page;
    std::memcpy(cache.k_page(il, pos / page) + row * width, k + t * width, width * sizeof(float));
    std::memcpy(cache.v_page(il, pos / page) + row * width, v + t * width, width * sizeof(float));
  }
}

void swiglu_ffn(ThreadPool& pool, const FfnWeights& w, const float* x, int64_t n_tokens, float* gate_buf,
                float* up_buf, float* out) {
  linear_parts(pool, w.gate_up, {{&w.gate, w.gate_b, gate_buf}, {&w.up, w.up_b, up_buf}}, x, n_tokens);
  const int64_t n = n_tokens * w.gate.n_out;
  parallel_for(pool, n, 1 << 14, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float g = gate_buf[i];
      gate_buf[i] = g / (1.0f + std::exp(-g)) * up_buf[i];
    }
  });
  linear(pool, w.down, w.down_b, gate_buf, n_tokens, out);
}

}  // namespace ignis::model
