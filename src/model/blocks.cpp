#include "model/blocks.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "model/blocks_simd.h"

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

// Dot product with independent partial sums (lets the compiler keep several vector accumulators).
float dot_portable(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

void axpy_portable(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

struct VecKernels {
  float (*dot)(const float*, const float*, int64_t);
  void (*axpy)(float*, float, const float*, int64_t);
};

const VecKernels& vec_kernels() {
  static const VecKernels k = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      return VecKernels{simd::dot_avx2, simd::axpy_avx2};
    }
    return VecKernels{dot_portable, axpy_portable};
  }();
  return k;
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

namespace {

// Attention of every row of every span over its own cache (K/V already stored). Work items are
// (row, KV head, slice of the query heads sharing it) over all rows of all spans.
void attend_spans(ThreadPool& pool, std::span<const SeqSpan> spans, int64_t il, const AttentionShape& sh,
                  const float* q, float* out) {
  const VecKernels& vk = vec_kernels();
  const int64_t width = spans[0].cache->kv_width();
  const int64_t page = spans[0].cache->page_size();
  const int64_t group = sh.n_head / sh.n_head_kv;
  const int64_t d = sh.head_dim;
  // Per row: its span; per span: page pointers, looked up once per call rather than per row.
  int64_t n_tokens = 0, n_kv_max = 0, work = 0;
  std::vector<int32_t> row_span;
  std::vector<std::vector<const float*>> k_pages(spans.size()), v_pages(spans.size());
  for (size_t si = 0; si < spans.size(); ++si) {
    const SeqSpan& sp = spans[si];
    const int64_t n_kv = sp.pos0 + sp.n_tokens;
    n_kv_max = std::max(n_kv_max, n_kv);
    work += sp.n_tokens * n_kv;
    const int64_t n_pages = (n_kv + page - 1) / page;
    k_pages[si].resize(n_pages);
    v_pages[si].resize(n_pages);
    for (int64_t p = 0; p < n_pages; ++p) {
      k_pages[si][p] = sp.cache->k_page(il, p);
      v_pages[si][p] = sp.cache->v_page(il, p);
    }
    for (int64_t t = 0; t < sp.n_tokens; ++t) row_span.push_back(static_cast<int32_t>(si));
    n_tokens += sp.n_tokens;
  }

  // NOTE: a work item is (token, KV head, a slice of the query heads sharing it): each K/V row is
  // loaded once for all the slice's heads. The group is split into slices only when there would
  // otherwise be fewer than two items per thread (decode with few KV heads).
  const int64_t nth = pool.n_threads();
  const int64_t n_slices = std::clamp<int64_t>((2 * nth + n_tokens * sh.n_head_kv - 1) / (n_tokens * sh.n_head_kv),
                                                1, group);
  const int64_t max_slice = (group + n_slices - 1) / n_slices;
  const int64_t n_items = n_tokens * sh.n_head_kv * n_slices;
  const bool small = work * sh.n_head * d < (int64_t{1} << 15);

  parallel_for(pool, n_items, small ? n_items + 1 : 2, [&](int64_t i0, int64_t i1) {
    std::vector<float> scores(static_cast<size_t>(max_slice * n_kv_max));  // [slice, n_kv]
    std::vector<float> inv_sum(static_cast<size_t>(max_slice));
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t t = item / (sh.n_head_kv * n_slices);
      const int64_t kvh = (item / n_slices) % sh.n_head_kv;
      const int64_t sl = item % n_slices;
      const int64_t g0 = sl * group / n_slices, g1 = (sl + 1) * group / n_slices;
      const int64_t slice = g1 - g0;
      const int64_t h0 = kvh * group + g0;  // first query head of the slice
      const int64_t kv_off = kvh * d;
      const SeqSpan& sp = spans[row_span[t]];
      const int64_t si = row_span[t];
      const int64_t n_kv = sp.pos0 + (t - sp.row0) + 1;  // causal: positions 0..pos of this row
      const float* qt = q + (t * sh.n_head + h0) * d;
      float* ot = out + (t * sh.n_head + h0) * d;

      for (int64_t j = 0; j < n_kv; ++j) {
        const float* krow = k_pages[si][j / page] + (j % page) * width + kv_off;
        for (int64_t g = 0; g < slice; ++g) scores[g * n_kv + j] = vk.dot(qt + g * d, krow, d) * sh.scale;
      }
      // NOTE: softmax with the max subtracted and the sum in double: no overflow, and long contexts
      // do not lose the small terms.
      for (int64_t g = 0; g < slice; ++g) {
        float* s = scores.data() + g * n_kv;
        const float mx = *std::max_element(s, s + n_kv);
        double sum = 0;
        for (int64_t j = 0; j < n_kv; ++j) {
          s[j] = std::exp(s[j] - mx);
          sum += s[j];
        }
        inv_sum[g] = static_cast<float>(1.0 / sum);
      }
      std::fill(ot, ot + slice * d, 0.0f);
      for (int64_t j = 0; j < n_kv; ++j) {
        const float* vrow = v_pages[si][j / page] + (j % page) * width + kv_off;
        for (int64_t g = 0; g < slice; ++g) vk.axpy(ot + g * d, scores[g * n_kv + j], vrow, d);
      }
      for (int64_t g = 0; g < slice; ++g) {
        for (int64_t i = 0; i < d; ++i) ot[g * d + i] *= inv_sum[g];
      }
    }
  });
}

}  // namespace

void attention(ThreadPool& pool, KvCache& cache, int64_t il, const AttentionShape& sh, const float* q,
               int64_t n_tokens, int64_t pos0, float* out) {
  const SeqSpan span{&cache, 0, pos0, n_tokens};
  attend_spans(pool, std::span<const SeqSpan>(&span, 1), il, sh, q, out);
}

void attention_batch(ThreadPool& pool, std::span<const SeqSpan> spans, int64_t il, const AttentionShape& shape,
                     const float* q, const float* k, const float* v, float* out) {
  for (const SeqSpan& sp : spans) {
    const int64_t w = sp.cache->kv_width();
    kv_store(*sp.cache, il, sp.pos0, sp.n_tokens, k + sp.row0 * w, v + sp.row0 * w);
  }
  attend_spans(pool, spans, il, shape, q, out);
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
