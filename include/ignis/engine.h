// ignis public C++ API: load a model once, then generate from many threads.
//
//   auto engine = ignis::Engine::load({.model = "qwen2.5-1.5b-instruct-q4_k_m.gguf"});
//   ignis::SamplingParams sp;  sp.temperature = 0;  sp.max_tokens = 80;
//   auto out = engine->chat({{{"role", "user"}, {"content", "Hello"}}}, sp);
//   std::cout << out.text;
//
// An Engine owns the model, its tokenizer and chat template, the paged KV cache and one engine thread
// that runs the scheduler: requests from any thread are batched together (continuous batching,
// chunked prefill, prefix reuse).
//
// Thread-safety contract: every public member function of Engine is thread-safe and may be called
// concurrently from any number of threads. Stream callbacks run on the engine thread, one at a time, in
// order for each request; they must return quickly and must not call Engine::shutdown() or destroy
// the Engine (they may call cancel()). Stream objects (pull iterators) are safe to use from one consumer
// thread each. Destroying the Engine (or shutdown()) cancels what is still running and joins the thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ignis {

using TokenId = int32_t;
using RequestId = int64_t;

// Per-request sampling, with vLLM's defaults. A value out of range makes submit() throw ignis::Error
// naming the field. SamplingParams{} ignores the model's own defaults; to use them (a Hugging Face
// folder's generation_config.json: temperature, top_p, top_k, repetition_penalty, do_sample=false as
// greedy), start from Engine::default_sampling_params() and set only what you want to change, as
// vLLM's LLM.get_default_sampling_params(). End-of-generation ids of generation_config.json apply to
// every request either way.
struct SamplingParams {
  float temperature = 1.0f;        // 0: greedy
  int32_t top_k = 0;               // 0 or -1: disabled
  float top_p = 1.0f;              // (0, 1]
  float min_p = 0.0f;              // [0, 1]
  float repetition_penalty = 1.0f; // > 0; 1: disabled
  float presence_penalty = 0.0f;   // [-2, 2]
  float frequency_penalty = 0.0f;  // [-2, 2]
  std::optional<uint64_t> seed;    // unset: a random seed per request
  int32_t max_tokens = 16;         // tokens to generate at most (the context bounds it too)
  std::vector<std::string> stop;   // stop strings (not included in the output)
  std::vector<TokenId> stop_token_ids;
  bool ignore_eos = false;         // keep going past end-of-generation tokens
  int32_t logprobs = -1;           // < 0: none; n >= 0: chosen token's logprob and the top n
  int32_t prompt_logprobs = -1;    // < 0: none; n >= 0: logprobs of each prompt token (and top n)
  std::map<TokenId, float> logit_bias;
};

enum class FinishReason { None, Stop, Length, Cancelled };
const char* to_string(FinishReason r);  // "stop", "length", "cancelled", ""

struct TokenLogprob {
  TokenId id = 0;
  float logprob = 0.0f;
};
struct TokenInfo {
  TokenId id = 0;
  std::string text;                  // the token's bytes as decoded text (may be partial UTF-8)
  float logprob = 0.0f;              // NaN when not requested
  std::vector<TokenLogprob> top;     // most likely tokens at this position, descending
};

// One step of a streamed request: the text and tokens new since the previous chunk.
struct StreamChunk {
  RequestId id = 0;
  std::string text;                  // whole UTF-8 characters only; stop strings never appear
  std::vector<TokenInfo> tokens;     // tokens sampled in this step (logprobs if requested)
  bool finished = false;
  FinishReason finish_reason = FinishReason::None;
  std::string stop;                  // the stop string that ended the request, if any
  std::string error;                 // non-empty if the request failed (then finished is true)
  int32_t n_prompt_tokens = 0;
  int32_t n_generated_tokens = 0;
  int32_t n_cached_tokens = 0;       // prompt tokens served from the prefix cache
  double queue_s = 0.0;              // seconds from submit() to the request's first engine step
  std::vector<TokenInfo> prompt_logprobs;  // once, with the first token, if prompt_logprobs was asked for
};

struct Completion {
  RequestId id = 0;
  std::string text;
  std::vector<TokenId> token_ids;
  std::vector<TokenInfo> logprobs;         // per generated token, if requested
  std::vector<TokenInfo> prompt_logprobs;  // per prompt token (the first has none), if requested
  FinishReason finish_reason = FinishReason::None;
  std::string stop;
  int32_t n_prompt_tokens = 0;
  int32_t n_cached_tokens = 0;
  double ttft_s = 0.0;                     // time to first token
  double total_s = 0.0;
};

struct EngineOptions {
  std::string model;                 // GGUF file, or Hugging Face model folder (config.json + safetensors)
  std::string quant;                 // folder only: quantize at load, in memory (Q8_0, Q4_0, Q4_K_M, Q6_K, ...)
  int32_t n_threads = 0;             // 0: all cores
  int64_t n_ctx = 0;                 // max tokens per sequence; 0: min(training context, 4096)
  uint64_t kv_memory_bytes = 0;      // KV pool size; 0: a fraction of free memory, capped by n_ctx * max_seqs
  int32_t kv_block_size = 16;        // tokens per KV block
  std::string kv_type = "f16";       // KV cache element type: "f16" (llama.cpp's default) or "f32"
  int32_t max_seqs = 16;             // sequences running at once
  int32_t max_queue = 256;           // waiting requests before submit() refuses (QueueFullError)
  int32_t max_batched_tokens = 512;  // token budget per engine step
  bool prefix_caching = true;
  std::string chat_template;         // template source overriding the model's ("" = model's)
};

// Thrown by submit() when the waiting queue is full.
class QueueFullError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ModelInfo {
  std::string path;
  std::string name;
  std::string arch;
  int64_t n_vocab = 0;
  int64_t n_ctx = 0;        // per-sequence context the engine serves
  int64_t n_ctx_train = 0;
  uint64_t n_params = 0;
  uint64_t weight_bytes = 0;
};

struct EngineStats {
  int32_t n_running = 0;
  int32_t n_waiting = 0;
  double kv_usage = 0.0;            // fraction of KV blocks in use
  int32_t kv_blocks = 0;
  uint64_t prefix_queries = 0;      // prompt tokens looked up in the prefix cache
  uint64_t prefix_hits = 0;         // of which found
  uint64_t prompt_tokens = 0;       // prompt tokens computed (not served from cache)
  uint64_t generation_tokens = 0;
  uint64_t n_preemptions = 0;
  uint64_t steps = 0;
};

// A pull iterator over one request's chunks.
class Stream {
 public:
  virtual ~Stream() = default;
  // Blocks for the next chunk; nullopt after the final one was returned.
  virtual std::optional<StreamChunk> next() = 0;
  virtual RequestId id() const = 0;
};

class Engine {
 public:
  // Loads the model and starts the engine thread. Throws ignis::Error on a bad model or options.
  static std::unique_ptr<Engine> load(const EngineOptions& opts);
  virtual ~Engine() = default;

  // Streaming, callback style: returns at once; `on_chunk` is called on the engine thread.
  // Throws ignis::Error for bad parameters or a prompt that does not fit the context
  // (message contains "context_length_exceeded"), QueueFullError when the queue is full.
  using ChunkCallback = std::function<void(const StreamChunk&)>;
  virtual RequestId submit(std::vector<TokenId> prompt, const SamplingParams& params, ChunkCallback on_chunk) = 0;
  // Streaming, pull style.
  virtual std::unique_ptr<Stream> stream(std::vector<TokenId> prompt, const SamplingParams& params) = 0;
  // Cancels a request; its KV blocks are free within one engine step. Unknown ids are ignored.
  virtual void cancel(RequestId id) = 0;

  // Blocking conveniences (vLLM's LLM.generate / LLM.chat): all prompts run batched together.
  virtual std::vector<Completion> generate(const std::vector<std::string>& prompts, const SamplingParams& params) = 0;
  virtual std::vector<Completion> generate(const std::vector<std::vector<TokenId>>& prompts,
                                           const SamplingParams& params) = 0;
  // messages: [{"role": ..., "content": ...}, ...] (content may be a list of {"type":"text","text":...}).
  virtual Completion chat(const nlohmann::ordered_json& messages, const SamplingParams& params,
                          const nlohmann::ordered_json& tools = nullptr, const nlohmann::ordered_json& template_kwargs = {}) = 0;

  // Text layer.
  virtual std::vector<TokenId> tokenize(std::string_view text, bool add_special = true,
                                        bool parse_special = false) const = 0;
  virtual std::string detokenize(const std::vector<TokenId>& ids, bool skip_special = false) const = 0;
  // Renders messages with the chat template (the prompt text chat() tokenizes, with parse_special).
  virtual std::string apply_chat_template(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools = nullptr,
                                          bool add_generation_prompt = true,
                                          const nlohmann::ordered_json& template_kwargs = {}) const = 0;

  virtual const ModelInfo& info() const = 0;
  virtual EngineStats stats() const = 0;
  // SamplingParams{} with the model's generation_config.json defaults applied (SamplingParams{} when
  // the model has none, e.g. a .gguf file).
  virtual SamplingParams default_sampling_params() const { return {}; }

  // Stops accepting requests, lets running ones finish until `deadline`, then cancels the rest and
  // joins the engine thread. Idempotent.
  virtual void shutdown(std::chrono::milliseconds deadline = std::chrono::milliseconds(0)) = 0;
};

}  // namespace ignis
