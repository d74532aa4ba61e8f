// PCRE2 wrapper (see regex.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex.h"

#include <pcre2.h>

#include "core/error.h"

namespace ignis::text {

Regex::Regex(const std::string& pattern, const std::string& what) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE err_off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off,
                                   nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    fail("{}: invalid regex at offset {}: {} (pattern {})", what, size_t(err_off),
         reinterpret_cast<const char*>(msg), pattern);
  }
  // JIT is an optimisation: if it is unavailable the interpreter gives the same matches.
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

namespace {
// Per-thread match state: the JIT stack grows to 1 MiB for patterns with deep backtracking.
// Only the whole-match offsets are read, so one small match block serves every pattern (a pattern
// with more groups gets rc 0: "matched, ovector too small").
struct MatchState {
  pcre2_match_context* ctx = nullptr;
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_data* md = nullptr;
  MatchState() {
    md = pcre2_match_data_create(1, nullptr);
    ctx = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(ctx);
    pcre2_match_data_free(md);
  }
};
}  // namespace

void Regex::find_all(std::string_view subject, Span span, std::vector<Span>* out) const {
  thread_local MatchState state;
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = state.md;
  const auto* base = reinterpret_cast<PCRE2_SPTR>(subject.data() + span.begin);
  const PCRE2_SIZE len = span.size();
  PCRE2_SIZE pos = 0;
  while (pos < len) {
    const int rc = jit_ ? pcre2_jit_match(code, base, len, pos, 0, md, state.ctx)
                        : pcre2_match(code, base, len, pos, PCRE2_NO_UTF_CHECK, md, state.ctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof(msg));
      fail("regex match failed: {} (pattern {})", reinterpret_cast<const char*>(msg), pattern_);
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const PCRE2_SIZE b = ov[0], e = ov[1];
    if (e > b) {
      out->push_back({uint32_t(span.begin + b), uint32_t(span.begin + e)});
      pos = e;
    } else {
      // Empty match: step over one whole character.
      pos = b + 1;
      while (pos < len && (base[pos] & 0xC0) == 0x80) ++pos;
    }
  }
}

}  // namespace ignis::text
