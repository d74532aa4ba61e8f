// config.json parsing: real configs from shared/hf-tokenizers and bad ones (errors name the key).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "format/hf_config.h"

using ignis::hf::HfConfig;
using ignis::hf::parse_hf_config;
using ignis::hf::parse_hf_config_text;

namespace {

const std::string kShared = IGNIS_SHARED_DIR;

void expect_error(const std::string& json, const std::string& want) {
  try {
    parse_hf_config_text(json, "config.json");
    FAIL() << "no error, expected: " << want;
  } catch (const ignis::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("config.json: " + want), std::string::npos) << m;
  }
}

const char* kBase = R"({"architectures":["LlamaForCausalLM"],"vocab_size":100,"hidden_size":64,
  "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4)";

std::string with(const std::string& extra) { return std::string(kBase) + (extra.empty() ? "" : "," + extra) + "}"; }

}  // namespace

TEST(HfConfig, Qwen2Real) {
  const std::string p = kShared + "/hf-tokenizers/qwen2/config.qwen2-1.5b-instruct.json";
  if (!std::filesystem::exists(p)) GTEST_SKIP() << "needs " << p;
  HfConfig c = parse_hf_config(p);
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(c.gguf_arch(), "qwen2");
  EXPECT_EQ(c.n_vocab, 151936);
  EXPECT_EQ(c.n_embd, 1536);
  EXPECT_EQ(c.n_ff, 8960);
  EXPECT_EQ(c.n_layer, 28);
  EXPECT_EQ(c.n_head, 12);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rms_eps, 1e-6);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.bos_token_id.value(), 151643);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151645}));
  EXPECT_EQ(c.rope_scaling.type, "none");
  EXPECT_FALSE(c.permute_qk());
}

TEST(HfConfig, Qwen3Real) {
  const std::string p = kShared + "/hf-tokenizers/qwen3/config.qwen3-4b-text-encoder.json";
  if (!std::filesystem::exists(p)) GTEST_SKIP() << "needs " << p;
  HfConfig c = parse_hf_config(p);
  EXPECT_EQ(c.gguf_arch(), "qwen3");
  EXPECT_EQ(c.n_embd, 2560);
  EXPECT_EQ(c.n_head, 32);
  EXPECT_EQ(c.n_head_kv, 8);
  EXPECT_EQ(c.head_dim, 128);  // explicit, 2560 / 32 would be 80
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.max_position_embeddings, 40960);
}

TEST(HfConfig, Qwen2VlIsRefusedByName) {
  const std::string p = kShared + "/hf-tokenizers/qwen2.5-vl/config.qwen2.5-vl-7b-text-encoder.json";
  if (!std::filesystem::exists(p)) GTEST_SKIP() << "needs " << p;
  try {
    parse_hf_config(p);
    FAIL();
  } catch (const ignis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("key architectures = "), std::string::npos) << e.what();
  }
}

TEST(HfConfig, LlamaDefaultsAndLlama3Rope) {
  HfConfig c = parse_hf_config_text(
      with(R"("rope_scaling":{"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
           "original_max_position_embeddings":8192,"rope_type":"llama3"},"rope_theta":500000.0)"),
      "config.json");
  EXPECT_EQ(c.gguf_arch(), "llama");
  EXPECT_TRUE(c.permute_qk());
  EXPECT_EQ(c.n_head_kv, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_scaling.original_max_position, 8192);
  HfConfig m = parse_hf_config_text(R"({"architectures":["MistralForCausalLM"],"vocab_size":100,"hidden_size":64,
    "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":1,
    "sliding_window":4096,"eos_token_id":[2,3],"rope_scaling":{"type":"linear","factor":2}})", "config.json");
  EXPECT_EQ(m.gguf_arch(), "llama");
  EXPECT_EQ(m.sliding_window, 4096);
  EXPECT_EQ(m.eos_token_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(m.rope_scaling.factor, 2.0);
}

TEST(HfConfig, BadValuesNameTheKey) {
  expect_error("{", "invalid JSON");
  expect_error("[]", "not a JSON object");
  expect_error(R"({"vocab_size":1})", "key architectures is missing");
  expect_error(R"({"architectures":["GPT2LMHeadModel"]})", "key architectures = GPT2LMHeadModel is not supported");
  expect_error(R"({"architectures":["LlamaForCausalLM"],"vocab_size":10})", "key hidden_size is missing");
  expect_error(with(R"("num_key_value_heads":3)"), "key num_key_value_heads = 3 does not divide num_attention_heads = 4");
  expect_error(with(R"("num_key_value_heads":8)"), "key num_key_value_heads = 8 is outside [1, 4]");
  expect_error(with(R"("rms_norm_eps":"small")"), "key rms_norm_eps is not a number");
  expect_error(with(R"("rope_theta":-1)"), "key rope_theta = -1 is outside");
  expect_error(with(R"("tie_word_embeddings":1)"), "key tie_word_embeddings is not a boolean");
  expect_error(with(R"("hidden_act":"gelu")"), "key hidden_act = gelu is not supported");
  expect_error(with(R"("model_type":"qwen2")"), "key model_type = qwen2 does not match");
  expect_error(with(R"("head_dim":15)"), "key head_dim = 15 must be even");
  expect_error(with(R"("rope_scaling":{"rope_type":"yarn","factor":4})"), "key rope_scaling.rope_type = yarn is not supported");
  expect_error(with(R"("rope_scaling":{"rope_type":"llama3"})"), "key rope_scaling.factor is missing");
  expect_error(with(R"("torch_dtype":"int8")"), "key torch_dtype = int8 is not supported");
  expect_error(with(R"("attention_bias":true)"), "key attention_bias = true is not supported");
  expect_error(with(R"("mlp_bias":true)"), "key mlp_bias = true is not supported");
  expect_error(with(R"("eos_token_id":"x")"), "key eos_token_id is not an integer or a list");
  expect_error(R"({"architectures":["LlamaForCausalLM"],"vocab_size":10,"hidden_size":30,"intermediate_size":8,
    "num_hidden_layers":1,"num_attention_heads":4})", "key hidden_size = 30 is not a multiple of num_attention_heads = 4");
  expect_error(R"({"architectures":["LlamaForCausalLM"],"vocab_size":1e30,"hidden_size":30})", "key vocab_size is not an integer");
  expect_error(R"({"architectures":["LlamaForCausalLM"],"vocab_size":-5})", "key vocab_size = -5 is outside");
}
