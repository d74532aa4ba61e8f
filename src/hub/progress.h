// A one-line download progress bar on stderr ("name  45% [=====>    ] 12.3/27.0 MB  8.1 MB/s").
//
// Drawn only when enabled and stderr is a terminal, redrawn at most ~10 times a second with '\r'.
// Not thread-safe: one bar per download, used by the thread that downloads.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ignis::hub {

class ProgressBar {
 public:
  // total < 0: unknown size. `start` bytes were already there (a resumed download).
  ProgressBar(std::string label, int64_t total, int64_t start, bool enabled);
  ~ProgressBar();
  void update(int64_t done);
  void finish();  // draws the final state and ends the line

 private:
  void draw();

  std::string label_;
  int64_t total_, start_, done_;
  bool enabled_, finished_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point t0_, last_;
};

}  // namespace ignis::hub
