// The architecture registry: the one table that maps a GGUF general.architecture (and Hugging Face
// config.json architectures[0]) to the code that loads it. Nothing else in ignis switches on the
// architecture. The table is immutable: thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "format/gguf.h"
#include "model/model.h"

namespace ignis::model {

// Builds a model of one architecture from an opened GGUF, validating its keys and tensors
// (throws ignis::Error naming the file and the key or tensor).
using ArchFactory = std::unique_ptr<Model> (*)(std::shared_ptr<const gguf::GgufFile> file);

struct ArchEntry {
  std::string_view gguf_arch;                     // general.architecture
  std::span<const std::string_view> hf_archs;     // config.json architectures[0] values
  ArchFactory make;
};

std::span<const ArchEntry> architectures();
const ArchEntry* find_arch_gguf(std::string_view gguf_arch);  // nullptr when unknown
const ArchEntry* find_arch_hf(std::string_view hf_arch);      // nullptr when unknown

// Defined in the architecture files.
std::unique_ptr<Model> make_llama(std::shared_ptr<const gguf::GgufFile> file);
std::unique_ptr<Model> make_qwen2(std::shared_ptr<const gguf::GgufFile> file);
std::unique_ptr<Model> make_qwen3(std::shared_ptr<const gguf::GgufFile> file);

}  // namespace ignis::model
