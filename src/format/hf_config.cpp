// config.json parsing. See hf_config.h.

#include "format/hf_config.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ignis::hf {

namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const std::exception& e) {
    std::string msg = e.what();
    fail("{}: invalid JSON: {}", path, msg.substr(0, 200));
  }
}

// Typed access with the key named in every message.
class Keys {
 public:
  Keys(const json& j, const std::string& path) : j_(j), path_(path) {}

  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  int64_t req_int(const char* key, int64_t lo, int64_t hi) const {
    if (!has(key)) fail("{}: key {} is missing", path_, key);
    return int_in(key, lo, hi);
  }
  int64_t opt_int(const char* key, int64_t def, int64_t lo, int64_t hi) const {
    return has(key) ? int_in(key, lo, hi) : def;
  }
  double opt_float(const char* key, double def, double lo, double hi) const {
    if (!has(key)) return def;
    const json& v = j_[key];
    if (!v.is_number()) fail("{}: key {} is not a number", path_, key);
    double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) fail("{}: key {} = {} is outside [{}, {}]", path_, key, d, lo, hi);
    return d;
  }
  bool opt_bool(const char* key, bool def) const {
    if (!has(key)) return def;
    if (!j_[key].is_boolean()) fail("{}: key {} is not a boolean", path_, key);
    return j_[key].get<bool>();
  }
  std::string opt_string(const char* key, const std::string& def) const {
    if (!has(key)) return def;
    if (!j_[key].is_string()) fail("{}: key {} is not a string", path_, key);
    return j_[key].get<std::string>();
  }
  // An int or a list of ints (eos_token_id).
  std::vector<int64_t> int_list(const char* key) const {
    std::vector<int64_t> out;
    if (!has(key)) return out;
    const json& v = j_[key];
    if (v.is_number_integer()) {
      out.push_back(int_in(key, 0, INT32_MAX));
      return out;
    }
    if (!v.is_array()) fail("{}: key {} is not an integer or a list of integers", path_, key);
    for (const auto& e : v) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > INT32_MAX)
        fail("{}: key {} holds an entry that is not a token id", path_, key);
      out.push_back(e.get<int64_t>());
    }
    return out;
  }

 private:
  int64_t int_in(const char* key, int64_t lo, int64_t hi) const {
    const json& v = j_[key];
    if (!v.is_number_integer()) fail("{}: key {} is not an integer", path_, key);
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail("{}: key {} = {} is outside [{}, {}]", path_, key, x, lo, hi);
    return x;
  }
  const json& j_;
  const std::string& path_;
};

RopeScaling parse_rope_scaling(const json& j, const std::string& path) {
  RopeScaling rs;
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return rs;
  const json& r = j["rope_scaling"];
  if (!r.is_object()) fail("{}: key rope_scaling is not an object", path);
  std::string type;
  for (const char* k : {"rope_type", "type"})
    if (r.contains(k) && r[k].is_string()) {
      type = r[k].get<std::string>();
      break;
    }
  if (type.empty()) fail("{}: key rope_scaling has no rope_type", path);
  const std::string p = path;
  Keys rk(r, p);
  if (type == "default") return rs;
  if (type == "linear") {
    rs.type = "linear";
    rs.factor = rk.opt_float("factor", 0, 1e-6, 1e6);
    if (rs.factor == 0) fail("{}: key rope_scaling.factor is missing", path);
    return rs;
  }
  if (type == "llama3") {
    rs.type = "llama3";
    rs.factor = rk.opt_float("factor", 0, 1e-6, 1e6);
    if (rs.factor == 0) fail("{}: key rope_scaling.factor is missing", path);
    rs.low_freq_factor = rk.opt_float("low_freq_factor", 1.0, 1e-6, 1e6);
    rs.high_freq_factor = rk.opt_float("high_freq_factor", 4.0, 1e-6, 1e6);
    rs.original_max_position = rk.opt_int("original_max_position_embeddings", 8192, 1, 1 << 24);
    if (rs.high_freq_factor <= rs.low_freq_factor)
      fail("{}: key rope_scaling.high_freq_factor {} must exceed low_freq_factor {}", path, rs.high_freq_factor,
           rs.low_freq_factor);
    return rs;
  }
  fail("{}: key rope_scaling.rope_type = {} is not supported (linear, llama3)", path, type);
}

}  // namespace

std::string HfConfig::gguf_arch() const {
  if (model_type == "qwen2") return "qwen2";
  if (model_type == "qwen3") return "qwen3";
  return "llama";
}

HfConfig parse_hf_config_text(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    fail("{}: invalid JSON: {}", path, msg.substr(0, 200));
  }
  if (!j.is_object()) fail("{}: not a JSON object", path);
  HfConfig c;
  c.path = path;
  if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
      !j["architectures"][0].is_string())
    fail("{}: key architectures is missing or not a list of names", path);
  c.architecture = j["architectures"][0].get<std::string>();
  static const std::pair<const char*, const char*> kArchs[] = {{"LlamaForCausalLM", "llama"},
                                                               {"MistralForCausalLM", "mistral"},
                                                               {"Qwen2ForCausalLM", "qwen2"},
                                                               {"Qwen3ForCausalLM", "qwen3"}};
  for (const auto& [a, t] : kArchs)
    if (c.architecture == a) c.model_type = t;
  if (c.model_type.empty())
    fail("{}: key architectures = {} is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
         "Qwen3ForCausalLM)", path, c.architecture);
  Keys k(j, path);
  const std::string mt = k.opt_string("model_type", c.model_type);
  if (mt != c.model_type)
    fail("{}: key model_type = {} does not match architectures {}", path, mt, c.architecture);
  const std::string act = k.opt_string("hidden_act", "silu");
  if (act != "silu") fail("{}: key hidden_act = {} is not supported (silu)", path, act);

  c.n_vocab = k.req_int("vocab_size", 1, 1 << 22);
  c.n_embd = k.req_int("hidden_size", 1, 1 << 17);
  c.n_ff = k.req_int("intermediate_size", 1, 1 << 20);
  c.n_layer = k.req_int("num_hidden_layers", 1, 1024);
  c.n_head = k.req_int("num_attention_heads", 1, 4096);
  c.n_head_kv = k.opt_int("num_key_value_heads", c.n_head, 1, c.n_head);
  if (c.n_head % c.n_head_kv != 0)
    fail("{}: key num_key_value_heads = {} does not divide num_attention_heads = {}", path, c.n_head_kv, c.n_head);
  if (k.has("head_dim")) {
    c.head_dim = k.req_int("head_dim", 2, 4096);
  } else {
    if (c.n_embd % c.n_head != 0)
      fail("{}: key hidden_size = {} is not a multiple of num_attention_heads = {} (and head_dim is absent)", path,
           c.n_embd, c.n_head);
    c.head_dim = c.n_embd / c.n_head;
  }
  if (c.head_dim % 2 != 0) fail("{}: key head_dim = {} must be even (rotary pairs)", path, c.head_dim);
  c.rope_theta = k.opt_float("rope_theta", 10000.0, 1e-3, 1e12);
  c.rope_scaling = parse_rope_scaling(j, path);
  c.rms_eps = k.opt_float("rms_norm_eps", 1e-6, 1e-12, 1.0);
  c.tie_word_embeddings = k.opt_bool("tie_word_embeddings", false);
  if (c.model_type == "qwen2") {
    c.attention_bias = true;  // Qwen2 always has q/k/v biases and no o_proj bias
  } else if (c.model_type == "llama" || c.model_type == "qwen3") {
    c.attention_bias = k.opt_bool("attention_bias", false);
    c.o_bias = c.attention_bias;
  }
  if (c.o_bias) fail("{}: key attention_bias = true is not supported (no GGUF architecture here has output biases)", path);
  if (k.opt_bool("mlp_bias", false)) fail("{}: key mlp_bias = true is not supported", path);
  c.max_position_embeddings = k.opt_int("max_position_embeddings", 2048, 1, 1 << 24);
  c.torch_dtype = k.opt_string("torch_dtype", k.opt_string("dtype", ""));
  if (!c.torch_dtype.empty() && c.torch_dtype != "float32" && c.torch_dtype != "float16" &&
      c.torch_dtype != "bfloat16")
    fail("{}: key torch_dtype = {} is not supported (float32, float16, bfloat16)", path, c.torch_dtype);
  if (k.has("bos_token_id")) c.bos_token_id = k.req_int("bos_token_id", 0, INT32_MAX);
  c.eos_token_ids = k.int_list("eos_token_id");
  if (k.has("pad_token_id")) c.pad_token_id = k.req_int("pad_token_id", 0, INT32_MAX);
  const bool sliding = c.model_type == "mistral" ? k.has("sliding_window") : k.opt_bool("use_sliding_window", false);
  if (sliding) c.sliding_window = k.req_int("sliding_window", 1, 1 << 24);
  return c;
}

HfConfig parse_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_hf_config_text(ss.str(), path);
}

GenerationConfig parse_generation_config(const std::string& path) {
  json j = read_json(path);
  if (!j.is_object()) fail("{}: not a JSON object", path);
  Keys k(j, path);
  GenerationConfig g;
  if (k.has("bos_token_id")) g.bos_token_id = k.req_int("bos_token_id", 0, INT32_MAX);
  g.eos_token_ids = k.int_list("eos_token_id");
  if (k.has("pad_token_id")) g.pad_token_id = k.req_int("pad_token_id", 0, INT32_MAX);
  return g;
}

}  // namespace ignis::hf
