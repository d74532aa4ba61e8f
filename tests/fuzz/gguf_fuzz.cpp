// libFuzzer target for the GGUF reader (run by tests/scripts/gguf_fuzz_test.sh).
//
// Any input must either parse or throw ignis::Error; anything else (a crash, a sanitizer report,
// another exception type, a hang, an allocation over -malloc_limit_mb) is a bug. When the input
// parses, every result is touched, and the file is written back with GgufWriter and read again:
// the second read must succeed and give the same keys, values and tensors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "format/gguf.h"

using namespace ignis;
using namespace ignis::gguf;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// Walks a value (nested arrays included) and folds it into `acc` so nothing is optimised away.
uint64_t touch(const Value& v) {
  uint64_t acc = static_cast<uint64_t>(v.type) + v.u + static_cast<uint64_t>(v.i) + v.s.size();
  acc += v.f != v.f ? 1 : 0;
  for (unsigned char c : v.s) acc += c;
  if (v.type == ValueType::ARRAY) {
    for (const Value& e : v.arr) {
      check(e.type == v.elem_type);
      acc += touch(e);
    }
  }
  return acc;
}

bool same(const Value& a, const Value& b) {
  if (a.type != b.type || a.u != b.u || a.i != b.i || a.s != b.s) return false;
  if (!(a.f == b.f || (a.f != a.f && b.f != b.f))) return false;
  if (a.type != ValueType::ARRAY) return true;
  if (a.elem_type != b.elem_type || a.arr.size() != b.arr.size()) return false;
  for (size_t k = 0; k < a.arr.size(); ++k)
    if (!same(a.arr[k], b.arr[k])) return false;
  return true;
}

// Exercises the typed getters; wrong types throw Error, which is fine.
void try_getters(const GgufFile& f, const std::string& key) {
  try { (void)f.get_string(key); } catch (const Error&) {}
  try { (void)f.get_int(key); } catch (const Error&) {}
  try { (void)f.get_float(key); } catch (const Error&) {}
  try { (void)f.get_bool(key); } catch (const Error&) {}
  try { (void)f.get_string_array(key); } catch (const Error&) {}
  try { (void)f.get_float_array(key); } catch (const Error&) {}
  try { (void)f.get_int_array(key); } catch (const Error&) {}
}

void rewrite_and_compare(const GgufFile& f) {
  GgufWriter w(f.alignment());
  for (const auto& [k, v] : f.metadata()) {
    switch (v.type) {
      case ValueType::UINT8: w.set_u8(k, static_cast<uint8_t>(v.u)); break;
      case ValueType::INT8: w.set_i8(k, static_cast<int8_t>(v.i)); break;
      case ValueType::UINT16: w.set_u16(k, static_cast<uint16_t>(v.u)); break;
      case ValueType::INT16: w.set_i16(k, static_cast<int16_t>(v.i)); break;
      case ValueType::UINT32: w.set_u32(k, static_cast<uint32_t>(v.u)); break;
      case ValueType::INT32: w.set_i32(k, static_cast<int32_t>(v.i)); break;
      case ValueType::UINT64: w.set_u64(k, v.u); break;
      case ValueType::INT64: w.set_i64(k, v.i); break;
      case ValueType::FLOAT32: w.set_f32(k, static_cast<float>(v.f)); break;
      case ValueType::FLOAT64: w.set_f64(k, v.f); break;
      case ValueType::BOOL: w.set_bool(k, v.u != 0); break;
      case ValueType::STRING: w.set_string(k, v.s); break;
      case ValueType::ARRAY: w.set_array(k, v); break;
    }
  }
  for (const TensorInfo& t : f.tensors()) w.add_tensor(t.name, t.type, t.shape, t.data, t.n_bytes);
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto g = GgufFile::from_memory(bytes.data(), bytes.size(), "rewritten");  // must not throw
  check(g->metadata().size() == f.metadata().size());
  for (size_t k = 0; k < f.metadata().size(); ++k) {
    check(g->metadata()[k].first == f.metadata()[k].first);
    check(same(g->metadata()[k].second, f.metadata()[k].second));
  }
  check(g->tensors().size() == f.tensors().size());
  for (size_t t = 0; t < f.tensors().size(); ++t) {
    const TensorInfo& a = f.tensors()[t];
    const TensorInfo& b = g->tensors()[t];
    check(a.name == b.name && a.type == b.type && a.shape == b.shape && a.n_bytes == b.n_bytes);
    check(std::memcmp(a.data, b.data, a.n_bytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<GgufFile> f;
  try {
    f = GgufFile::from_memory(data, size, "fuzz.gguf");
  } catch (const Error&) {
    return 0;
  }
  volatile uint64_t acc = f->version() + f->alignment() + f->data_offset();
  for (const auto& [key, v] : f->metadata()) {
    check(f->find(key) == &v);
    acc = acc + touch(v);
    try_getters(*f, key);
  }
  for (const TensorInfo& t : f->tensors()) {
    check(f->find_tensor(t.name) == &t);
    check(t.n_bytes > 0 && t.n_elements() > 0 && !t.shape.empty() && t.shape.size() <= 4);
    check(t.offset % f->alignment() == 0);
    const auto* p = static_cast<const uint8_t*>(t.data);
    acc = acc + p[0] + p[t.n_bytes - 1];  // ASan checks both ends lie inside the input copy
    (void)f->tensor(t.name, t.shape);
  }
  rewrite_and_compare(*f);
  return 0;
}
