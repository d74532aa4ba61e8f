// GGUF v3 writer. Layout: header, key/values in insertion order, tensor infos in insertion order,
// padding to the alignment, then each tensor's bytes padded to the alignment.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "core/large_writes.h"
#include "format/gguf.h"
#include "format/gguf_limits.h"

namespace ignis::gguf {
namespace {

constexpr uint32_t kDefaultAlignment = 32;

using Sink = std::function<void(const void*, size_t)>;

template <typename T>
void put(const Sink& out, T v) {
  out(&v, sizeof(T));
}

void put_string(const Sink& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  if (!s.empty()) out(s.data(), s.size());
}

// Writes the payload of `v` (no type tag).
void put_value(const Sink& out, const Value& v) {
  switch (v.type) {
    case ValueType::UINT8: put<uint8_t>(out, static_cast<uint8_t>(v.u)); break;
    case ValueType::INT8: put<int8_t>(out, static_cast<int8_t>(v.i)); break;
    case ValueType::UINT16: put<uint16_t>(out, static_cast<uint16_t>(v.u)); break;
    case ValueType::INT16: put<int16_t>(out, static_cast<int16_t>(v.i)); break;
    case ValueType::UINT32: put<uint32_t>(out, static_cast<uint32_t>(v.u)); break;
    case ValueType::INT32: put<int32_t>(out, static_cast<int32_t>(v.i)); break;
    case ValueType::UINT64: put<uint64_t>(out, v.u); break;
    case ValueType::INT64: put<int64_t>(out, v.i); break;
    case ValueType::FLOAT32: put<float>(out, static_cast<float>(v.f)); break;
    case ValueType::FLOAT64: put<double>(out, v.f); break;
    case ValueType::BOOL: put<uint8_t>(out, v.u != 0 ? 1 : 0); break;
    case ValueType::STRING: put_string(out, v.s); break;
    case ValueType::ARRAY:
      put<uint32_t>(out, static_cast<uint32_t>(v.elem_type));
      put<uint64_t>(out, v.arr.size());
      for (const Value& e : v.arr) put_value(out, e);
      break;
  }
}

// Checks that every element of an array (recursively) has the declared element type, so the
// written file is readable; throws naming the key.
void check_array(const Value& v, const std::string& key, int depth) {
  if (depth >= kMaxArrayDepth)
    fail("gguf writer: metadata key {} nests arrays deeper than {} levels", key, kMaxArrayDepth);
  if (static_cast<uint32_t>(v.elem_type) > static_cast<uint32_t>(ValueType::FLOAT64))
    fail("gguf writer: metadata key {} has an invalid array element type", key);
  for (size_t k = 0; k < v.arr.size(); ++k) {
    const Value& e = v.arr[k];
    if (e.type != v.elem_type)
      fail("gguf writer: metadata key {} element {} has type {}, expected {}", key, k,
           value_type_name(e.type), value_type_name(v.elem_type));
    if (e.type == ValueType::ARRAY) check_array(e, key, depth + 1);
  }
}

uint64_t padded(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kMaxAlignment)
    fail("gguf writer: alignment {} is not a power of two up to {}", alignment, kMaxAlignment);
}

void GgufWriter::set(const std::string& key, Value v) {
  if (key.empty()) fail("gguf writer: empty metadata key");
  if (key == "general.alignment" && (v.type != ValueType::UINT32 || v.u != alignment_))
    fail("gguf writer: general.alignment must be the uint32 {} given to the writer", alignment_);
  for (auto& [k, old] : kv_) {
    if (k == key) {  // replacing keeps the key's original position
      old = std::move(v);
      return;
    }
  }
  kv_.emplace_back(key, std::move(v));
}

namespace {
Value unsigned_value(ValueType t, uint64_t x) {
  Value v;
  v.type = t;
  v.u = x;
  v.i = static_cast<int64_t>(x);
  return v;
}
Value signed_value(ValueType t, int64_t x) {
  Value v;
  v.type = t;
  v.i = x;
  v.u = static_cast<uint64_t>(x);
  return v;
}
Value float_value(ValueType t, double x) {
  Value v;
  v.type = t;
  v.f = x;
  return v;
}
}  // namespace

void GgufWriter::set_u8(const std::string& key, uint8_t v) { set(key, unsigned_value(ValueType::UINT8, v)); }
void GgufWriter::set_i8(const std::string& key, int8_t v) { set(key, signed_value(ValueType::INT8, v)); }
void GgufWriter::set_u16(const std::string& key, uint16_t v) { set(key, unsigned_value(ValueType::UINT16, v)); }
void GgufWriter::set_i16(const std::string& key, int16_t v) { set(key, signed_value(ValueType::INT16, v)); }
void GgufWriter::set_u32(const std::string& key, uint32_t v) { set(key, unsigned_value(ValueType::UINT32, v)); }
void GgufWriter::set_i32(const std::string& key, int32_t v) { set(key, signed_value(ValueType::INT32, v)); }
void GgufWriter::set_u64(const std::string& key, uint64_t v) { set(key, unsigned_value(ValueType::UINT64, v)); }
void GgufWriter::set_i64(const std::string& key, int64_t v) { set(key, signed_value(ValueType::INT64, v)); }
void GgufWriter::set_f32(const std::string& key, float v) { set(key, float_value(ValueType::FLOAT32, v)); }
void GgufWriter::set_f64(const std::string& key, double v) { set(key, float_value(ValueType::FLOAT64, v)); }
void GgufWriter::set_bool(const std::string& key, bool v) { set(key, unsigned_value(ValueType::BOOL, v ? 1 : 0)); }

void GgufWriter::set_string(const std::string& key, const std::string& v) {
  Value val;
  val.type = ValueType::STRING;
  val.s = v;
  set(key, std::move(val));
}

void GgufWriter::set_array(const std::string& key, const Value& array_value) {
  if (array_value.type != ValueType::ARRAY)
    fail("gguf writer: set_array for metadata key {} given a {}", key, value_type_name(array_value.type));
  check_array(array_value, key, 0);
  set(key, array_value);
}

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  Value a;
  a.type = ValueType::ARRAY;
  a.elem_type = ValueType::STRING;
  a.arr.resize(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    a.arr[k].type = ValueType::STRING;
    a.arr[k].s = v[k];
  }
  set(key, std::move(a));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  Value a;
  a.type = ValueType::ARRAY;
  a.elem_type = ValueType::FLOAT32;
  a.arr.reserve(v.size());
  for (float x : v) a.arr.push_back(float_value(ValueType::FLOAT32, x));
  set(key, std::move(a));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  Value a;
  a.type = ValueType::ARRAY;
  a.elem_type = ValueType::INT32;
  a.arr.reserve(v.size());
  for (int32_t x : v) a.arr.push_back(signed_value(ValueType::INT32, x));
  set(key, std::move(a));
}

void GgufWriter::add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape,
                            const void* data, size_t n_bytes) {
  if (name.empty()) fail("gguf writer: empty tensor name");
  if (tensor_names_.count(name)) fail("gguf writer: duplicate tensor {}", name);
  const DTypeTraits* tr = dtype_traits(type);
  if (!tr) fail("gguf writer: tensor {} has unknown type id {}", name, static_cast<uint32_t>(type));
  if (shape.empty() || shape.size() > kMaxDims)
    fail("gguf writer: tensor {} has {} dimensions, expected 1 to {}", name, shape.size(), kMaxDims);
  uint64_t n_el = 1;
  for (int64_t d : shape) {
    if (d < 1) fail("gguf writer: tensor {} has shape {} with a dimension < 1", name, format_shape(shape));
    if (__builtin_mul_overflow(n_el, static_cast<uint64_t>(d), &n_el) || n_el > (uint64_t{1} << 62))
      fail("gguf writer: tensor {} shape {} is too large", name, format_shape(shape));
  }
  if (shape[0] % tr->block_size != 0)
    fail("gguf writer: tensor {} of type {} has rows of {} elements, not a multiple of {}", name,
         tr->name, shape[0], tr->block_size);
  const uint64_t want = n_el / static_cast<uint64_t>(tr->block_size) * tr->block_bytes;
  if (n_bytes != want)
    fail("gguf writer: tensor {} with shape {} ({}) needs {} bytes, given {}", name,
         format_shape(shape), tr->name, want, n_bytes);
  Tensor t{name, type, shape, {}};
  const auto* p = static_cast<const uint8_t*>(data);
  if (n_bytes > 0) t.data.assign(p, p + n_bytes);
  tensors_.push_back(std::move(t));
  tensor_names_.insert(name);
}

// Streams the whole file through `out`.
void GgufWriter::serialize(const std::function<void(const void*, size_t)>& out) const {
  std::vector<std::pair<std::string, Value>> extra;
  bool has_alignment = false;
  for (const auto& [k, v] : kv_) has_alignment |= (k == "general.alignment");
  if (alignment_ != kDefaultAlignment && !has_alignment)
    extra.emplace_back("general.alignment", unsigned_value(ValueType::UINT32, alignment_));
  uint64_t written = 0;
  Sink counted = [&](const void* p, size_t n) {
    out(p, n);
    written += n;
  };
  put<uint32_t>(counted, 0x46554747);  // "GGUF"
  put<uint32_t>(counted, 3);
  put<uint64_t>(counted, tensors_.size());
  put<uint64_t>(counted, kv_.size() + extra.size());
  using KvList = std::vector<std::pair<std::string, Value>>;
  for (const KvList* list : std::initializer_list<const KvList*>{&kv_, &extra}) {
    for (const auto& [k, v] : *list) {
      put_string(counted, k);
      put<uint32_t>(counted, static_cast<uint32_t>(v.type));
      put_value(counted, v);
    }
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(counted, t.name);
    put<uint32_t>(counted, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) put<uint64_t>(counted, static_cast<uint64_t>(d));
    put<uint32_t>(counted, static_cast<uint32_t>(t.type));
    put<uint64_t>(counted, offset);
    offset += padded(t.data.size(), alignment_);
  }
  if (tensors_.empty()) return;
  const std::vector<uint8_t> zeros(alignment_, 0);
  auto pad = [&] {
    const uint64_t n = padded(written, alignment_) - written;
    if (n) counted(zeros.data(), n);
  };
  pad();
  for (const Tensor& t : tensors_) {
    if (!t.data.empty()) counted(t.data.data(), t.data.size());
    pad();
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> bytes;
  serialize([&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  });
  return bytes;
}

void GgufWriter::write(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("{}: cannot create: {}", path, std::strerror(errno));
  const auto buffer = large_write_buffer(f);  // (core/large_writes.h: a later load maps it faster)
  bool ok = true;
  serialize([&](const void* p, size_t n) {
    if (ok && std::fwrite(p, 1, n, f) != n) ok = false;
  });
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::error_code ec;  // no partial file left behind (but never remove a device such as /dev/full)
    if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
    fail("{}: write failed: {}", path, std::strerror(err));
  }
}

}  // namespace ignis::gguf
