// The architecture registry maps GGUF and Hugging Face names to the three architecture files.
#include <gtest/gtest.h>

#include "model/registry.h"

namespace ignis::model {
namespace {

TEST(Registry, GgufNames) {
  for (const char* name : {"llama", "qwen2", "qwen3"}) {
    const ArchEntry* e = find_arch_gguf(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->gguf_arch, name);
  }
  EXPECT_EQ(find_arch_gguf("gpt2"), nullptr);
  EXPECT_EQ(find_arch_gguf(""), nullptr);
}

TEST(Registry, HuggingFaceNames) {
  EXPECT_EQ(find_arch_hf("LlamaForCausalLM")->gguf_arch, "llama");
  EXPECT_EQ(find_arch_hf("MistralForCausalLM")->gguf_arch, "llama");
  EXPECT_EQ(find_arch_hf("Qwen2ForCausalLM")->gguf_arch, "qwen2");
  EXPECT_EQ(find_arch_hf("Qwen3ForCausalLM")->gguf_arch, "qwen3");
  EXPECT_EQ(find_arch_hf("Qwen3MoeForCausalLM"), nullptr);
}

}  // namespace
}  // namespace ignis::model
