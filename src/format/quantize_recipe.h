// Quantization recipes: which ggml type each tensor of a model gets for a given llama.cpp file type
// (LLAMA_FTYPE_*), following llama.cpp's llama_tensor_get_type (src/llama-quant.cpp) for the
// architectures ignis runs (llama, qwen2, qwen3; dense models, no experts, no importance matrix).
//
// NOTE on the rules reproduced (checked against llama-quantize's output, tests/quantize):
//   - only tensors of >= 2 dims whose name ends in "weight" and is not a norm are quantized; the rest
//     keep their type;
//   - output.weight, and token_embd.weight when the model has no output.weight (tied), get Q6_K
//     (Q8_0 when their rows are not a multiple of the file type's block size, or the file type is Q8_0);
//   - Q4_K_M / Q5_K_M: attn_v and ffn_down of the "use_more_bits" layers get Q6_K; Q4_K_S / Q5_K_S:
//     attn_v of the first 4 layers and ffn_down of the first n_layer/8 layers get Q5_K; 70B-class
//     llama/qwen2 models (80 layers) get Q5_K instead of Q4_K for attn_v;
//   - a type whose block does not divide the row length falls back: Q4_K -> Q5_0, Q5_K -> Q5_1,
//     Q6_K -> Q8_0, and a 32-block type that still does not fit -> F16.
// The layer counters (i_attention_wv, i_ffn_down) run over tensors in llama.cpp's weight order
// (non-layer tensors first, then by layer number, then by name), which plan_quantization reproduces.
//
// Checked against llama-quantize (tests/quantize, scripts/ref/quantize_check.sh): the plan equals its
// choice for every tensor of a Qwen2.5-0.5B-shaped model for all type names, and the output bytes of
// every tensor equal its output for all ten file types, K-quants included (ignis' from_float is ggml's
// _ref quantization; llama-quantize without an importance matrix uses the same).
// Type names accepted (as llama-quantize's table): Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K_S Q4_K_M Q5_K_S
// Q5_K_M Q6_K, and Q4_K / Q5_K, which llama-quantize defines as aliases of Q4_K_M / Q5_K_M.
//
// quantize_model() applies a plan to a file: metadata copied in order (split.* dropped), then
// general.quantization_version = 2 and general.file_type (the LLAMA_FTYPE value) appended as llama.cpp
// does; tensors written in llama.cpp's weight order; a tensor already of its target type is copied
// byte for byte, any other is converted to f32 with its type's to_float (F16, BF16 or a quantized type:
// requantizing is always allowed, like llama-quantize --allow-requantize) and quantized with the target's
// reference from_float (bit-exact with ggml's _ref quantizers), rows split over the thread pool.
// The plan functions are pure and thread-safe; quantize_model uses the pool it is given.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace ignis {
class ThreadPool;
}

namespace ignis::gguf {

// llama.cpp's enum llama_ftype values (written to general.file_type).
enum class FileType : uint32_t {
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 7,
  Q5_0 = 8,
  Q5_1 = 9,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_S = 16,
  Q5_K_M = 17,
  Q6_K = 18,
};

struct QuantTypeEntry {
  const char* name;  // as typed on the command line ("Q4_K_M")
  FileType ftype;
  const char* help;
};

// Every accepted name, in llama-quantize's order (aliases included).
const std::vector<QuantTypeEntry>& quant_type_table();
// Case-insensitive lookup in quant_type_table(); nullopt if unknown.
std::optional<FileType> parse_quant_type(std::string_view name);
// "Q4_0, Q4_1, ..." for error messages.
std::string quant_type_names();
// The type most 2-D weights get ("base" type of the mix).
DType file_type_default(FileType ft);
const char* file_type_name(FileType ft);

struct TensorDesc {
  std::string name;
  DType type;
  std::vector<int64_t> shape;  // ggml order: shape[0] = row length
};

struct ModelDesc {
  std::string arch;  // general.architecture
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
};

// True when llama.cpp would quantize this tensor at all (>= 2 dims, a "weight", not a norm, ...).
bool tensor_allows_quantization(const TensorDesc& t);

// The target type of each tensor (same order as `tensors`). Tensors that are not quantized keep
// their type. Throws Error for an architecture other than llama/qwen2/qwen3.
std::vector<DType> plan_quantization(const ModelDesc& model, const std::vector<TensorDesc>& tensors,
                                     FileType ft);

// Indices of `tensors` in llama.cpp's weight order (llama_model_loader's weight_name_comparer):
// tensors outside "blk.N." first, then by layer, ties by name.
std::vector<size_t> llama_weight_order(const std::vector<TensorDesc>& tensors);

struct TensorInfo;
// `t` (rows of t.shape[0] elements, a type with to_float) converted to `to` with its reference
// from_float, rows split over the pool: what quantize_model does to each tensor that changes type.
std::vector<uint8_t> convert_tensor(const TensorInfo& t, DType to, ThreadPool& pool);

struct QuantizeStats {
  uint64_t bytes_in = 0, bytes_out = 0;
  int n_tensors = 0;
  int n_requantized = 0;  // already-quantized tensors converted to another type
  int n_f16 = 0;          // weights no quantized type fits (rows not a multiple of 32): written F16
};

// Quantizes the GGUF at in_path into out_path (which must differ). `log`, if set, gets one line per
// tensor. Throws Error naming the file/tensor on unreadable input, unsupported architecture, or a
// tensor type that cannot be converted.
QuantizeStats quantize_model(const std::string& in_path, const std::string& out_path, FileType ft,
                             ThreadPool& pool, const std::function<void(const std::string&)>& log = {});

}  // namespace ignis::gguf
