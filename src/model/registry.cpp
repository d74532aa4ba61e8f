#include "model/registry.h"

#include <array>

namespace ignis::model {

namespace {

constexpr std::array<std::string_view, 2> kLlamaHf = {"LlamaForCausalLM", "MistralForCausalLM"};
constexpr std::array<std::string_view, 1> kQwen2Hf = {"Qwen2ForCausalLM"};
constexpr std::array<std::string_view, 1> kQwen3Hf = {"Qwen3ForCausalLM"};

const std::array<ArchEntry, 3> kArchitectures = {{
    {"llama", kLlamaHf, make_llama},
    {"qwen2", kQwen2Hf, make_qwen2},
    {"qwen3", kQwen3Hf, make_qwen3},
}};

}  // namespace

std::span<const ArchEntry> architectures() { return kArchitectures; }

const ArchEntry* find_arch_gguf(std::string_view gguf_arch) {
  for (const ArchEntry& e : kArchitectures) {
    if (e.gguf_arch == gguf_arch) return &e;
  }
  return nullptr;
}

const ArchEntry* find_arch_hf(std::string_view hf_arch) {
  for (const ArchEntry& e : kArchitectures) {
    for (std::string_view h : e.hf_archs) {
      if (h == hf_arch) return &e;
    }
  }
  return nullptr;
}

}  // namespace ignis::model
