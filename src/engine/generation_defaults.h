// Model-provided generation defaults: a Hugging Face folder's generation_config.json.
//
// A model folder may say how it wants to be sampled (temperature, top_p, top_k, repetition_penalty,
// do_sample) and which tokens end a generation (eos_token_id, an int or a list). The engine and the
// CLI use the sampling values only where the caller left a field unset (an explicit flag, request
// field or SamplingParams value always wins), and add the eos ids to the tokenizer's
// end-of-generation set. A .gguf model carries none of this (llama.cpp's converter keeps only the
// first eos id), so GenerationDefaults is empty for it.
//
// NOTE: do_sample=false means greedy in transformers, so it makes the default temperature 0 and the
// other sampling values are not used; an absent do_sample is not read as false (vLLM, too, takes the
// sampling values of files that omit it, e.g. Qwen2.5's).
//
// Pure functions plus one file read: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ignis::engine {

struct GenerationDefaults {
  std::string path;                        // the generation_config.json read; "" when none
  std::optional<float> temperature;        // 0 when do_sample is false
  std::optional<float> top_p;              // (0, 1]
  std::optional<int32_t> top_k;            // >= 0; 0: off
  std::optional<float> repetition_penalty; // > 0
  std::vector<int32_t> eos_token_ids;      // extra end-of-generation tokens

  bool has_sampling() const { return temperature || top_p || top_k || repetition_penalty; }
};

// Parses generation_config.json at `path` (every key optional; unknown keys ignored). A present key
// with a wrong type or an out-of-range value throws ignis::Error naming the file and the key.
GenerationDefaults parse_generation_defaults(const std::string& path);

// <model_path>/generation_config.json when `model_path` is a folder that holds one; else empty.
GenerationDefaults load_generation_defaults(const std::string& model_path);

// The sampling fields generation_config.json can supply, and which of them the caller set.
struct SamplingValues {
  float temperature = 1.0f;
  float top_p = 1.0f;
  int32_t top_k = 0;
  float repetition_penalty = 1.0f;
};
struct SamplingFieldsSet {
  bool temperature = false;
  bool top_p = false;
  bool top_k = false;
  bool repetition_penalty = false;
};

// Puts the defaults of `d` into the fields of `v` that `set` leaves unset. Returns what it applied,
// for a log line: "temperature=0.6 top_p=0.9" ("" when nothing).
std::string apply_generation_defaults(const GenerationDefaults& d, const SamplingFieldsSet& set, SamplingValues* v);

}  // namespace ignis::engine
