// Stop strings over streamed text.
//
// A StopMatcher sits between the detokenizer and the output. push() takes the next piece of generated
// text and returns only the part that can no longer belong to a stop string: text that could be the
// start of a stop string is held back until the following text settles it, so a stream never shows
// part of a stop string. When a stop string appears, everything before it is returned, stopped()
// turns true and the stop string itself (and anything after it) is dropped. flush() returns the held
// text once generation ends for another reason. Input pieces must be whole UTF-8 characters (as a
// StreamDecoder gives); stop strings must be valid, non-empty UTF-8, so held text always starts on a
// character boundary. Not thread-safe; one per sequence.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ignis::sample {

class StopMatcher {
 public:
  // Throws ignis::Error if a stop string is empty or not valid UTF-8.
  explicit StopMatcher(std::vector<std::string> stops);

  std::string push(std::string_view text);
  std::string flush();

  bool stopped() const { return stopped_; }
  // The stop string that ended generation ("" while not stopped).
  const std::string& matched() const { return matched_; }
  // Bytes currently held back.
  size_t held() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

// True if `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s);

}  // namespace ignis::sample
