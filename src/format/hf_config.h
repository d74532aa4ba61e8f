// Hugging Face config.json (and generation_config.json) for the llama-like causal LMs ignis runs:
// LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM.
//
// parse_hf_config reads the file into an HfConfig, applying the defaults of the transformers config
// classes where a key is optional, and validates every value (ranges, divisibility, types). Errors
// are one line naming the file and the key: "config.json: key num_key_value_heads = 5 does not divide
// num_attention_heads = 8". Pure functions over their inputs: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ignis::hf {

// rope_scaling: none, linear (positions divided by factor) or Llama 3's frequency-dependent scaling.
struct RopeScaling {
  std::string type = "none";  // "none", "linear", "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;            // llama3
  double high_freq_factor = 4.0;           // llama3
  int64_t original_max_position = 8192;    // llama3: original_max_position_embeddings
};

struct HfConfig {
  std::string path;          // the file read (for messages)
  std::string architecture;  // architectures[0], e.g. "Qwen2ForCausalLM"
  std::string model_type;    // "llama", "mistral", "qwen2", "qwen3"
  int64_t n_vocab = 0;       // vocab_size
  int64_t n_embd = 0;        // hidden_size
  int64_t n_ff = 0;          // intermediate_size
  int64_t n_layer = 0;       // num_hidden_layers
  int64_t n_head = 0;        // num_attention_heads
  int64_t n_head_kv = 0;     // num_key_value_heads (default n_head)
  int64_t head_dim = 0;      // head_dim (default hidden_size / num_attention_heads)
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  double rms_eps = 1e-6;     // rms_norm_eps
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (always true for Qwen2)
  bool o_bias = false;          // o_proj bias (llama's attention_bias covers o_proj too)
  int64_t max_position_embeddings = 0;
  std::string torch_dtype;      // "float32", "float16", "bfloat16", or "" when absent
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // int or list in the file
  std::optional<int64_t> pad_token_id;
  int64_t sliding_window = 0;   // 0 when absent or unused

  // The GGUF architecture llama.cpp uses for this model: "llama" (Llama, Mistral), "qwen2", "qwen3".
  std::string gguf_arch() const;
  // True when Q/K weights use HF's rotate-half layout that llama.cpp's "normal" rope needs permuted.
  bool permute_qk() const { return gguf_arch() == "llama"; }
};

// Parses config.json. Throws ignis::Error naming `path` and the key.
HfConfig parse_hf_config(const std::string& path);
HfConfig parse_hf_config_text(const std::string& text, const std::string& path);

struct GenerationConfig {
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;
};
// Parses generation_config.json (all keys optional).
GenerationConfig parse_generation_config(const std::string& path);

}  // namespace ignis::hf
