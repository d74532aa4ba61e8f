// Stop-string matching with hold-back: see stop.h.
#include "sample/stop.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/error.h"

namespace ignis::sample {

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const auto& s : stops_) {
    if (s.empty()) fail("stop strings must not be empty");
    if (!is_valid_utf8(s)) fail("stop string is not valid UTF-8");
  }
}

// NOTE: held_ is always the shortest tail that might still grow into a stop string, so a stop string
// can only start inside held_ + the new text; scanning that alone is enough.
std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});

  size_t first = std::string::npos;
  for (const auto& s : stops_) {
    size_t pos = held_.find(s);
    if (pos < first) {
      first = pos;
      matched_ = s;
    }
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }

  // Earliest start whose tail is a proper prefix of some stop string.
  size_t keep_from = held_.size();
  for (const auto& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > 0; --len) {
      const size_t start = held_.size() - len;
      if (start >= keep_from) break;
      if (held_.compare(start, len, s, 0, len) == 0) {
        keep_from = start;
        break;
      }
    }
  }
  std::string out = held_.substr(0, keep_from);
  held_.erase(0, keep_from);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

}  // namespace ignis::sample
