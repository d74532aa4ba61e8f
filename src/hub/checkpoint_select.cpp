#include "hub/checkpoint_select.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ignis::hub {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool has_model_gguf(const std::vector<std::string>& files) {
  return std::any_of(files.begin(), files.end(), [](const std::string& f) {
    std::string l = lower(f);
    return ends_with(l, ".gguf") && l.find("mmproj") == std::string::npos;
  });
}

std::vector<std::string> select_checkpoint(const std::string& repo, const std::vector<std::string>& files) {
  // NOTE: only top-level names count: checkpoints keep their loadable files at the root, and folders
  // such as original/ (Meta's consolidated .pth) or onnx/ hold other formats of the same weights.
  const std::set<std::string> have(files.begin(), files.end());
  auto has = [&](const char* f) { return have.count(f) > 0; };
  if (!has("config.json"))
    fail("{}: the repo has no .gguf files and no config.json (not a model ignis can load)", repo);
  std::vector<std::string> out = {"config.json"};
  if (has("generation_config.json")) out.push_back("generation_config.json");
  if (has(kSafetensorsIndex)) {
    out.push_back(kSafetensorsIndex);
  } else if (has("model.safetensors")) {
    out.push_back("model.safetensors");
  } else {
    fail("{}: the repo has no .gguf files and no safetensors weights (model.safetensors or {}); .bin/.pth "
         "checkpoints are not supported", repo, kSafetensorsIndex);
  }
  if (has("tokenizer.json")) {
    out.push_back("tokenizer.json");
  } else if (has("vocab.json") && has("merges.txt")) {
    out.push_back("vocab.json");
    out.push_back("merges.txt");
  } else if (has("tokenizer.model")) {
    out.push_back("tokenizer.model");
  } else {
    fail("{}: the repo has no tokenizer (tokenizer.json, vocab.json + merges.txt, or tokenizer.model)", repo);
  }
  for (const char* f : {"tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"})
    if (has(f)) out.push_back(f);
  return out;
}

std::vector<std::string> index_shards(const std::string& index_text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(index_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) fail("{}: not a JSON object", where);
  if (!j.contains("weight_map") || !j["weight_map"].is_object() || j["weight_map"].empty())
    fail("{}: no \"weight_map\" object naming the shards", where);
  std::set<std::string> shards;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string()) fail("{}: weight_map[\"{}\"] is not a file name", where, tensor);
    const std::string f = file.get<std::string>();
    bool ok = !f.empty() && f.size() < 256 && f.find('/') == std::string::npos && f.find('\\') == std::string::npos &&
              f.find('\0') == std::string::npos && f[0] != '.' && ends_with(f, ".safetensors");
    if (!ok) fail("{}: weight_map[\"{}\"] = '{}' is not a .safetensors file beside the index", where, tensor, f);
    shards.insert(f);
  }
  return {shards.begin(), shards.end()};
}

}  // namespace ignis::hub
