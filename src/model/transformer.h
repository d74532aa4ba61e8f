// TransformerModel: what the llama-like architectures share around their forward pass.
//
// An architecture file (llama.cpp, qwen2.cpp, qwen3.cpp) derives from TransformerModel, reads its
// hyperparameters, binds its tensor table and implements forward_ubatch() with the blocks of
// blocks.h; the pre-norm decoder those three share is decoder_forward() over DecoderLayer weights. This base owns the GGUF file (so weight views stay valid), validates forward() input,
// splits long inputs into ubatches, embeds tokens and computes the output head, and keeps the
// activation buffers of past ubatches for reuse (a mutex-guarded free list, one entry per concurrent
// forward call). Otherwise immutable after construction; forward() is thread-safe for distinct caches
// and pools.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/packed.h"
#include "format/gguf.h"
#include "model/blocks.h"
#include "model/dump.h"
#include "model/model.h"

namespace ignis::model {

// Activations of one ubatch, [n_tokens, width] f32 each, carved from one buffer that is kept between
// forward calls (TransformerModel::activations), so their contents are undefined on entry.
class Activations {
 public:
  // Points the buffers at storage for n_tokens rows of hp's widths; grows the storage when needed.
  void reserve(const HParams& hp, int64_t n_tokens);

  float* x = nullptr;     // residual stream [n_tokens, n_embd]
  float* cur = nullptr;   // normed input / projection output [n_tokens, n_embd]
  float* q = nullptr;     // [n_tokens, n_head * head_dim]
  float* k = nullptr;     // [n_tokens, n_head_kv * head_dim]
  float* v = nullptr;     // [n_tokens, n_head_kv * head_dim]
  float* attn = nullptr;  // [n_tokens, n_head * head_dim]
  float* gate = nullptr;  // [n_tokens, n_ff]
  float* ffn = nullptr;   // [n_tokens, n_embd]

 private:
  // NOTE: not value-initialized: pages that no ubatch writes (the rows past a short ubatch's) are never
  // touched and stay out of the resident set.
  struct FreeDeleter {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, FreeDeleter> buf_;
  int64_t size_ = 0;
};

// The weights of one pre-norm decoder layer: RMSNorm -> Q/K/V (optional biases, optional per-head
// RMSNorm of Q and K) -> RoPE -> causal GQA attention -> output projection (optional bias) ->
// residual; RMSNorm -> SwiGLU FFN -> residual. Views into the model's file or packed store.
struct DecoderLayer {
  const float* attn_norm = nullptr;  // [n_embd]
  cpu::WeightView wq;                // [n_embd, n_head * head_dim]
  cpu::WeightView wk;                // [n_embd, n_head_kv * head_dim]
  cpu::WeightView wv;                // [n_embd, n_head_kv * head_dim]
  cpu::WeightView wqkv;              // q, k, v fused (ModelLoader::fuse), or data == nullptr
  cpu::WeightView wo;                // [n_head * head_dim, n_embd]
  const float* bq = nullptr;         // optional biases
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* bo = nullptr;
  const float* q_norm = nullptr;     // [head_dim], optional (Qwen3)
  const float* k_norm = nullptr;     // [head_dim], optional (Qwen3)
  const float* ffn_norm = nullptr;   // [n_embd]
  FfnWeights ffn;
};

class TransformerModel : public Model {
 public:
  // Tokens per ubatch: at most kUbatch, fewer when one token's activations are so wide that
  // kUbatch of them would exceed kActivationBytes (bounds memory for long prompts).
  static constexpr int64_t kUbatch = 512;
  static constexpr int64_t kActivationBytes = int64_t{256} << 20;
  int64_t ubatch_size() const;

  explicit TransformerModel(std::shared_ptr<const gguf::GgufFile> file) : file_(std::move(file)) {}

  const HParams& hparams() const override { return hp_; }
  const gguf::GgufFile& file() const override { return *file_; }
  std::shared_ptr<const gguf::GgufFile> file_ptr() const override { return file_; }
  using Model::new_cache;
  std::unique_ptr<KvCache> new_cache(int64_t n_ctx, DType kv_type) const override;
  void forward(KvCache& cache, std::span<const int32_t> tokens, float* logits, bool all_logits,
               ThreadPool& pool) const final;
  void forward_batch(std::span<SeqBatch> seqs, ThreadPool& pool) const final;
  uint64_t weight_bytes() const override { return weight_bytes_; }
  void wait_repacked() const override { packed_.wait(); }
  void finish_repacking(ThreadPool& pool) const override { packed_.finish(pool); }
  uint64_t n_params() const override { return n_params_; }

 protected:
  // Runs one ubatch: the rows of each span at its positions (their K/V go to the span's cache;
  // forward_batch() advances the caches afterwards). logits: [out_rows.size(), n_vocab] for the rows
  // listed in out_rows (indices into tokens), or nothing when out_rows is empty.
  virtual void forward_ubatch(std::span<const SeqSpan> spans, std::span<const int32_t> tokens,
                              std::span<const int64_t> out_rows, float* logits, ThreadPool& pool) const = 0;

  // Returns leased Activations to the model's free list.
  struct ActivationsReturn {
    const TransformerModel* model;
    void operator()(Activations* a) const;
  };
  using ActivationsLease = std::unique_ptr<Activations, ActivationsReturn>;
  // Activations for n_tokens rows (ubatch_size() at most), reused across forward calls. Thread-safe:
  // concurrent forward calls lease distinct ones.
  ActivationsLease activations(int64_t n_tokens) const;

  // The whole ubatch through the pre-norm decoder: embed, every layer of `layers`, output head.
  // Every intermediate is named for the Dumper (llama.cpp's tensor names).
  void decoder_forward(std::span<const DecoderLayer> layers, const RopeConfig& rope_cfg, const AttentionShape& attn,
                       std::span<const SeqSpan> spans, std::span<const int32_t> tokens,
                       std::span<const int64_t> out_rows, float* logits, ThreadPool& pool) const;

  // x[t] = token_embd row of tokens[t].  x: [n_tokens, n_embd]
  void embed(std::span<const int32_t> tokens, float* x) const;
  // logits = output(rms_norm(x, output_norm)) for the rows listed in out_rows.
  // x: [n_tokens, n_embd]; logits: [out_rows.size(), n_vocab].
  void output_head(ThreadPool& pool, const float* x, std::span<const int64_t> out_rows, float* logits,
                   const Dumper& dump) const;

  std::shared_ptr<const gguf::GgufFile> file_;
  mutable cpu::PackedStore packed_;  // repacked copies of the matrices (ModelLoader::matrix), if any (thread-safe)
  HParams hp_;
  cpu::WeightView tok_embd_;      // [n_embd, n_vocab]
  const float* output_norm_ = nullptr;  // [n_embd]
  cpu::WeightView output_;        // [n_embd, n_vocab], == tok_embd_ when tied
  uint64_t weight_bytes_ = 0;
  uint64_t n_params_ = 0;

 private:
  mutable std::mutex act_mu_;
  mutable std::vector<std::unique_ptr<Activations>> act_free_;  // guarded by act_mu_
};

}  // namespace ignis::model
