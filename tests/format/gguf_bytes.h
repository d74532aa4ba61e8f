// Helpers for the GGUF tests: a little-endian byte builder for hand-made (often corrupt) files, and
// an assertion that parsing bytes throws ignis::Error with a one-line message naming the file.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "format/gguf.h"

// EXPECT_CONTAINS(message, substring), without needing gmock.
#define EXPECT_CONTAINS(msg, sub)                                          \
  do {                                                                     \
    const std::string m_ = (msg);                                          \
    EXPECT_NE(m_.find(sub), std::string::npos) << "message: " << m_;       \
  } while (0)

namespace ignis::gguf::testing {

class Bytes {
 public:
  template <typename T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b_.insert(b_.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(const std::string& s) {
    u64(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  // Header: magic, version, n_tensors, n_kv.
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b_.insert(b_.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  // A u32 key/value.
  Bytes& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  // A tensor info.
  Bytes& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  Bytes& pad_to(size_t alignment) {
    while (b_.size() % alignment) b_.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b_.insert(b_.end(), n, 0);
    return *this;
  }
  const std::vector<uint8_t>& vec() const { return b_; }
  size_t size() const { return b_.size(); }

 private:
  std::vector<uint8_t> b_;
};

// Parses `bytes` as "bad.gguf" and returns the error message; fails the test when parsing succeeds,
// when the message does not start with the file name, or when it spans several lines.
inline std::string parse_error(const std::vector<uint8_t>& bytes, const std::string& name = "bad.gguf") {
  try {
    auto f = GgufFile::from_memory(bytes.data(), bytes.size(), name);
    ADD_FAILURE() << "expected an error, parsed " << f->metadata().size() << " keys";
    return "";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(name + ": ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
}

}  // namespace ignis::gguf::testing
