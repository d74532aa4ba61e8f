// A folder of the test process's own under the test temp folder, removed when the process exits. ctest
// runs the same test binary under several IGNIS_ISA caps at once; with shared file names one process
// rewrote a model file another had mapped, and that one died of SIGBUS.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ignis::test {

struct ProcessTempDir {
  std::filesystem::path path;
  explicit ProcessTempDir(const std::string& prefix)
      : path(std::filesystem::path(::testing::TempDir()) / (prefix + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~ProcessTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ProcessTempDir(const ProcessTempDir&) = delete;
  ProcessTempDir& operator=(const ProcessTempDir&) = delete;
};

}  // namespace ignis::test
