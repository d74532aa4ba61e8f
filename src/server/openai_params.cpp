#include "server/openai_params.h"

#include <cmath>

namespace ignis::server {

using json = nlohmann::ordered_json;

void bad_param(const std::string& param, const std::string& message) {
  ApiError e;
  e.status = 400;
  e.param = param;
  e.message = message;
  throw ApiException{e};
}

std::optional<double> opt_number(const json& b, const char* key, double lo, double hi) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) bad_param(key, std::string("'") + key + "' must be a number");
  double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    bad_param(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return v;
}

std::optional<int64_t> opt_integer(const json& b, const char* key, int64_t lo, int64_t hi) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return std::nullopt;
  int64_t v;
  if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (it->is_number_float() && std::floor(it->get<double>()) == it->get<double>() &&
             std::fabs(it->get<double>()) < 9e18) {
    v = static_cast<int64_t>(it->get<double>());
  } else {
    bad_param(key, std::string("'") + key + "' must be an integer");
  }
  if (v < lo || v > hi)
    bad_param(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return v;
}

std::optional<bool> opt_boolean(const json& b, const char* key) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) bad_param(key, std::string("'") + key + "' must be a boolean");
  return it->get<bool>();
}

std::optional<std::string> opt_str(const json& b, const char* key) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) bad_param(key, std::string("'") + key + "' must be a string");
  return it->get<std::string>();
}

CommonFields parse_common(const json& b, const SamplingParams& defaults) {
  CommonFields f;
  f.params = defaults;
  SamplingParams& p = f.params;
  if (auto v = opt_number(b, "temperature", 0, 2)) p.temperature = float(*v);
  if (auto v = opt_number(b, "top_p", 0, 1)) {
    if (*v <= 0) bad_param("top_p", "'top_p' must be in (0, 1]");
    p.top_p = float(*v);
  }
  if (auto v = opt_integer(b, "top_k", -1, 1 << 30)) p.top_k = int32_t(*v < 0 ? 0 : *v);
  if (auto v = opt_number(b, "min_p", 0, 1)) p.min_p = float(*v);
  if (auto v = opt_number(b, "presence_penalty", -2, 2)) p.presence_penalty = float(*v);
  if (auto v = opt_number(b, "frequency_penalty", -2, 2)) p.frequency_penalty = float(*v);
  if (auto v = opt_number(b, "repetition_penalty", 0, 100)) {
    if (*v <= 0) bad_param("repetition_penalty", "'repetition_penalty' must be > 0");
    p.repetition_penalty = float(*v);
  }
  if (auto v = opt_integer(b, "seed", INT64_MIN, INT64_MAX)) p.seed = uint64_t(*v);
  std::optional<int64_t> max_tokens = opt_integer(b, "max_tokens", 0, 1 << 30);
  if (auto v = opt_integer(b, "max_completion_tokens", 0, 1 << 30)) max_tokens = v;
  if (max_tokens) {
    p.max_tokens = int32_t(*max_tokens);
    f.max_tokens_given = true;
  }
  if (auto v = opt_integer(b, "n", 1, 128)) f.n = int(*v);
  if (auto it = b.find("stop"); it != b.end() && !it->is_null()) {
    if (it->is_string()) {
      if (!it->get<std::string>().empty()) p.stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      for (const auto& s : *it) {
        if (!s.is_string()) bad_param("stop", "'stop' must be a string or an array of strings");
        if (!s.get<std::string>().empty()) p.stop.push_back(s.get<std::string>());
      }
    } else {
      bad_param("stop", "'stop' must be a string or an array of strings");
    }
  }
  if (auto it = b.find("logit_bias"); it != b.end() && !it->is_null()) {
    if (!it->is_object()) bad_param("logit_bias", "'logit_bias' must be an object mapping token ids to numbers");
    for (const auto& [k, v] : it->items()) {
      size_t used = 0;
      long id = -1;
      try {
        id = std::stol(k, &used);
      } catch (...) {
      }
      if (used != k.size() || id < 0) bad_param("logit_bias", "'logit_bias' key '" + k + "' is not a token id");
      if (!v.is_number() || v.get<double>() < -100 || v.get<double>() > 100)
        bad_param("logit_bias", "'logit_bias' values must be numbers between -100 and 100");
      p.logit_bias[int32_t(id)] = v.get<float>();
    }
  }
  if (auto v = opt_boolean(b, "stream")) f.stream = *v;
  if (auto it = b.find("stream_options"); it != b.end() && !it->is_null()) {
    if (!it->is_object()) bad_param("stream_options", "'stream_options' must be an object");
    if (auto v = opt_boolean(*it, "include_usage")) f.include_usage = *v;
  }
  if (auto it = b.find("user"); it != b.end() && !it->is_null() && !it->is_string())
    bad_param("user", "'user' must be a string");
  if (auto it = b.find("ignore_eos"); it != b.end()) p.ignore_eos = opt_boolean(b, "ignore_eos").value_or(false);
  return f;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json bytes_of(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(int(c));
  return a;
}

}  // namespace ignis::server
