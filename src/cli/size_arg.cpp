#include "cli/size_arg.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ignis::cli {

uint64_t parse_size(const std::string& s, const char* flag) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    fail("{}: '{}' is not a size (e.g. 2G, 512M)", flag, s);
  }
  std::string unit = s.substr(used);
  for (auto& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  double mul = 1;
  if (unit.empty() || unit == "B") mul = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") mul = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") mul = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") mul = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") mul = 1024.0 * 1024 * 1024 * 1024;
  else fail("{}: unknown unit in '{}' (use K, M, G or T)", flag, s);
  if (!std::isfinite(v) || v <= 0 || v * mul > 1e15) fail("{}: '{}' is out of range", flag, s);
  return uint64_t(v * mul);
}

std::string read_text_file(const std::string& path, const char* flag) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot read {}", flag, path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace ignis::cli
