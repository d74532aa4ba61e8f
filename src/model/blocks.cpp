#include "model/blocks.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

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

// A scratch buffer of this thread holding at least n floats. It only grows (no zero fill or page
// faults once it is large enough); the fused products of linear_parts, qkv_rope and swiglu_ffn go here,
// one call at a time.
float* scratch(int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

}  // namespace

void rms_norm(ThreadPool& pool, const float* x, const float* w, int64_t n_rows, int64_t n, float eps, float* y) {
  const RmsNormRowFn norm_row = elementwise_kernels().rms_norm_row;
  parallel_for(pool, n_rows, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) norm_row(x + r * n, w, n, eps, y + r * n);
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
  float* tmp = scratch(n_tokens * fused.n_out);
  cpu::matmul(pool, fused, x, n_tokens, tmp);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* src = tmp + t * fused.n_out;
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

RopeRow RopeTable::row(int64_t t) const {
  const int64_t half = cfg_.n_rot / 2;
  return RopeRow{cos_.data() + t * half, sin_.data() + t * half, cfg_.head_dim, cfg_.n_rot, cfg_.neox};
}

void RopeTable::apply(float* x, int64_t n_tokens, int64_t n_heads) const {
  assert(n_tokens == n_tokens_);
  const RopeHeadsFn rope_heads = elementwise_kernels().rope_heads;
  const int64_t width = n_heads * cfg_.head_dim;
  for (int64_t t = 0; t < n_tokens; ++t) rope_heads(row(t), x + t * width, nullptr, n_heads, x + t * width);
}

void qkv_rope(ThreadPool& pool, const QkvWeights& w, const RopeTable& rope, float eps, const float* x,
              int64_t n_tokens, int64_t n_head, int64_t n_head_kv, float* q, float* k, float* v) {
  // NOTE: with fused weights the product of all three goes to scratch and one pass per token copies
  // Q and K out rotated (bias, per-head norm and RoPE applied on the way) and V with its bias, instead
  // of a copy pass and two RoPE passes. Without fused weights the three products land in q, k, v and
  // the same pass runs in place. Both run the row kernels in the order of the unfused blocks
  // (bias add, norm, rope), so they give the same bits.
  const ElementwiseKernels& ek = elementwise_kernels();
  const int64_t head_dim = rope.head_dim();
  const int64_t n_q = n_head * head_dim, n_kv = n_head_kv * head_dim;
  const bool fused = w.wqkv && w.wqkv->data;
  const float* src = nullptr;
  int64_t stride = 0;
  if (fused) {
    stride = w.wqkv->n_out;
    float* tmp = scratch(n_tokens * stride);
    cpu::matmul(pool, *w.wqkv, x, n_tokens, tmp);
    src = tmp;
  } else {
    linear(pool, *w.wq, w.bq, x, n_tokens, q);
    linear(pool, *w.wk, w.bk, x, n_tokens, k);
    linear(pool, *w.wv, w.bv, x, n_tokens, v);
  }
  // One part (Q or K) of token t: s (with bias b, if still to add) -> d.
  auto rotate = [&](const RopeRow& r, const float* s, const float* b, const float* norm, int64_t n_heads, float* d) {
    if (!norm) {
      ek.rope_heads(r, s, b, n_heads, d);
      return;
    }
    if (b) {
      for (int64_t i = 0; i < n_heads * head_dim; ++i) d[i] = s[i] + b[i];
      s = d;
    }
    for (int64_t h = 0; h < n_heads; ++h) ek.rms_norm_row(s + h * head_dim, norm, head_dim, eps, d + h * head_dim);
    ek.rope_heads(r, d, nullptr, n_heads, d);
  };
  parallel_for(pool, n_tokens, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const RopeRow r = rope.row(t);
      float* qt = q + t * n_q;
      float* kt = k + t * n_kv;
      if (!fused) {
        rotate(r, qt, nullptr, w.q_norm, n_head, qt);
        rotate(r, kt, nullptr, w.k_norm, n_head_kv, kt);
        continue;
      }
      const float* st = src + t * stride;
      rotate(r, st, w.bq, w.q_norm, n_head, qt);
      rotate(r, st + n_q, w.bk, w.k_norm, n_head_kv, kt);
      float* vt = v + t * n_kv;
      const float* sv = st + n_q + n_kv;
      if (w.bv) {
        for (int64_t i = 0; i < n_kv; ++i) vt[i] = sv[i] + w.bv[i];
      } else {
        std::copy(sv, sv + n_kv, vt);
      }
    }
  });
}

void kv_store(KvCache& cache, int64_t il, int64_t pos0, int64_t n_tokens, int64_t head_dim, const float* k,
              const float* v) {
  const F16RowFn to_f16 = elementwise_kernels().f16_row;
  const bool f16 = cache.kv_type() == DType::F16;
  const int64_t width = cache.kv_width();
  const int64_t page = cache.page_size();
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t pos = pos0 + t;
    const int64_t row = pos % page;
    void* kd = cache.k_page(il, pos / page);
    void* vd = cache.v_page(il, pos / page);
    for (int64_t h = 0; h < width / head_dim; ++h) {  // head h's row: element (h * page + row) * head_dim
      const int64_t src = t * width + h * head_dim, dst = (h * page + row) * head_dim;
      if (f16) {
        to_f16(k + src, head_dim, static_cast<uint16_t*>(kd) + dst);
        to_f16(v + src, head_dim, static_cast<uint16_t*>(vd) + dst);
      } else {
        std::memcpy(static_cast<float*>(kd) + dst, k + src, head_dim * sizeof(float));
        std::memcpy(static_cast<float*>(vd) + dst, v + src, head_dim * sizeof(float));
      }
    }
  }
}

void swiglu_ffn(ThreadPool& pool, const FfnWeights& w, const float* x, int64_t n_tokens, float* gate_buf, float* out) {
  // NOTE: SiLU(gate) * up (and their biases, when gate and up are fused) is computed straight from the
  // products into gate_buf: one pass instead of a copy and a second pass. Work items are (row, slice of
  // kCols columns) so that short ubatches still spread over the pool; the row kernel's result does not
  // depend on where a slice starts.
  // NOTE (token blocks): the FFN runs kFfnTokens tokens at a time: the up product (or the fused
  // gate/up product) into a scratch block, the gate pass into the first rows of gate_buf, the down
  // projection from there. For a whole 512-token ubatch the products were 10 MB (20 MB fused: [512, 2 x
  // 4,864] f32 for Qwen2.5-0.5B) and gate_buf 10 MB more, and they put peak RSS 5 and 13 MB above
  // llama.cpp's for the F16 and Q8_0 files. The weights are read again per block, from the L3 for these
  // shapes. Blocks are a multiple of every multi-token kernel's group (6 tokens AVX-512, 4 K-quants and
  // AVX2, 64 AMX), so only the ubatch's last block has tokens left over: with 128-token blocks (2 over
  // each) Llama-3.2-1B Q4_0 pp512 at one thread read 196-230 t/s against 216-242 unblocked; with 192,
  // 220-253. Each token's arithmetic is unchanged (batch invariance).
  constexpr int64_t kCols = 2048;
  constexpr int64_t kMinParallel = 1 << 14;  // elements
  constexpr int64_t kFfnTokens = 192;
  const SwigluRowFn silu_mul = elementwise_kernels().swiglu_row;
  const int64_t n_ff = w.gate.n_out, n_in = w.gate.n_in;
  const int64_t n_slices = (n_ff + kCols - 1) / kCols;
  const int64_t min_items = std::max<int64_t>(1, kMinParallel / std::min(kCols, n_ff));
  const bool fused = w.gate_up.data != nullptr;
  const int64_t width = fused ? w.gate_up.n_out : n_ff;  // of a scratch row
  float* tmp = nullptr;
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kFfnTokens) {
    const int64_t nt = std::min(n_tokens, t0 + kFfnTokens) - t0;
    float* gate_rows = gate_buf;
    // NOTE: a fused product of packed weights combines gate and up as it makes them (cpu::matmul_glu;
    // ops.h says where it runs): the [nt, 2 n_ff] products never go to memory and back, nor through a
    // second pass. The bits are the same (the same products, the same elementwise row kernel). pp512 at
    // one thread on a 2-core Xeon with AMX, alternated A/B/A/B (the machine drifted 15% between rounds),
    // when it ran on AMX only: Qwen2.5-0.5B Q4_0 655, 554 -> 728,
    // 673 t/s; Qwen2.5-1.5B Q4_0 200, 200 -> 223, 229; Llama-3.2-1B Q4_0 277-286 -> 294. The whole
    // ubatch at once instead of blocks of kFfnTokens measured the same.
    if (fused && cpu::matmul_glu(pool, w.gate_up, x + t0 * n_in, nt, gate_rows, silu_mul, w.gate_b, w.up_b)) {
      linear(pool, w.down, w.down_b, gate_rows, nt, out + t0 * w.down.n_out);
      continue;
    }
    if (!tmp) tmp = scratch(std::min(n_tokens, kFfnTokens) * width);
    // Token t of the block: gate at g + t * gs, up at u + t * width (unfused: the gate pass runs in place).
    const float *g = tmp, *u = tmp + n_ff, *gb = w.gate_b, *ub = w.up_b;
    int64_t gs = width;
    if (fused) {
      cpu::matmul(pool, w.gate_up, x + t0 * n_in, nt, tmp);
    } else {
      linear(pool, w.gate, w.gate_b, x + t0 * n_in, nt, gate_rows);
      linear(pool, w.up, w.up_b, x + t0 * n_in, nt, tmp);
      g = gate_rows, u = tmp, gb = ub = nullptr, gs = n_ff;
    }
    parallel_for(pool, nt * n_slices, min_items, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t t = i / n_slices, c0 = (i % n_slices) * kCols, n = std::min(kCols, n_ff - c0);
        silu_mul(g + t * gs + c0, u + t * width + c0, gb ? gb + c0 : nullptr, ub ? ub + c0 : nullptr, n,
                 gate_rows + t * n_ff + c0);
      }
    });
    linear(pool, w.down, w.down_b, gate_rows, nt, out + t0 * w.down.n_out);
  }
}

}  // namespace ignis::model
