// Architecture "llama": Llama 2 and 3.x, TinyLlama, Mistral 7B, SmolLM, karpathy's llama2.c stories.
//
// Pre-norm decoder: RMSNorm -> Q/K/V (optional biases) -> RoPE on adjacent pairs (llama.cpp's
// "normal" rope: the GGUF converter permutes Q/K rows for it) -> causal GQA attention -> output
// projection -> residual; RMSNorm -> SwiGLU FFN -> residual. Llama 3.1+ divides the rope frequencies
// by the optional rope_freqs.weight tensor. The output head is tied to token_embd when output.weight
// is absent. Immutable after load (see model.h for thread safety).
#include <cmath>

#include "core/error.h"
#include "model/blocks.h"
#include "model/loader.h"
#include "model/registry.h"
#include "model/transformer.h"

namespace ignis::model {

namespace {

class LlamaModel final : public TransformerModel {
 public:
  explicit LlamaModel(std::shared_ptr<const gguf::GgufFile> file);

 private:
  void forward_ubatch(std::span<const SeqSpan> spans, std::span<const int32_t> tokens,
                      std::span<const int64_t> out_rows, float* logits, ThreadPool& pool) const override;

  std::vector<DecoderLayer> layers_;
  RopeConfig rope_;
  AttentionShape attn_;
};

LlamaModel::LlamaModel(std::shared_ptr<const gguf::GgufFile> file) : TransformerModel(std::move(file)) {
  ModelLoader ld(*file_, "llama", &packed_);

  // Hyperparameters: llama.{context_length, embedding_length, block_count, feed_forward_length,
  // attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon, rope.freq_base,
  // rope.dimension_count, rope.scaling.type, rope.scaling.factor}.
  ld.read_common_hparams(hp_);
  hp_.rope_neox = false;
  ld.check_hparams(hp_);
  if (hp_.n_rot != hp_.head_dim) {
    fail("{}: metadata key llama.rope.dimension_count = {} must equal the head size {}", ld.path(), hp_.n_rot,
         hp_.head_dim);
  }

  // Tensor table.
  const int64_t n_embd = hp_.n_embd, n_ff = hp_.n_ff, n_vocab = hp_.n_vocab;
  const int64_t n_q = hp_.n_head * hp_.head_dim, n_kv = hp_.n_head_kv * hp_.head_dim;
  tok_embd_ = ld.matrix("token_embd.weight", n_embd, n_vocab, Need::kRequired, Pack::kNo);
  output_norm_ = ld.vector("output_norm.weight", n_embd);
  output_ = ld.matrix("output.weight", n_embd, n_vocab, Need::kOptional);
  hp_.tied_output = output_.data == nullptr;
  if (hp_.tied_output) output_ = ld.tied_output(tok_embd_);
  const float* rope_freqs = ld.vector("rope_freqs.weight", hp_.n_rot / 2, Need::kOptional);
  layers_.resize(hp_.n_layer);
  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    DecoderLayer& l = layers_[il];
    l.attn_norm = ld.vector(blk(il, "attn_norm.weight"), n_embd);
    l.wq = ld.matrix(blk(il, "attn_q.weight"), n_embd, n_q, Need::kRequired, Pack::kNo);
    l.wk = ld.matrix(blk(il, "attn_k.weight"), n_embd, n_kv, Need::kRequired, Pack::kNo);
    l.wv = ld.matrix(blk(il, "attn_v.weight"), n_embd, n_kv, Need::kRequired, Pack::kNo);
    l.wqkv = ld.fuse({&l.wq, &l.wk, &l.wv});
    l.wo = ld.matrix(blk(il, "attn_output.weight"), n_q, n_embd);
    l.bq = ld.vector(blk(il, "attn_q.bias"), n_q, Need::kOptional);
    l.bk = ld.vector(blk(il, "attn_k.bias"), n_kv, Need::kOptional);
    l.bv = ld.vector(blk(il, "attn_v.bias"), n_kv, Need::kOptional);
    l.bo = ld.vector(blk(il, "attn_output.bias"), n_embd, Need::kOptional);
    l.ffn_norm = ld.vector(blk(il, "ffn_norm.weight"), n_embd);
    l.ffn.gate = ld.matrix(blk(il, "ffn_gate.weight"), n_embd, n_ff, Need::kRequired, Pack::kNo);
    l.ffn.up = ld.matrix(blk(il, "ffn_up.weight"), n_embd, n_ff, Need::kRequired, Pack::kNo);
    l.ffn.gate_up = ld.fuse({&l.ffn.gate, &l.ffn.up});
    l.ffn.down = ld.matrix(blk(il, "ffn_down.weight"), n_ff, n_embd);
    l.ffn.gate_b = ld.vector(blk(il, "ffn_gate.bias"), n_ff, Need::kOptional);
    l.ffn.up_b = ld.vector(blk(il, "ffn_up.bias"), n_ff, Need::kOptional);
    l.ffn.down_b = ld.vector(blk(il, "ffn_down.bias"), n_embd, Need::kOptional);
  }
  weight_bytes_ = ld.weight_bytes();
  n_params_ = ld.n_params();

  rope_ = RopeConfig{hp_.head_dim, hp_.n_rot, hp_.rope_theta, hp_.rope_freq_scale, false, rope_freqs};
  attn_ = AttentionShape{hp_.n_head, hp_.n_head_kv, hp_.head_dim, 1.0f / std::sqrt(float(hp_.head_dim))};
}

void LlamaModel::forward_ubatch(std::span<const SeqSpan> spans, std::span<const int32_t> tokens,
                               std::span<const int64_t> out_rows, float* logits, ThreadPool& pool) const {
  decoder_forward(layers_, rope_, attn_, spans, tokens, out_rows, logits, pool);
}

}  // namespace

std::unique_ptr<Model> make_llama(std::shared_ptr<const gguf::GgufFile> file) {
  return std::make_unique<LlamaModel>(std::move(file));
}

}  // namespace ignis::model
