#include "model/model.h"

#include <fmt/format.h>

#include <string>

#include "core/error.h"
#include "format/gguf.h"
#include "format/hf_load.h"
#include "model/registry.h"

namespace ignis::model {

// NOTE: a folder is a Hugging Face checkpoint, converted in memory by the code of `ignis convert`
// (format/hf_load.h), so both paths bind weights from the same GGUF layout. --quant is refused for GGUF
// files rather than requantizing already-quantized weights; `ignis quantize` does that explicitly.
std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opts) {
  if (hf::is_hf_folder(path)) return load(hf::load_hf_folder(path, {opts.quant, opts.n_threads}), opts);
  if (!opts.quant.empty())
    fail("{}: --quant {} applies to Hugging Face model folders; quantize a GGUF file with `ignis quantize`", path,
         opts.quant);
  std::shared_ptr<const gguf::GgufFile> file = gguf::GgufFile::open(path);
  return load(std::move(file), opts);
}

std::unique_ptr<Model> Model::load(std::shared_ptr<const gguf::GgufFile> file, const LoadOptions& opts) {
  // NOTE: validate_only needs no separate path: loading binds views into the mapping and copies no
  // weights, so a full load is already only validation plus a few small allocations.
  const gguf::Value* arch = file->find("general.architecture");
  if (!arch) fail("{}: metadata key general.architecture is missing", file->path());
  if (arch->type != gguf::ValueType::STRING) {
    fail("{}: metadata key general.architecture has type {}, expected a string", file->path(),
         gguf::value_type_name(arch->type));
  }
  const ArchEntry* entry = find_arch_gguf(arch->s);
  if (!entry) {
    std::string names;
    for (const ArchEntry& e : architectures()) names += (names.empty() ? "" : ", ") + std::string(e.gguf_arch);
    fail("{}: architecture '{}' is not supported (supported: {})", file->path(), arch->s, names);
  }
  return entry->make(std::move(file));
}

}  // namespace ignis::model
