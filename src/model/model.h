// A loaded transformer: hyperparameters, weights bound to the memory-mapped file, and the forward pass.
//
// Model::load opens a GGUF (or builds one in memory from a Hugging Face folder), looks up the architecture in the registry (keyed by general.architecture),
// validates every tensor's presence, type and shape against the hyperparameters, and binds weights
// in place (no copy). A Model is immutable after load; forward() mutates only the KvCache it is given and
// uses the ThreadPool given to it, so two threads may run forward() concurrently on distinct caches with
// distinct pools.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace ignis::gguf {
class GgufFile;
}

namespace ignis::model {

struct HParams {
  std::string arch;          // general.architecture: "llama", "qwen2", "qwen3"
  std::string name;          // general.name (may be empty)
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;      // per-head size of q/k/v
  int64_t n_ff = 0;
  int64_t n_ctx_train = 0;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int64_t n_rot = 0;         // rotary dims (rope.dimension_count), head_dim by default
  bool rope_neox = false;    // true: rotate halves (qwen2/qwen3); false: adjacent pairs (llama)
  float rope_freq_scale = 1.0f;  // linear scaling
  bool tied_output = false;  // output head shares token_embd
};

// KV cache for one sequence. Positions are appended in order; truncate() rolls back (e.g. to reuse a
// prompt prefix). The interface is what the paged multi-sequence cache of the engine implements too.
class KvCache {
 public:
  virtual ~KvCache() = default;
  virtual int64_t n_ctx() const = 0;   // capacity in tokens
  virtual int64_t n_past() const = 0;  // tokens stored
  virtual void truncate(int64_t n) = 0;  // keep the first n tokens

  // --- Storage, used by Model::forward (callers normally need none of this). ---
  // NOTE: K and V are stored per layer in pages of page_size() consecutive positions; inside a page each
  // KV head's rows of consecutive positions are contiguous, [n_head_kv, page_size, head_dim] of kv_type()
  // (kv_width = n_head_kv * head_dim elements per position). The dense single-sequence cache is one page
  // of n_ctx positions; a paged multi-sequence cache maps a sequence's pages to pool blocks and
  // implements the same calls.
  // NOTE (head-major pages): attention reads one KV head's rows per work item. With the rows of a
  // position side by side ([page_size, kv_width]), a head's rows were 128-byte pieces 256 bytes apart
  // (Qwen2.5-0.5B), read at 5-6 GB/s per thread from DRAM; as one run per head, Qwen2.5-0.5B Q4_0
  // tg32 after 4,096 tokens (`ignis bench -p 0 -n 32 -d 4096 -t 2`, alternated twice) 63-69 -> 77-78 t/s.
  // NOTE (f16 by default): llama.cpp's default cache type; half the memory of f32 (Qwen3-0.6B at 528
  // positions: 60.8 MB against 121.6) and half the bytes attention reads per position. f16 rows are
  // rounded to nearest even as they are stored (kv_store) and widened exactly as attention reads them;
  // f32 keeps K/V unrounded (what the f32 references our tests compare with compute).
  virtual int64_t n_layer() const = 0;
  virtual int64_t kv_width() const = 0;
  virtual int64_t page_size() const = 0;
  virtual DType kv_type() const = 0;                   // DType::F16 or DType::F32
  virtual void* k_page(int64_t il, int64_t page) = 0;  // [n_head_kv, page_size, head_dim] of kv_type()
  virtual void* v_page(int64_t il, int64_t page) = 0;  // [n_head_kv, page_size, head_dim] of kv_type()
  // Marks positions [n_past, n_past + n) as stored (forward() calls it after writing all layers).
  virtual void advance(int64_t n) = 0;
};

// One sequence's part of a multi-sequence forward step (see Model::forward_batch).
struct SeqBatch {
  KvCache* cache = nullptr;
  std::span<const int32_t> tokens;  // evaluated at positions cache->n_past() ..
  float* logits = nullptr;          // [all_logits ? tokens.size() : 1, n_vocab] or nullptr
  bool all_logits = false;
};

struct LoadOptions {
  bool validate_only = false;  // load and check, used by tests of bad files
  // Hugging Face folders only (format/hf_load.h): quantize the weights at load time, in memory, as
  // `ignis quantize` would ("" = keep the checkpoint's F32/F16/BF16). Refused for GGUF files.
  std::string quant;
  int n_threads = 0;  // threads for that quantization (0: all hardware threads)
};

class Model {
 public:
  virtual ~Model() = default;

  // `path` is a GGUF file or a Hugging Face model folder (config.json, safetensors, tokenizer files).
  // Throws ignis::Error naming the file and the problem (missing key/tensor, bad shape, bad type, ...).
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opts = {});
  static std::unique_ptr<Model> load(std::shared_ptr<const gguf::GgufFile> file,
                                     const LoadOptions& opts = {});

  virtual const HParams& hparams() const = 0;
  virtual const gguf::GgufFile& file() const = 0;
  virtual std::shared_ptr<const gguf::GgufFile> file_ptr() const = 0;

  // A single-sequence cache holding up to n_ctx tokens (n_ctx > 0), of kv_type F16 (the default) or F32.
  // Throws Error if n_ctx is absurd (more memory than can be allocated) or the type is neither.
  virtual std::unique_ptr<KvCache> new_cache(int64_t n_ctx, DType kv_type) const = 0;
  std::unique_ptr<KvCache> new_cache(int64_t n_ctx) const { return new_cache(n_ctx, DType::F16); }

  // Runs tokens at positions cache.n_past() .. +tokens.size() and appends their K/V to the cache.
  // Throws Error if the tokens do not fit in the cache or an id is outside [0, n_vocab).
  // logits: if non-null, receives [n_out, n_vocab] f32 where n_out = all_logits ? tokens.size() : 1
  // (the last token's row).
  virtual void forward(KvCache& cache, std::span<const int32_t> tokens, float* logits, bool all_logits,
                       ThreadPool& pool) const = 0;

  // Several sequences in one step: their tokens go through every matrix product together (each weight
  // is read once per step for all of them), while each sequence's attention reads only its own cache.
  // A sequence's results are bit-identical to forward() on it alone (batch invariance). Same checks
  // and errors as forward(), for every sequence, before anything is computed.
  virtual void forward_batch(std::span<SeqBatch> seqs, ThreadPool& pool) const = 0;

  // Blocks until the weights' background copies (F16 on AMX, PackedStore) are made: the products run
  // at their final speed from then on. Same results before. (ignis bench uses finish_repacking.)
  virtual void wait_repacked() const {}
  // Makes the background copies still missing with the pool's threads, and returns once all are made
  // (at once if they are). For a caller about to run many single-token steps: the copies' kernels are
  // faster, and the pool makes them sooner than the background threads while the products keep the
  // cores busy. Same results before and after. Thread-safe.
  virtual void finish_repacking(ThreadPool& pool) const { (void)pool; }

  // Total bytes of weights, and number of parameters (for bench / info output).
  virtual uint64_t weight_bytes() const = 0;
  virtual uint64_t n_params() const = 0;
};

}  // namespace ignis::model
