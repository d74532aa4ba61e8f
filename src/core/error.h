// Errors at module boundaries.
//
// ignis reports every user-facing problem (bad model file, bad metadata, bad request, bad flag) as an
// ignis::Error whose message is one line a user can act on: it names the file, tensor, key or field and
// says what is wrong ("model.gguf: tensor blk.3.attn_q.weight has shape [896, 512], expected [896, 896]").
// Internal invariants use assertions, never Error. Thread-safe: Error is a value type.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ignis {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// fail("{}: tensor {} missing", path, name) throws ignis::Error with the formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ignis
