#include "model/dump.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace ignis::model {

namespace {

std::atomic<uint64_t> g_calls{0};

}  // namespace

Dumper::Dumper() {
  // NOTE: read per ubatch (cheap next to a forward pass) so a process can switch dumping on and off.
  const char* env = std::getenv("IGNIS_DUMP");
  if (env) dir_ = env;
  if (!active()) return;
  call_ = g_calls.fetch_add(1);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) fail("IGNIS_DUMP: cannot create folder {}: {}", dir_, ec.message());
}

void Dumper::write(std::string_view name, int il, const float* data, int64_t rows, int64_t cols) const {
  const std::string path = il >= 0 ? fmt::format("{}/{:05}_{}-{}.npy", dir_, call_, name, il)
                                   : fmt::format("{}/{:05}_{}.npy", dir_, call_, name);
  // .npy v1.0: magic, version, header length, a Python dict literal padded so data starts 64-aligned.
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("IGNIS_DUMP: cannot write {}", path);
  const uint16_t hlen = static_cast<uint16_t>(header.size());
  std::fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  std::fwrite(&hlen, 2, 1, f);
  std::fwrite(header.data(), 1, header.size(), f);
  const size_t n = static_cast<size_t>(rows * cols);
  const bool ok = std::fwrite(data, sizeof(float), n, f) == n;
  if (std::fclose(f) != 0 || !ok) fail("IGNIS_DUMP: cannot write {}", path);
}

}  // namespace ignis::model
