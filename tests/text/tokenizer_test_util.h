// Helpers for the tokenizer tests: llama.cpp's .inp/.out vector files and shared-data paths.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ignis::text::testing {

inline std::string shared_path(const std::string& rel) { return std::string(IGNIS_SHARED_DIR) + "/" + rel; }

inline bool exists(const std::string& p) { return std::filesystem::exists(p); }

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// llama.cpp test-tokenizer-0 framing: inputs separated by "\n__ggml_vocab_test__\n" (the file
// ends with one), outputs one line of space-separated ids per input.
inline std::vector<std::pair<std::string, std::vector<int>>> read_vectors(const std::string& base) {
  const std::string inp = slurp(base + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (pos < inp.size()) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::ifstream out(base + ".out");
  std::vector<std::pair<std::string, std::vector<int>>> v;
  std::string line;
  size_t i = 0;
  while (std::getline(out, line)) {
    std::vector<int> ids;
    std::istringstream ls(line);
    int id;
    while (ls >> id) ids.push_back(id);
    if (i < texts.size()) v.emplace_back(texts[i], ids);
    ++i;
  }
  EXPECT_EQ(texts.size(), i) << base << ": inputs and outputs differ in count";
  return v;
}

inline std::string ids_str(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

}  // namespace ignis::text::testing
