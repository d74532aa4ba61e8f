// Single-sequence generation: prompt -> forward -> sample -> detokenize -> stop strings -> stream.
//
// generate() is the loop behind `ignis run`, written as a reusable piece so the serving engine and other
// commands share one definition of a generation step: the prompt is evaluated as one batch, the prompt
// tokens enter the sampler's penalty history (as llama.cpp's completion does), then each step samples
// one token from the last row of logits, stops on an end-of-generation token (the tokenizer's is_eog,
// from the GGUF metadata), on a stop string, after n_predict tokens, or when the KV cache is full.
// Text reaches the caller only in whole UTF-8 characters and never as part of a stop string.
// The caller owns the model, cache, tokenizer, sampler and pool; generate() uses them from the calling
// thread only (not thread-safe with respect to these objects).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "text/tokenizer.h"

namespace ignis::engine {

struct GenerateOptions {
  int32_t n_predict = -1;          // max tokens to generate; -1: until end of generation or cache full
  std::vector<std::string> stop;   // stop strings (not included in the streamed text)
  int n_top_logprobs = 0;          // > 0: fill TokenEvent::logprobs with this many top entries
  std::vector<text::TokenId> eog_ids;  // end of generation besides the tokenizer's is_eog (generation_config.json)
};

// One generated token, before stop-string processing.
struct TokenEvent {
  text::TokenId id = -1;
  std::string text;       // the whole UTF-8 text this token completes ("" for a partial character or EOG)
  bool eog = false;       // an end-of-generation token (never part of the text)
  sample::Logprobs logprobs;  // log-softmax of the raw logits, when n_top_logprobs > 0
};

enum class StopReason { kEog, kLength, kStopString, kContextFull, kCancelled };
const char* stop_reason_name(StopReason r);  // "eog", "length", "stop", "context_full", "cancelled"

struct GenerateResult {
  int64_t n_prompt = 0;
  int64_t n_generated = 0;     // sampled tokens, the EOG token included
  double prompt_ms = 0.0;      // prompt evaluation
  double generation_ms = 0.0;  // from the first sample to the end
  StopReason reason = StopReason::kLength;
  std::string stop_string;     // the stop string matched, for kStopString
};

struct GenerateCallbacks {
  // Called for every sampled token; return false to stop (reason kCancelled).
  std::function<bool(const TokenEvent&)> on_token;
  // Called with text ready to show: whole UTF-8 characters, stop strings held back and removed.
  std::function<void(std::string_view)> on_text;
};

// Runs the loop on `cache` from its current n_past. Throws ignis::Error if the prompt is empty or
// does not fit in the cache (the message names both sizes); errors of forward()/sample() propagate.
GenerateResult generate(const model::Model& model, model::KvCache& cache, const text::Tokenizer& tok,
                        sample::Sampler& sampler, ThreadPool& pool, std::span<const text::TokenId> prompt,
                        const GenerateOptions& opts, const GenerateCallbacks& cb);

}  // namespace ignis::engine
