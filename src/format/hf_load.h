// Loading a Hugging Face model folder directly, with optional in-memory quantization (`-m DIR`,
// `--quant TYPE`, EngineOptions::quant).
//
// load_hf_folder builds the GGUF that `ignis convert` would write (hf_convert.h: same metadata, tensor
// names, Q/K permutation, rope_freqs, tokenizer) as an in-memory GgufFile whose path() is the folder.
// Matrices keep their checkpoint dtype (F32, F16 or BF16) and, where nothing changes them, point into
// the safetensors mapping (no copy); permuted Q/K rows and f32 norms of 16-bit checkpoints live in
// owned buffers that the GgufFile keeps alive. With a quant type the weights are quantized once, in
// memory (no file written), by the recipe and the conversion of `ignis quantize` (quantize_recipe.h):
// the tensors equal those of `ignis convert --type f32` followed by `ignis quantize ... TYPE`.
// Errors are one line naming the folder or file and the problem. Stateless: thread-safe.
#pragma once

#include <memory>
#include <string>

#include "format/gguf.h"

namespace ignis::hf {

struct HfLoadOptions {
  std::string quant;  // "" = none; else a name of quantize_recipe.h's table (Q8_0, Q4_0, Q4_K_M, Q6_K, ...)
  int n_threads = 0;  // threads that quantize (0: all hardware threads)
};

// Throws "--quant X: unknown type (valid: ...)" unless `name` is a type of quantize_recipe.h's table.
void check_quant_name(const std::string& name);

// True when `path` names a folder (to be loaded as a Hugging Face model) rather than a file.
bool is_hf_folder(const std::string& path);

// Throws ignis::Error: "DIR: not a Hugging Face model folder (config.json is missing)", "--quant X:
// unknown type (valid: ...)", and the errors of config.json, the safetensors files and the tokenizer.
std::shared_ptr<const gguf::GgufFile> load_hf_folder(const std::string& dir, const HfLoadOptions& opts = {});

}  // namespace ignis::hf
