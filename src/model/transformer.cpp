#include "model/transformer.h"

#include <algorithm>

#include "core/error.h"
#include "model/blocks.h"
#include "model/kv_cache.h"

namespace ignis::model {

Activations::Activations(const HParams& hp, int64_t n_tokens) {
  const auto n = [&](int64_t width) { return static_cast<size_t>(n_tokens * width); };
  x.resize(n(hp.n_embd));
  cur.resize(n(hp.n_embd));
  q.resize(n(hp.n_head * hp.head_dim));
  k.resize(n(hp.n_head_kv * hp.head_dim));
  v.resize(n(hp.n_head_kv * hp.head_dim));
  attn.resize(n(hp.n_head * hp.head_dim));
  gate.resize(n(hp.n_ff));
  up.resize(n(hp.n_ff));
  ffn.resize(n(hp.n_embd));
}

std::unique_ptr<KvCache> TransformerModel::new_cache(int64_t n_ctx) const {
  return std::make_unique<DenseKvCache>(hp_.n_layer, hp_.n_head_kv * hp_.head_dim, n_ctx);
}

void TransformerModel::forward(KvCache& cache, std::span<const int32_t> tokens, float* logits, bool all_logits,
                               ThreadPool& pool) const {
  if (cache.n_layer() != hp_.n_layer || cache.kv_width() != hp_.n_head_kv * hp_.head_dim) {
    fail("forward: the KV cache ({} layers x {}) was not made for this model ({} layers x {})", cache.n_layer(),
         cache.kv_width(), hp_.n_layer, hp_.n_head_kv * hp_.head_dim);
  }
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) fail("forward: no tokens");
  const int64_t pos0 = cache.n_past();
  if (pos0 + n > cache.n_ctx()) {
    fail("forward: {} tokens after {} cached do not fit in the context of {} tokens", n, pos0, cache.n_ctx());
  }
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= hp_.n_vocab) {
      fail("forward: token id {} at index {} is outside the vocabulary [0, {})", tokens[i], i, hp_.n_vocab);
    }
  }
  const int64_t ubatch = ubatch_size();
  for (int64_t b = 0; b < n; b += ubatch) {
    const int64_t len = std::min(ubatch, n - b);
    const bool last = b + len == n;
    float* out = nullptr;
    if (logits && all_logits) out = logits + b * hp_.n_vocab;
    if (logits && !all_logits && last) out = logits;
    forward_ubatch(cache, tokens.subspan(b, len), pos0 + b, out, all_logits, pool);
    cache.advance(len);
  }
}

int64_t TransformerModel::ubatch_size() const {
  const int64_t n_q = hp_.n_head * hp_.head_dim, n_kv = hp_.n_head_kv * hp_.head_dim;
  const int64_t per_token = static_cast<int64_t>(sizeof(float)) * (3 * hp_.n_embd + 2 * n_q + 2 * n_kv + 2 * hp_.n_ff);
  return std::clamp<int64_t>(kActivationBytes / per_token, 1, kUbatch);
}

void TransformerModel::embed(std::span<const int32_t> tokens, float* x) const {
  for (size_t t = 0; t < tokens.size(); ++t) cpu::get_row(tok_embd_, tokens[t], x + t * hp_.n_embd);
}

void TransformerModel::output_head(ThreadPool& pool, float* x, int64_t n_tokens, bool all, float* logits,
                                   const Dumper& dump) const {
  const int64_t n_out = all ? n_tokens : 1;
  float* rows = x + (n_tokens - n_out) * hp_.n_embd;
  rms_norm(pool, rows, output_norm_, n_out, hp_.n_embd, hp_.rms_eps, rows);
  dump.dump("result_norm", -1, rows, n_out, hp_.n_embd);
  cpu::matmul(pool, output_, rows, n_out, logits);
  dump.dump("result_output", -1, logits, n_out, hp_.n_vocab);
}

}  // namespace ignis::model
