#include "engine/generation_defaults.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fs = std::filesystem;

namespace ignis::engine {
namespace {

constexpr uintmax_t kMaxConfigBytes = 16u << 20;  // generation_config.json files are a few hundred bytes

using json = nlohmann::json;

std::optional<double> number(const json& j, const char* key, const std::string& path, double lo, double hi,
                             bool lo_open) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) fail("{}: key {} is not a number", path, key);
  double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || (lo_open && v == lo) || v > hi)
    fail("{}: key {} = {} is out of range ({}{}, {}])", path, key, it->dump(), lo_open ? "(" : "[", lo, hi);
  return v;
}

std::string fmt_float(float v) { return fmt::format("{}", v); }

}  // namespace

GenerationDefaults parse_generation_defaults(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) fail("{}: cannot open: {}", path, ec.message());
  if (size > kMaxConfigBytes) fail("{}: larger than {} MB, not a generation config", path, kMaxConfigBytes >> 20);
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail("{}: invalid JSON", path);
  if (!j.is_object()) fail("{}: not a JSON object", path);

  GenerationDefaults d;
  d.path = path;
  if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    const json list = it->is_array() ? *it : json::array({*it});
    for (const auto& e : list) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > INT32_MAX)
        fail("{}: key eos_token_id holds {}, not a token id", path, e.dump());
      d.eos_token_ids.push_back(int32_t(e.get<int64_t>()));
    }
  }
  bool greedy = false;
  if (auto it = j.find("do_sample"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) fail("{}: key do_sample is not a boolean", path);
    greedy = !it->get<bool>();
  }
  // Values are validated even when do_sample=false makes them unused: a broken file is reported.
  auto temperature = number(j, "temperature", path, 0, 1e6, false);
  auto top_p = number(j, "top_p", path, 0, 1, true);
  auto top_k = number(j, "top_k", path, 0, INT32_MAX, false);
  if (top_k && *top_k != std::floor(*top_k)) fail("{}: key top_k = {} is not an integer", path, *top_k);
  auto rep = number(j, "repetition_penalty", path, 0, 1e6, true);
  if (greedy) {
    d.temperature = 0.0f;
    return d;
  }
  if (temperature) d.temperature = float(*temperature);
  if (top_p) d.top_p = float(*top_p);
  if (top_k) d.top_k = int32_t(*top_k);
  if (rep) d.repetition_penalty = float(*rep);
  return d;
}

GenerationDefaults load_generation_defaults(const std::string& model_path) {
  std::error_code ec;
  if (!fs::is_directory(model_path, ec)) return {};
  const fs::path p = fs::path(model_path) / "generation_config.json";
  if (!fs::exists(p, ec)) return {};
  return parse_generation_defaults(p.string());
}

std::string apply_generation_defaults(const GenerationDefaults& d, const SamplingFieldsSet& set, SamplingValues* v) {
  std::string applied;
  auto note = [&](const char* name, const std::string& value) {
    applied += (applied.empty() ? "" : " ") + std::string(name) + "=" + value;
  };
  if (d.temperature && !set.temperature) {
    v->temperature = *d.temperature;
    note("temperature", fmt_float(v->temperature));
  }
  if (d.top_p && !set.top_p) {
    v->top_p = *d.top_p;
    note("top_p", fmt_float(v->top_p));
  }
  if (d.top_k && !set.top_k) {
    v->top_k = *d.top_k;
    note("top_k", std::to_string(v->top_k));
  }
  if (d.repetition_penalty && !set.repetition_penalty) {
    v->repetition_penalty = *d.repetition_penalty;
    note("repetition_penalty", fmt_float(v->repetition_penalty));
  }
  return applied;
}

}  // namespace ignis::engine
