// Request-field parsing for the OpenAI routes: typed getters that answer a wrong type or a value out
// of range with an ApiError naming the field (HTTP 400), and the sampling fields shared by
// /v1/chat/completions and /v1/completions. Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ignis/engine.h"
#include "server/openai_service.h"

namespace ignis::server {

struct ApiException {
  ApiError error;
};

[[noreturn]] void bad_param(const std::string& param, const std::string& message);

std::optional<double> opt_number(const nlohmann::ordered_json& b, const char* key, double lo, double hi);
std::optional<int64_t> opt_integer(const nlohmann::ordered_json& b, const char* key, int64_t lo, int64_t hi);
std::optional<bool> opt_boolean(const nlohmann::ordered_json& b, const char* key);
std::optional<std::string> opt_str(const nlohmann::ordered_json& b, const char* key);

// Fields common to both routes: temperature, top_p, top_k, min_p, presence/frequency/repetition
// penalties, seed, stop, logit_bias, max_tokens / max_completion_tokens (returned as max_tokens < 0 when
// absent), n (returned separately). Fields absent from the body keep their value in `defaults` (the
// engine's default_sampling_params(): the model's generation_config.json values).
struct CommonFields {
  SamplingParams params;
  bool max_tokens_given = false;
  int n = 1;
  bool stream = false;
  bool include_usage = false;
};
CommonFields parse_common(const nlohmann::ordered_json& body, const SamplingParams& defaults = {});

// JSON dump that never throws on invalid UTF-8 (bytes are replaced with U+FFFD).
std::string dump(const nlohmann::ordered_json& j);
// The UTF-8 bytes of a string as a JSON array of integers (OpenAI's "bytes" field).
nlohmann::ordered_json bytes_of(const std::string& s);

}  // namespace ignis::server
