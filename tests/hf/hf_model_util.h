// Helpers for the tests that run models made from Hugging Face folders (convert_test.cpp,
// load_test.cpp): random folders from ignis-mkhf, the committed torch goldens, logits and their
// distance from a golden.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "hf_test_util.h"
#include "model/model.h"

namespace ignis::test {

inline const std::string kQwen2Tok = std::string(IGNIS_SHARED_DIR) + "/hf-tokenizers/qwen2";

// Writes the folder tmp-hf/`name` with ignis-mkhf `flags` (those of scripts/ref/hf_goldens.sh for the
// folders the goldens were made from).
inline std::string make_hf_folder(const std::string& name, const std::string& flags) {
  const std::string mkhf = std::string(IGNIS_BINARY_DIR) + "/bin/ignis-mkhf";
  if (!std::filesystem::exists(mkhf)) throw std::runtime_error("build the ignis-mkhf target first: " + mkhf);
  const std::string dir = temp_dir(name);
  const std::string cmd = mkhf + " " + flags + " --tokenizer '" + kQwen2Tok + "' -o '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  return dir;
}

// The folders with committed goldens (tests/data/hf/NAME.*.json).
struct HfCase {
  const char* name;
  const char* flags;  // ignis-mkhf
  const char* arch;   // GGUF architecture
  const char* dtype;  // the checkpoint's dtype, as convert's --type names it
};
inline const HfCase kHfCases[] = {
    {"llama", "--arch llama --dtype f32 --llama3-rope", "llama", "f32"},
    {"mistral", "--arch mistral --dtype bf16", "llama", "bf16"},
    {"qwen2", "--arch qwen2 --dtype f16", "qwen2", "f16"},
    {"qwen3", "--arch qwen3 --dtype f32 --shards 2", "qwen3", "f32"},
};

// NAME.logits.json: torch; NAME.q8_0.llamacpp.json: llama.cpp on the q8_0 file ignis convert wrote.
inline nlohmann::json hf_golden(const std::string& name, const std::string& kind = "logits") {
  std::ifstream in(std::string(IGNIS_TEST_DATA) + "/hf/" + name + "." + kind + ".json");
  return nlohmann::json::parse(in);
}

// All logits of `tokens` run as one sequence: [tokens.size(), n_vocab].
inline std::vector<float> all_logits(const model::Model& m, const std::vector<int32_t>& tokens) {
  ThreadPool pool(2);
  auto cache = m.new_cache(static_cast<int64_t>(tokens.size()), DType::F32);  // torch keeps K/V in f32
  std::vector<float> logits(tokens.size() * static_cast<size_t>(m.hparams().n_vocab));
  m.forward(*cache, tokens, logits.data(), true, pool);
  return logits;
}

struct Diff {
  double rel = 0;       // max |ignis - torch| over the checked entries / max |torch| of the row
  bool argmax_ok = true;
};

// Runs the tokens of the golden through the model and compares every row.
inline Diff compare_golden(const model::Model& m, const nlohmann::json& g) {
  const int64_t V = m.hparams().n_vocab;
  EXPECT_EQ(V, g["n_vocab"].get<int64_t>());
  std::vector<int32_t> toks = g["tokens"].get<std::vector<int32_t>>();
  const std::vector<float> logits = all_logits(m, toks);
  const int64_t stride = g["sample_stride"].get<int64_t>();
  Diff d;
  for (size_t t = 0; t < toks.size(); ++t) {
    const auto& row = g["rows"][t];
    const float* l = &logits[t * static_cast<size_t>(V)];
    const auto sample = row["sample"].get<std::vector<double>>();
    double scale = 0, err = 0;
    for (size_t i = 0; i < sample.size(); ++i) {
      scale = std::max(scale, std::fabs(sample[i]));
      err = std::max(err, std::fabs(l[i * stride] - sample[i]));
    }
    int64_t am = 0;
    for (int64_t i = 1; i < V; ++i)
      if (l[i] > l[am]) am = i;
    const double lse_max = l[am];
    double s = 0;
    for (int64_t i = 0; i < V; ++i) s += std::exp(static_cast<double>(l[i]) - lse_max);
    const double lse = lse_max + std::log(s);
    err = std::max(err, std::fabs(lse_max - row["max"].get<double>()));
    err = std::max(err, std::fabs(lse - row["logsumexp"].get<double>()));
    d.rel = std::max(d.rel, err / std::max(scale, 1e-6));
    if (am != row["argmax"].get<int64_t>()) d.argmax_ok = false;
  }
  return d;
}

inline Diff compare_golden(const std::string& model_path, const nlohmann::json& g) {
  return compare_golden(*model::Model::load(model_path), g);
}

}  // namespace ignis::test
