#include "hub/progress.h"

#include <unistd.h>

#include <cstdio>

namespace ignis::hub {

ProgressBar::ProgressBar(std::string label, int64_t total, int64_t start, bool enabled)
    : label_(std::move(label)), total_(total), start_(start), done_(start),
      enabled_(enabled && isatty(STDERR_FILENO)) {
  t0_ = last_ = std::chrono::steady_clock::now();
  if (label_.size() > 40) label_ = "..." + label_.substr(label_.size() - 37);
}

ProgressBar::~ProgressBar() {
  if (drawn_ && !finished_) std::fputc('\n', stderr);  // leave the line after an error
}

void ProgressBar::update(int64_t done) {
  done_ = done;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  draw();
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  draw();
  std::fputc('\n', stderr);
  finished_ = true;
}

void ProgressBar::draw() {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  double rate = secs > 0 ? (done_ - start_) / secs / 1e6 : 0.0;
  constexpr int kWidth = 24;
  if (total_ > 0) {
    double frac = static_cast<double>(done_) / total_;
    if (frac > 1) frac = 1;
    int fill = static_cast<int>(frac * kWidth);
    std::string bar(fill, '=');
    if (fill < kWidth) bar += '>' + std::string(kWidth - fill - 1, ' ');
    std::fprintf(stderr, "\r%s %3d%% [%s] %.1f/%.1f MB %6.1f MB/s\x1b[K", label_.c_str(),
                 static_cast<int>(frac * 100), bar.c_str(), done_ / 1e6, total_ / 1e6, rate);
  } else {
    std::fprintf(stderr, "\r%s %.1f MB %6.1f MB/s\x1b[K", label_.c_str(), done_ / 1e6, rate);
  }
  drawn_ = true;
  std::fflush(stderr);
}

}  // namespace ignis::hub
