// A compiled Unicode regular expression (PCRE2 with UTF + UCP, JIT-compiled when available) and the
// "find every match" primitive the pre-tokenizers are built on.
//
// A Regex is immutable after construction; find_all is const and thread-safe (match data and the
// JIT stack are per call / per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ignis::text {

struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t size() const { return end - begin; }
};

class Regex {
 public:
  // Throws ignis::Error naming `what` (where the pattern came from) if it does not compile.
  Regex(const std::string& pattern, const std::string& what);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-empty matches in subject[span] (lookarounds see only the span), left to right.
  void find_all(std::string_view subject, Span span, std::vector<Span>* out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

}  // namespace ignis::text
