#include "model/transformer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "model/blocks.h"
#include "model/kv_cache.h"

namespace ignis::model {

void Activations::FreeDeleter::operator()(float* p) const { std::free(p); }

void Activations::reserve(const HParams& hp, int64_t n_tokens) {
  // Each buffer starts on a 64-byte boundary relative to the storage.
  const auto n = [&](int64_t width) { return (n_tokens * width + 15) / 16 * 16; };
  const int64_t n_q = hp.n_head * hp.head_dim, n_kv = hp.n_head_kv * hp.head_dim;
  const int64_t total = 3 * n(hp.n_embd) + 2 * n(n_q) + 2 * n(n_kv) + n(hp.n_ff);
  if (size_ < total) {
    buf_.reset();
    // NOTE: prefill-sized storage goes on 2 MiB pages where the kernel gives them (madvise): a prefill
    // product writes each token's outputs a row apart (38 KB for the fused FFN input of Qwen2.5-0.5B),
    // and with 4 KiB pages the AMX kernel's 64 rows per call missed the TLB: that product measured 207 ->
    // 236 GMAC/s on one thread with huge pages. Untouched 2 MiB ranges stay out of RSS. Small (decode)
    // storage keeps 4 KiB pages: one touched huge page would be 2 MiB of RSS per concurrent forward.
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t want = static_cast<size_t>(total) * sizeof(float);
    const bool huge = want >= 4 * kHuge;
    const size_t align = huge ? kHuge : 64;
    const size_t bytes = (want + align - 1) / align * align;
    auto* mem = static_cast<float*>(std::aligned_alloc(align, bytes));
    if (!mem) fail("activations: cannot allocate {} bytes for {} tokens", bytes, n_tokens);
    if (huge) ::madvise(mem, bytes, MADV_HUGEPAGE);
    buf_.reset(mem);
    size_ = total;
  }
  float* p = buf_.get();
  const auto take = [&](int64_t width) {
    float* r = p;
    p += n(width);
    return r;
  };
  x = take(hp.n_embd);
  cur = take(hp.n_embd);
  q = take(n_q);
  k = take(n_kv);
  v = take(n_kv);
  attn = take(n_q);
  gate = take(hp.n_ff);
  ffn = take(hp.n_embd);
}

void TransformerModel::ActivationsReturn::operator()(Activations* a) const {
  std::unique_ptr<Activations> owned(a);
  std::lock_guard<std::mutex> lock(model->act_mu_);
  try {
    model->act_free_.push_back(std::move(owned));
  } catch (const std::bad_alloc&) {
    // Not kept for reuse: freed here.
  }
}

TransformerModel::ActivationsLease TransformerModel::activations(int64_t n_tokens) const {
  // NOTE: a ubatch used to allocate and zero-fill its activations (tens of MB for a 512-token ubatch)
  // on every call, paying the memset and the page faults each time. They are now kept in a free list
  // of the model: one Activations per concurrent forward call, each as large as the largest ubatch it
  // served (bounded by kActivationBytes), freed with the model.
  std::unique_ptr<Activations> a;
  {
    std::lock_guard<std::mutex> lock(act_mu_);
    if (!act_free_.empty()) {
      a = std::move(act_free_.back());
      act_free_.pop_back();
    }
  }
  if (!a) a = std::make_unique<Activations>();
  a->reserve(hp_, n_tokens);
  return ActivationsLease(a.release(), ActivationsReturn{this});
}

std::unique_ptr<KvCache> TransformerModel::new_cache(int64_t n_ctx, DType kv_type) const {
  return std::make_unique<DenseKvCache>(hp_.n_layer, hp_.n_head_kv * hp_.head_dim, n_ctx, kv_type);
}

void TransformerModel::forward(KvCache& cache, std::span<const int32_t> tokens, float* logits, bool all_logits,
                               ThreadPool& pool) const {
  SeqBatch one{&cache, tokens, logits, all_logits};
  forward_batch(std::span<SeqBatch>(&one, 1), pool);
}

void TransformerModel::forward_batch(std::span<SeqBatch> seqs, ThreadPool& pool) const {
  for (const SeqBatch& s : seqs) {
    KvCache& cache = *s.cache;
    if (cache.n_layer() != hp_.n_layer || cache.kv_width() != hp_.n_head_kv * hp_.head_dim) {
      fail("forward: the KV cache ({} layers x {}) was not made for this model ({} layers x {})", cache.n_layer(),
           cache.kv_width(), hp_.n_layer, hp_.n_head_kv * hp_.head_dim);
    }
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (n == 0) fail("forward: no tokens");
    const int64_t pos0 = cache.n_past();
    if (pos0 + n > cache.n_ctx()) {
      fail("forward: {} tokens after {} cached do not fit in the context of {} tokens", n, pos0, cache.n_ctx());
    }
    for (int64_t i = 0; i < n; ++i) {
      if (s.tokens[i] < 0 || s.tokens[i] >= hp_.n_vocab) {
        fail("forward: token id {} at index {} is outside the vocabulary [0, {})", s.tokens[i], i, hp_.n_vocab);
      }
    }
  }
  for (size_t a = 0; a < seqs.size(); ++a)
    for (size_t b = a + 1; b < seqs.size(); ++b)
      if (seqs[a].cache == seqs[b].cache) fail("forward: two sequences of one batch share a KV cache");

  // NOTE: the sequences' tokens are laid end to end and cut into ubatches of at most ubatch_size()
  // rows; a sequence may continue in the next ubatch (its cache has advanced by then).
  const int64_t ubatch = ubatch_size();
  std::vector<int64_t> done(seqs.size(), 0);
  size_t cur = 0;
  std::vector<int32_t> toks;
  std::vector<SeqSpan> spans;
  std::vector<int64_t> out_rows;
  std::vector<float*> out_dst;
  std::vector<float> out;
  while (cur < seqs.size()) {
    toks.clear();
    spans.clear();
    out_rows.clear();
    out_dst.clear();
    while (cur < seqs.size() && static_cast<int64_t>(toks.size()) < ubatch) {
      SeqBatch& s = seqs[cur];
      const int64_t n = static_cast<int64_t>(s.tokens.size());
      const int64_t m = std::min(n - done[cur], ubatch - static_cast<int64_t>(toks.size()));
      const int64_t row0 = static_cast<int64_t>(toks.size());
      spans.push_back(SeqSpan{s.cache, row0, s.cache->n_past(), m});
      toks.insert(toks.end(), s.tokens.begin() + done[cur], s.tokens.begin() + done[cur] + m);
      if (s.logits && s.all_logits) {
        for (int64_t j = 0; j < m; ++j) {
          out_rows.push_back(row0 + j);
          out_dst.push_back(s.logits + (done[cur] + j) * hp_.n_vocab);
        }
      } else if (s.logits && done[cur] + m == n) {
        out_rows.push_back(row0 + m - 1);
        out_dst.push_back(s.logits);
      }
      done[cur] += m;
      if (done[cur] == n) ++cur;
    }
    // NOTE: when the destinations are consecutive rows of one buffer (the engine's step buffer, a
    // single sequence) the head writes straight into them; otherwise through a reused temporary
    // (a fresh one per call was a zero-filled 10 MB for 16 sequences of a 152k vocabulary).
    bool direct = !out_dst.empty();
    for (size_t r = 1; r < out_dst.size() && direct; ++r) direct = out_dst[r] == out_dst[0] + r * hp_.n_vocab;
    float* dst = direct ? out_dst[0] : nullptr;
    if (!direct) {
      if (out.size() < out_rows.size() * static_cast<size_t>(hp_.n_vocab)) out.resize(out_rows.size() * hp_.n_vocab);
      dst = out.data();
    }
    forward_ubatch(spans, toks, out_rows, dst, pool);
    for (const SeqSpan& sp : spans) sp.cache->advance(sp.n_tokens);
    if (!direct)
      for (size_t r = 0; r < out_rows.size(); ++r)
        std::copy(out.begin() + r * hp_.n_vocab, out.begin() + (r + 1) * hp_.n_vocab, out_dst[r]);
  }
}

int64_t TransformerModel::ubatch_size() const {
  const int64_t n_q = hp_.n_head * hp_.head_dim, n_kv = hp_.n_head_kv * hp_.head_dim;
  const int64_t per_token = static_cast<int64_t>(sizeof(float)) * (3 * hp_.n_embd + 2 * n_q + 2 * n_kv + hp_.n_ff);  // as reserve()
  return std::clamp<int64_t>(kActivationBytes / per_token, 1, kUbatch);
}

void TransformerModel::embed(std::span<const int32_t> tokens, float* x) const {
  for (size_t t = 0; t < tokens.size(); ++t) cpu::get_row(tok_embd_, tokens[t], x + t * hp_.n_embd);
  // NOTE: rows read through the file mapping (an embedding the packed copies cannot serve, e.g. a Q6_K
  // one) stay mapped, and the kernel maps the 64 KiB around each faulting row. The pages are handed back
  // after each lookup (the page cache keeps them; the next read maps them again): the windows of the rows
  // read, or the whole table for a long ubatch (one call). Peak RSS of Qwen2.5-1.5B Q4_K_M (tied Q6_K
  // embedding), bench -p 512 -n 16 -t 2: 1,163 -> 1,137 MB.
  if (tok_embd_.packed) return;
  constexpr uintptr_t kWindow = uintptr_t{64} << 10;
  constexpr size_t kWholeTable = 16;  // tokens
  const auto* base = static_cast<const uint8_t*>(tok_embd_.data);
  const size_t rb = row_bytes(tok_embd_.type, tok_embd_.n_in), all = rb * static_cast<size_t>(tok_embd_.n_out);
  if (tokens.size() > kWholeTable) return file_->release_pages(base, all);
  const auto b = reinterpret_cast<uintptr_t>(base);
  for (const int32_t tok : tokens) {
    const uintptr_t r = b + rb * static_cast<size_t>(tok);
    const uintptr_t lo = std::max(b, r / kWindow * kWindow), hi = std::min(b + all, (r + rb + kWindow - 1) / kWindow * kWindow);
    file_->release_pages(reinterpret_cast<const void*>(lo), hi - lo);
  }
}

void TransformerModel::output_head(ThreadPool& pool, const float* x, std::span<const int64_t> out_rows,
                                   float* logits, const Dumper& dump) const {
  const int64_t n_out = static_cast<int64_t>(out_rows.size());
  if (n_out == 0) return;
  std::vector<float> rows(static_cast<size_t>(n_out * hp_.n_embd));
  for (int64_t r = 0; r < n_out; ++r)
    std::copy(x + out_rows[r] * hp_.n_embd, x + (out_rows[r] + 1) * hp_.n_embd, rows.begin() + r * hp_.n_embd);
  rms_norm(pool, rows.data(), output_norm_, n_out, hp_.n_embd, hp_.rms_eps, rows.data());
  dump.dump("result_norm", -1, rows.data(), n_out, hp_.n_embd);
  cpu::matmul(pool, output_, rows.data(), n_out, logits);
  dump.dump("result_output", -1, logits, n_out, hp_.n_vocab);
}

void TransformerModel::decoder_forward(std::span<const DecoderLayer> layers, const RopeConfig& rope_cfg,
                                       const AttentionShape& attn, std::span<const SeqSpan> spans,
                                       std::span<const int32_t> tokens, std::span<const int64_t> out_rows,
                                       float* logits, ThreadPool& pool) const {
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  const int64_t n_embd = hp_.n_embd, head_dim = hp_.head_dim;
  const int64_t n_q = hp_.n_head * head_dim, n_kv = hp_.n_head_kv * head_dim;
  const Dumper dump;
  const ActivationsLease lease = activations(n_tokens);
  Activations& a = *lease;
  const RopeTable rope(rope_cfg, spans);

  embed(tokens, a.x);
  for (int64_t il = 0; il < static_cast<int64_t>(layers.size()); ++il) {
    const DecoderLayer& l = layers[il];
    const int d = static_cast<int>(il);
    rms_norm(pool, a.x, l.attn_norm, n_tokens, n_embd, hp_.rms_eps, a.cur);
    dump.dump("attn_norm", d, a.cur, n_tokens, n_embd);

    // NOTE: the dump names the projections before and after RoPE, so only then are they made apart;
    // otherwise qkv_rope rotates Q and K as it splits the fused product (the same bits either way).
    if (dump.active()) {
      linear_parts(pool, l.wqkv, {{&l.wq, l.bq, a.q}, {&l.wk, l.bk, a.k}, {&l.wv, l.bv, a.v}}, a.cur, n_tokens);
      dump.dump("Qcur", d, a.q, n_tokens, n_q);
      dump.dump("Kcur", d, a.k, n_tokens, n_kv);
      dump.dump("Vcur", d, a.v, n_tokens, n_kv);
      if (l.q_norm) {  // per-head RMSNorm: each head is one row of head_dim
        rms_norm(pool, a.q, l.q_norm, n_tokens * hp_.n_head, head_dim, hp_.rms_eps, a.q);
        rms_norm(pool, a.k, l.k_norm, n_tokens * hp_.n_head_kv, head_dim, hp_.rms_eps, a.k);
        dump.dump("Qcur_normed", d, a.q, n_tokens, n_q);
        dump.dump("Kcur_normed", d, a.k, n_tokens, n_kv);
      }
      rope.apply(a.q, n_tokens, hp_.n_head);
      rope.apply(a.k, n_tokens, hp_.n_head_kv);
      dump.dump("Qcur_rope", d, a.q, n_tokens, n_q);
      dump.dump("Kcur_rope", d, a.k, n_tokens, n_kv);
    } else {
      const QkvWeights qkv{&l.wq, &l.wk, &l.wv, &l.wqkv, l.bq, l.bk, l.bv, l.q_norm, l.k_norm};
      qkv_rope(pool, qkv, rope, hp_.rms_eps, a.cur, n_tokens, hp_.n_head, hp_.n_head_kv, a.q, a.k, a.v);
    }

    attention_batch(pool, spans, il, attn, a.q, a.k, a.v, a.attn);
    dump.dump("kqv_out", d, a.attn, n_tokens, n_q);
    linear(pool, l.wo, l.bo, a.attn, n_tokens, a.cur);
    dump.dump("attn_out", d, a.cur, n_tokens, n_embd);
    add_inplace(a.x, a.cur, n_tokens * n_embd);
    dump.dump("ffn_inp", d, a.x, n_tokens, n_embd);

    rms_norm(pool, a.x, l.ffn_norm, n_tokens, n_embd, hp_.rms_eps, a.cur);
    dump.dump("ffn_norm", d, a.cur, n_tokens, n_embd);
    swiglu_ffn(pool, l.ffn, a.cur, n_tokens, a.gate, a.ffn);
    dump.dump("ffn_out", d, a.ffn, n_tokens, n_embd);
    add_inplace(a.x, a.ffn, n_tokens * n_embd);
    dump.dump("l_out", d, a.x, n_tokens, n_embd);
  }
  output_head(pool, a.x, out_rows, logits, dump);
}

}  // namespace ignis::model
