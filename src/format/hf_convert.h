// Hugging Face folder -> GGUF conversion (`ignis convert`), laid out as llama.cpp's converter lays it out.
//
// convert_hf_to_gguf reads config.json (hf_config.h), the safetensors weights (safetensors.h) and the
// tokenizer files, and writes a GGUF that llama.cpp loads: its architecture names ("llama" for Llama and
// Mistral, "qwen2", "qwen3"), its metadata keys, its tensor names, the Q/K row permutation its converter
// applies for "llama" (so its adjacent-pair rope equals HF's rotate-half), Llama 3 rope scaling as a
// rope_freqs.weight tensor, and tokenizer.ggml.* metadata (model, pre, tokens, token_type, merges,
// special ids, add_bos/add_eos, chat template). Norms and biases stay F32; matrices take --type
// (q8_0 falls back to f16 for rows that are not a multiple of 32, as llama.cpp does).
//
// build_hf_gguf is the same conversion held in memory (convert writes its result; hf_load.h loads it):
// GGUF metadata and tensor infos whose data points into the folder's safetensors mapping wherever the
// tensor needs no change, and into buffers owned by HfTensorStore where it does (permuted Q/K rows,
// dtype conversions, f32 norms of 16-bit checkpoints, rope_freqs).
// Every problem throws ignis::Error naming the file and the key or tensor. Stateless: thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "format/hf_config.h"
#include "format/safetensors.h"

namespace ignis::hf {

// The tokenizer as GGUF wants it: byte-level BPE ("gpt2") or SentencePiece ("llama", from tokenizer.model).
struct HfVocab {
  std::string model = "gpt2";
  std::string pre;                  // tokenizer.ggml.pre: "qwen2", "llama-bpe", "gpt-2", "default" (SPM), ...
  std::vector<std::string> tokens;  // id order, padded with "[PADi]" to config's vocab_size
  std::vector<float> scores;        // SentencePiece only: piece scores (tokenizer.ggml.scores)
  std::vector<int32_t> types;       // 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte
  std::vector<std::string> merges;  // "a b" (BPE only)
  int64_t bos = -1, eos = -1, pad = -1, unk = -1;
  int add_bos = -1, add_eos = -1;   // -1: not stated by the tokenizer files
  std::string chat_template;
};

// Reads tokenizer.json, or vocab.json + merges.txt (+ added_tokens.json), or else a SentencePiece
// tokenizer.model (+ added_tokens.json; pieces, scores and types as llama.cpp's converter writes them),
// and tokenizer_config.json (added tokens, special tokens, add_bos_token, chat_template) from `dir`.
HfVocab read_hf_vocab(const std::string& dir, const HfConfig& cfg);

struct ConvertOptions {
  std::string type = "f32";  // f32 | f16 | bf16 | q8_0
  std::string name;          // general.name ("" = the folder's name)
  // build_hf_gguf only: matrices keep their checkpoint dtype (F32/F16/BF16; `type` is ignored), so the
  // ones that need no permutation stay in the mapping.
  bool keep_source_types = false;
};

// Owns what the tensors of HfGgufParts point into. Immutable once built: thread-safe to read.
struct HfTensorStore {
  std::unique_ptr<st::SafetensorsSet> st;
  std::map<std::string, std::vector<uint8_t>> owned;  // by GGUF tensor name
};

struct HfGgufParts {
  HfConfig cfg;
  std::vector<std::pair<std::string, gguf::Value>> metadata;  // in convert's order
  std::vector<gguf::TensorInfo> tensors;                      // in convert's order; offset unused
  std::shared_ptr<HfTensorStore> store;                       // keeps every data pointer valid
};

HfGgufParts build_hf_gguf(const std::string& dir, const ConvertOptions& opts);

struct ConvertStats {
  std::string arch;
  int64_t n_tensors = 0;
  uint64_t n_bytes = 0;  // tensor data bytes written
};

ConvertStats convert_hf_to_gguf(const std::string& dir, const std::string& out_path, const ConvertOptions& opts);

}  // namespace ignis::hf
