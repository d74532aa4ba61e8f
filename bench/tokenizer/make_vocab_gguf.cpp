// Writes a vocab-only GGUF (tokenizer.ggml.* + the hyperparameters llama.cpp needs to load it with
// vocab_only) from GPT-2 style Hugging Face files, so llama.cpp can tokenize with the same
// vocabulary ignis reads from the HF files.
//   make_vocab_gguf qwen2  <shared>/hf-tokenizers/qwen2                 out.gguf
//   make_vocab_gguf llama3 <shared>/hf-tokenizers/llama3.2-gpt2-format  out.gguf
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "format/gguf.h"

using nlohmann::json;

static std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) ignis::fail("{}: cannot open", p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_vocab_gguf qwen2|llama3 HF_DIR OUT.gguf\n");
    return 2;
  }
  try {
    const std::string kind = argv[1], dir = argv[2];
    const bool qwen = kind == "qwen2";
    const json vocab = json::parse(slurp(dir + (qwen ? "/vocab.json" : "/encoder.json")));
    std::vector<std::string> tokens(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) tokens.at(it.value().get<size_t>()) = it.key();
    std::vector<int32_t> types(tokens.size(), 1);
    int32_t bos = -1, eos = -1;
    auto add_special = [&](size_t id, const std::string& text) {
      if (id >= tokens.size()) tokens.resize(id + 1), types.resize(id + 1, 1);
      tokens[id] = text;
      types[id] = 3;
    };
    if (qwen) {
      const json added = json::parse(slurp(dir + "/added_tokens.json"));
      for (auto it = added.begin(); it != added.end(); ++it) add_special(it.value().get<size_t>(), it.key());
      bos = eos = 151643;
    } else {
      const char* named[] = {"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                             "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                             "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                             "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
      for (int i = 0; i < 256; ++i)
        add_special(128000 + i, i < 11 ? named[i] : "<|reserved_special_token_" + std::to_string(i - 8) + "|>");
      bos = 128000;
      eos = 128009;
    }
    std::vector<std::string> merges;
    std::istringstream in(slurp(dir + (qwen ? "/merges.txt" : "/vocab.bpe")));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line.rfind("#version", 0) != 0) merges.push_back(line);

    ignis::gguf::GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", qwen ? "qwen2-vocab" : "llama3-vocab");
    w.set_u32("llama.block_count", 1);
    w.set_u32("llama.context_length", 4096);
    w.set_u32("llama.embedding_length", 64);
    w.set_u32("llama.feed_forward_length", 128);
    w.set_u32("llama.attention.head_count", 1);
    w.set_u32("llama.attention.head_count_kv", 1);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32("llama.rope.dimension_count", 64);
    w.set_u32("llama.vocab_size", uint32_t(tokens.size()));
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", qwen ? "qwen2" : "llama-bpe");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", merges);
    w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(bos));
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(eos));
    w.set_bool("tokenizer.ggml.add_bos_token", !qwen);
    w.write(argv[3]);
    std::printf("wrote %s: %zu tokens, %zu merges\n", argv[3], tokens.size(), merges.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
