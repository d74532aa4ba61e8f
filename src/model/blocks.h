// Shared building blocks of the transformer forward pass (GUIDE.md section 2): RMSNorm, linear layers,
// RoPE, the Q/K/V projections with RoPE fused into the split of their product, attention over a KvCache,
// SwiGLU feed-forward, residual add.
//
// All activations are f32, row-major [n_tokens, width]. Weights are cpu::WeightView (any type:
// the blocks never look at the weight format; cpu::matmul does). The elementwise work runs on the row
// kernels of elementwise_kernel.h (AVX-512 or portable, picked at run time). Functions that take a
// ThreadPool split their work over it and must be called from one thread at a time per pool; the others
// are pure and thread-safe. Fused products go to a scratch buffer owned by the calling thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "backend/cpu/ops.h"
#include "core/thread_pool.h"
#include "model/elementwise_kernel.h"
#include "model/model.h"

namespace ignis::model {

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w   for r < n_rows; x, y: [n_rows, n] (y may alias x), w: [n].
void rms_norm(ThreadPool& pool, const float* x, const float* w, int64_t n_rows, int64_t n, float eps, float* y);

// y = x W^T + b    x: [n_tokens, w.n_in], y: [n_tokens, w.n_out], b: [w.n_out] or nullptr.
void linear(ThreadPool& pool, const cpu::WeightView& w, const float* b, const float* x, int64_t n_tokens, float* y);

// One output of linear_parts: y = x W^T + b  (y: [n_tokens, w->n_out], b optional).
struct Proj {
  const cpu::WeightView* w;
  const float* b;
  float* y;
};
// Several projections of the same input x: one matmul over `fused` (the rows of every part's weight in
// order, ModelLoader::fuse) split into the parts' outputs when fused.data is set, else one matmul per
// part. Both give identical results (each output row is the same dot product).
void linear_parts(ThreadPool& pool, const cpu::WeightView& fused, std::initializer_list<Proj> parts, const float* x,
                  int64_t n_tokens);

// y += x, n elements.
void add_inplace(float* y, const float* x, int64_t n);

struct RopeConfig {
  int64_t head_dim = 0;
  int64_t n_rot = 0;                    // rotated dims per head (the first n_rot), even
  float theta = 10000.0f;               // frequency base
  float freq_scale = 1.0f;              // linear position scaling (1 / rope.scaling.factor)
  bool neox = false;                    // false: pairs (2i, 2i+1); true: pairs (i, i + n_rot/2)
  const float* freq_factors = nullptr;  // [n_rot/2] divisors of each frequency (Llama 3.1 rope_freqs)
};

// cos/sin of every (position, frequency) of one ubatch, computed once and applied to Q and K of
// every layer. Dimension pair i at position p turns by p * freq_scale * theta^(-2i/n_rot) / factor[i].
// One sequence's rows inside a ubatch that may hold several sequences: rows [row0, row0 + n_tokens)
// of the activations sit at positions pos0.. of `cache`.
struct SeqSpan {
  KvCache* cache = nullptr;
  int64_t row0 = 0;
  int64_t pos0 = 0;
  int64_t n_tokens = 0;
};

class RopeTable {
 public:
  RopeTable(const RopeConfig& cfg, int64_t pos0, int64_t n_tokens);
  // Rows of several sequences: each span's rows at its own positions.
  RopeTable(const RopeConfig& cfg, std::span<const SeqSpan> spans);
  // Rotates x: [n_tokens, n_heads * head_dim] in place.
  void apply(float* x, int64_t n_tokens, int64_t n_heads) const;
  // The rotation of row t (t < the table's n_tokens), for the row kernels of elementwise_kernel.h.
  RopeRow row(int64_t t) const;
  int64_t head_dim() const { return cfg_.head_dim; }

 private:
  RopeConfig cfg_;
  int64_t n_tokens_;
  std::vector<float> cos_;  // [n_tokens, n_rot/2]
  std::vector<float> sin_;  // [n_tokens, n_rot/2]
  void init(const std::vector<int64_t>& positions);
};

struct QkvWeights {
  const cpu::WeightView* wq = nullptr;    // [n_embd, n_head * head_dim]
  const cpu::WeightView* wk = nullptr;    // [n_embd, n_head_kv * head_dim]
  const cpu::WeightView* wv = nullptr;    // [n_embd, n_head_kv * head_dim]
  const cpu::WeightView* wqkv = nullptr;  // q, k, v fused (ModelLoader::fuse), or data == nullptr
  const float* bq = nullptr;              // optional biases
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;          // optional per-head RMSNorm weights [head_dim] (Qwen3)
  const float* k_norm = nullptr;
};

// The attention inputs of x: [n_tokens, n_embd], n_tokens being the rope table's rows:
//   q = rope(norm(x Wq^T + bq)), k = rope(norm(x Wk^T + bk)), v = x Wv^T + bv
// where norm is the per-head RMSNorm (eps) when its weights are given. Gives exactly (bit for bit) what
// linear_parts, rms_norm per head and RopeTable::apply give one after the other.
// q: [n_tokens, n_head * head_dim]; k, v: [n_tokens, n_head_kv * head_dim].
void qkv_rope(ThreadPool& pool, const QkvWeights& w, const RopeTable& rope, float eps, const float* x,
              int64_t n_tokens, int64_t n_head, int64_t n_head_kv, float* q, float* k, float* v);

// Stores K and V rows [n_tokens, kv_width] f32 of positions pos0.. into layer il of the cache, rounded
// to f16 when that is its type, each KV head's head_dim elements in that head's part of the page
// (KvCache's layout).
void kv_store(KvCache& cache, int64_t il, int64_t pos0, int64_t n_tokens, int64_t head_dim, const float* k,
              const float* v);

struct AttentionShape {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 0;  // applied to q.k (1/sqrt(head_dim))
};

// Causal multi-head attention with grouped K/V heads over layer il of the cache, which must already
// hold positions [0, pos0 + n_tokens). Token t (position pos0 + t) attends to positions 0..pos0 + t.
// q: [n_tokens, n_head * head_dim]; out: [n_tokens, n_head * head_dim].
void attention(ThreadPool& pool, KvCache& cache, int64_t il, const AttentionShape& shape, const float* q,
               int64_t n_tokens, int64_t pos0, float* out);

// The tile kernel attention() takes for heads of head_dim over an f16 (kv_f16) or f32 cache on this
// CPU: "amx", "avx512", "avx2" or "portable", at most cpu::isa_cap() (IGNIS_ISA) and without AMX under
// IGNIS_AMX=0.
const char* attention_kernel_name(int64_t head_dim, bool kv_f16);

// kv_store + attention for every span of a multi-sequence ubatch, as one parallel pass: each row
// attends over its own sequence's cache only. q, k, v, out are [total rows, width] as in attention().
// NOTE: per (row, head) the arithmetic is exactly attention()'s, so a sequence's results do not depend
// on what else is in the batch (batch invariance).
void attention_batch(ThreadPool& pool, std::span<const SeqSpan> spans, int64_t il, const AttentionShape& shape,
                     const float* q, const float* k, const float* v, float* out);

struct FfnWeights {
  cpu::WeightView gate, up, down;  // [n_embd, n_ff], [n_embd, n_ff], [n_ff, n_embd]
  cpu::WeightView gate_up;         // gate and up fused (ModelLoader::fuse), or data == nullptr
  const float* gate_b = nullptr;   // optional biases
  const float* up_b = nullptr;
  const float* down_b = nullptr;
};

// out = down(silu(gate(x)) * up(x)).  x: [n_tokens, n_embd]; gate_buf: [n_tokens, n_ff] scratch (only
// its first kFfnTokens = 192 rows are written); out: [n_tokens, n_embd] (must not alias x).
void swiglu_ffn(ThreadPool& pool, const FfnWeights& w, const float* x, int64_t n_tokens, float* gate_buf, float* out);

}  // namespace ignis::model
