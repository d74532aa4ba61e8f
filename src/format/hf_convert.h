// Hugging Face folder -> GGUF conversion (`ignis convert`), laid out as llama.cpp's converter lays it out.
//
// convert_hf_to_gguf reads config.json (hf_config.h), the safetensors weights (safetensors.h) and the
// tokenizer files, and writes a GGUF that llama.cpp loads: its architecture names ("llama" for Llama and
// Mistral, "qwen2", "qwen3"), its metadata keys, its tensor names, the Q/K row permutation its converter
// applies for "llama" (so its adjacent-pair rope equals HF's rotate-half), Llama 3 rope scaling as a
// rope_freqs.weight tensor, and tokenizer.ggml.* metadata (model, pre, tokens, token_type, merges,
// special ids, add_bos/add_eos, chat template). Norms and biases stay F32; matrices take --type
// (q8_0 falls back to f16 for rows that are not a multiple of 32, as llama.cpp does).
// Every problem throws ignis::Error naming the file and the key or tensor. Stateless: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/hf_config.h"

namespace ignis::hf {

// The tokenizer as GGUF wants it (byte-level BPE only).
struct HfVocab {
  std::string model = "gpt2";
  std::string pre;                  // tokenizer.ggml.pre: "qwen2", "llama-bpe", "gpt-2", ...
  std::vector<std::string> tokens;  // id order, padded with "[PADi]" to config's vocab_size
  std::vector<int32_t> types;       // 1 normal, 3 control, 4 user defined, 5 unused
  std::vector<std::string> merges;  // "a b"
  int64_t bos = -1, eos = -1, pad = -1, unk = -1;
  int add_bos = -1, add_eos = -1;   // -1: not stated by the tokenizer files
  std::string chat_template;
};

// Reads tokenizer.json, or vocab.json + merges.txt (+ added_tokens.json), and tokenizer_config.json
// (added tokens, special tokens, add_bos_token, chat_template) from `dir`.
HfVocab read_hf_vocab(const std::string& dir, const HfConfig& cfg);

struct ConvertOptions {
  std::string type = "f32";  // f32 | f16 | bf16 | q8_0
  std::string name;          // general.name ("" = the folder's name)
};

struct ConvertStats {
  std::string arch;
  int64_t n_tensors = 0;
  uint64_t n_bytes = 0;  // tensor data bytes written
};

ConvertStats convert_hf_to_gguf(const std::string& dir, const std::string& out_path, const ConvertOptions& opts);

}  // namespace ignis::hf
