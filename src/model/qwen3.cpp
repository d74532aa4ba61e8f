// Architecture "qwen3": Qwen3 dense models.
//
// Like qwen2 but without Q/K/V biases and with a per-head RMSNorm of Q and K (attn_q_norm,
// attn_k_norm, weights [head_dim]) applied after the projections and before RoPE (NEOX style).
// The head size comes from qwen3.attention.key_length and may differ from n_embd / n_head
// (Qwen3-0.6B: 1024 / 16 heads but head_dim 128). Immutable after load (see model.h).
#include <cmath>

#include "core/error.h"
#include "model/blocks.h"
#include "model/loader.h"
#include "model/registry.h"
#include "model/transformer.h"

namespace ignis::model {

namespace {

class Qwen3Model final : public TransformerModel {
 public:
  explicit Qwen3Model(std::shared_ptr<const gguf::GgufFile> file);

 private:
  struct Layer {
    const float* attn_norm = nullptr;  // [n_embd]
    cpu::WeightView wq;                // [n_embd, n_head * head_dim]
    cpu::WeightView wk;                // [n_embd, n_head_kv * head_dim]
    cpu::WeightView wv;                // [n_embd, n_head_kv * head_dim]
    cpu::WeightView wqkv;              // q, k, v fused (ModelLoader::fuse), or data == nullptr
    cpu::WeightView wo;                // [n_head * head_dim, n_embd]
    const float* q_norm = nullptr;     // [head_dim]
    const float* k_norm = nullptr;     // [head_dim]
    const float* ffn_norm = nullptr;   // [n_embd]
    FfnWeights ffn;
  };

  void forward_ubatch(std::span<const SeqSpan> spans, std::span<const int32_t> tokens,
                      std::span<const int64_t> out_rows, float* logits, ThreadPool& pool) const override;

  std::vector<Layer> layers_;
  RopeConfig rope_;
  AttentionShape attn_;
};

Qwen3Model::Qwen3Model(std::shared_ptr<const gguf::GgufFile> file) : TransformerModel(std::move(file)) {
  ModelLoader ld(*file_, "qwen3", &packed_);

  // Hyperparameters: qwen3.{context_length, embedding_length, block_count, feed_forward_length,
  // attention.head_count, attention.head_count_kv, attention.key_length, attention.value_length,
  // attention.layer_norm_rms_epsilon, rope.freq_base, rope.dimension_count, rope.scaling.type,
  // rope.scaling.factor}.
  ld.read_common_hparams(hp_);
  hp_.rope_neox = true;
  ld.check_hparams(hp_);

  // Tensor table.
  const int64_t n_embd = hp_.n_embd, n_ff = hp_.n_ff, n_vocab = hp_.n_vocab, head_dim = hp_.head_dim;
  const int64_t n_q = hp_.n_head * head_dim, n_kv = hp_.n_head_kv * head_dim;
  tok_embd_ = ld.matrix("token_embd.weight", n_embd, n_vocab, Need::kRequired, Pack::kNo);
  output_norm_ = ld.vector("output_norm.weight", n_embd);
  output_ = ld.matrix("output.weight", n_embd, n_vocab, Need::kOptional);
  hp_.tied_output = output_.data == nullptr;
  if (hp_.tied_output) output_ = ld.pack(tok_embd_);
  layers_.resize(hp_.n_layer);
  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    Layer& l = layers_[il];
    l.attn_norm = ld.vector(blk(il, "attn_norm.weight"), n_embd);
    l.wq = ld.matrix(blk(il, "attn_q.weight"), n_embd, n_q, Need::kRequired, Pack::kNo);
    l.wk = ld.matrix(blk(il, "attn_k.weight"), n_embd, n_kv, Need::kRequired, Pack::kNo);
    l.wv = ld.matrix(blk(il, "attn_v.weight"), n_embd, n_kv, Need::kRequired, Pack::kNo);
    l.wqkv = ld.fuse({&l.wq, &l.wk, &l.wv});
    l.wo = ld.matrix(blk(il, "attn_output.weight"), n_q, n_embd);
    l.q_norm = ld.vector(blk(il, "attn_q_norm.weight"), head_dim);
    l.k_norm = ld.vector(blk(il, "attn_k_norm.weight"), head_dim);
    l.ffn_norm = ld.vector(blk(il, "ffn_norm.weight"), n_embd);
    l.ffn.gate = ld.matrix(blk(il, "ffn_gate.weight"), n_embd, n_ff, Need::kRequired, Pack::kNo);
    l.ffn.up = ld.matrix(blk(il, "ffn_up.weight"), n_embd, n_ff, Need::kRequired, Pack::kNo);
    l.ffn.gate_up = ld.fuse({&l.ffn.gate, &l.ffn.up});
    l.ffn.down = ld.matrix(blk(il, "ffn_down.weight"), n_ff, n_embd);
  }
  weight_bytes_ = ld.weight_bytes();
  n_params_ = ld.n_params();

  rope_ = RopeConfig{head_dim, hp_.n_rot, hp_.rope_theta, hp_.rope_freq_scale, true, nullptr};
  attn_ = AttentionShape{hp_.n_head, hp_.n_head_kv, head_dim, 1.0f / std::sqrt(float(head_dim))};
}

void Qwen3Model::forward_ubatch(std::span<const SeqSpan> spans, std::span<const int32_t> tokens,
                               std::span<const int64_t> out_rows, float* logits, ThreadPool& pool) const {
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  const int64_t n_embd = hp_.n_embd, head_dim = hp_.head_dim;
  const int64_t n_q = hp_.n_head * head_dim, n_kv = hp_.n_head_kv * head_dim;
  const Dumper dump;
  const ActivationsLease lease = activations(n_tokens);
  Activations& a = *lease;
  const RopeTable rope(rope_, spans);

  embed(tokens, a.x);
  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    const Layer& l = layers_[il];
    const int d = static_cast<int>(il);
    rms_norm(pool, a.x, l.attn_norm, n_tokens, n_embd, hp_.rms_eps, a.cur);
    dump.dump("attn_norm", d, a.cur, n_tokens, n_embd);

    // NOTE: the dump names the projections before and after RoPE, so only then are they made apart;
    // otherwise qkv_rope rotates Q and K as it splits the fused product (the same bits either way).
    if (dump.active()) {
      linear_parts(pool, l.wqkv, {{&l.wq, nullptr, a.q}, {&l.wk, nullptr, a.k}, {&l.wv, nullptr, a.v}},
                   a.cur, n_tokens);
      dump.dump("Qcur", d, a.q, n_tokens, n_q);
      dump.dump("Kcur", d, a.k, n_tokens, n_kv);
      dump.dump("Vcur", d, a.v, n_tokens, n_kv);
      // Per-head RMSNorm: each head is one row of head_dim.
      rms_norm(pool, a.q, l.q_norm, n_tokens * hp_.n_head, head_dim, hp_.rms_eps, a.q);
      rms_norm(pool, a.k, l.k_norm, n_tokens * hp_.n_head_kv, head_dim, hp_.rms_eps, a.k);
      dump.dump("Qcur_normed", d, a.q, n_tokens, n_q);
      dump.dump("Kcur_normed", d, a.k, n_tokens, n_kv);
      rope.apply(a.q, n_tokens, hp_.n_head);
      rope.apply(a.k, n_tokens, hp_.n_head_kv);
      dump.dump("Qcur_rope", d, a.q, n_tokens, n_q);
      dump.dump("Kcur_rope", d, a.k, n_tokens, n_kv);
    } else {
      const QkvWeights qkv{&l.wq, &l.wk, &l.wv, &l.wqkv, nullptr, nullptr, nullptr, l.q_norm, l.k_norm};
      qkv_rope(pool, qkv, rope, hp_.rms_eps, a.cur, n_tokens, hp_.n_head, hp_.n_head_kv, a.q, a.k, a.v);
    }

    attention_batch(pool, spans, il, attn_, a.q, a.k, a.v, a.attn);
    dump.dump("kqv_out", d, a.attn, n_tokens, n_q);
    linear(pool, l.wo, nullptr, a.attn, n_tokens, a.cur);
    dump.dump("attn_out", d, a.cur, n_tokens, n_embd);
    add_inplace(a.x, a.cur, n_tokens * n_embd);
    dump.dump("ffn_inp", d, a.x, n_tokens, n_embd);

    rms_norm(pool, a.x, l.ffn_norm, n_tokens, n_embd, hp_.rms_eps, a.cur);
    dump.dump("ffn_norm", d, a.cur, n_tokens, n_embd);
    swiglu_ffn(pool, l.ffn, a.cur, n_tokens, a.gate, a.up, a.ffn);
    dump.dump("ffn_out", d, a.ffn, n_tokens, n_embd);
    add_inplace(a.x, a.ffn, n_tokens * n_embd);
    dump.dump("l_out", d, a.x, n_tokens, n_embd);
  }
  output_head(pool, a.x, out_rows, logits, dump);
}

}  // namespace

std::unique_ptr<Model> make_qwen3(std::shared_ptr<const gguf::GgufFile> file) {
  return std::make_unique<Qwen3Model>(std::move(file));
}

}  // namespace ignis::model
