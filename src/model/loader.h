// Helpers the architecture files use to read hyperparameters and bind weights from a GGUF.
//
// ModelLoader wraps one GgufFile: key getters prefix the architecture ("llama" + ".block_count") and
// throw ignis::Error naming the file and the key; tensor getters check presence, type and shape
// against the expected [ne0, ne1] (ggml order) and return views into the mapping (no copy).
// Messages look like "model.gguf: tensor blk.3.attn_q.weight has shape [896, 512], expected [896, 896]".
// Used on one thread during load; the returned views are immutable.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/packed.h"
#include "format/gguf.h"
#include "model/model.h"

namespace ignis::model {

enum class Need { kRequired, kOptional };
// Whether matrix() may repack a weight for the packed matmul kernels (backend/cpu/packed.h). Tensors
// read row by row (get_row: the token embedding) stay unpacked.
enum class Pack { kYes, kNo };

class ModelLoader {
 public:
  // With a store, matrix() repacks the weights it can into it (the model owns the store) and releases
  // the source pages of the mapping it no longer reads.
  ModelLoader(const gguf::GgufFile& file, std::string arch, cpu::PackedStore* store = nullptr);

  const gguf::GgufFile& file() const { return file_; }
  const std::string& path() const { return file_.path(); }
  const std::string& arch() const { return arch_; }

  // "<arch>.<suffix>" keys. req_* throw when absent; opt_* return `def` when absent. All throw on a
  // wrong type or a value outside [lo, hi].
  int64_t req_int(std::string_view suffix, int64_t lo, int64_t hi) const;
  int64_t opt_int(std::string_view suffix, int64_t def, int64_t lo, int64_t hi) const;
  float req_float(std::string_view suffix, double lo, double hi) const;
  float opt_float(std::string_view suffix, float def, double lo, double hi) const;
  std::string opt_string(std::string_view suffix, const std::string& def) const;
  bool has(std::string_view suffix) const;

  // Reads the keys every llama-like architecture shares into `hp` (sizes, heads, eps, rope base,
  // rope scaling); the architecture file then sets what differs (head_dim key, rope style).
  // n_vocab is taken from token_embd.weight (its presence is checked here).
  void read_common_hparams(HParams& hp) const;
  // Checks relations between the hyperparameters (head counts divide, rotary dims fit, ...).
  void check_hparams(const HParams& hp) const;

  // A matrix used through cpu::matmul / cpu::get_row: [n_in, n_out] of any float or quantized type.
  // Returns a view with data == nullptr when an optional tensor is absent.
  cpu::WeightView matrix(const std::string& name, int64_t n_in, int64_t n_out, Need need = Need::kRequired,
                         Pack pack = Pack::kYes);
  // Matrices bound with Pack::kNo that multiply the same input (Q, K, V; gate, up): returns one packed
  // matrix of all their rows when they can be packed together (and releases their pages), else packs
  // each in place and returns a view with data == nullptr. Callers then use linear_parts (blocks.h).
  cpu::WeightView fuse(std::initializer_list<cpu::WeightView*> parts);
  // The packed form of an already bound weight (a tied output head shares token_embd's data), or w.
  cpu::WeightView pack(const cpu::WeightView& w);
  // The output head tied to the token embedding: its packed form (or tok_embd itself). When the packed
  // copy can give back its rows (F16 off AMX: once its background copy exists; until then the file's),
  // tok_embd is pointed at it too, so embedding lookups read the copy and
  // the file's pages of the tensor stay released (lookups of random tokens through the mapping pulled
  // the whole tensor back into RSS: 140 MB for Qwen2.5-0.5B's Q8_0 embedding).
  cpu::WeightView tied_output(cpu::WeightView& tok_embd);
  // A 1-D f32 tensor of n elements (norm weights, biases, rope factors); nullptr when optional and absent.
  const float* vector(const std::string& name, int64_t n, Need need = Need::kRequired);

  // Totals over the tensors bound so far (tied tensors counted once).
  uint64_t weight_bytes() const { return bytes_; }
  uint64_t n_params() const { return params_; }

 private:
  const gguf::TensorInfo* find(const std::string& name, Need need) const;
  void count(const gguf::TensorInfo& t);
  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  const gguf::GgufFile& file_;
  std::string arch_;
  cpu::PackedStore* store_ = nullptr;
  std::vector<const gguf::TensorInfo*> bound_;
  uint64_t bytes_ = 0;
  uint64_t params_ = 0;
};

// "blk.<il>.<suffix>"
std::string blk(int64_t il, std::string_view suffix);

}  // namespace ignis::model
