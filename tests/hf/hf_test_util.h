// Helpers for the Hugging Face tests: build safetensors bytes and temp folders.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ignis::test {

// Header JSON text + data bytes -> a safetensors file image.
inline std::vector<uint8_t> st_bytes(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& s) {
  std::ofstream f(path);
  f << s;
}

// A fresh empty folder under the build tree.
inline std::string temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(IGNIS_BINARY_DIR) / "tmp-hf" / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

}  // namespace ignis::test
