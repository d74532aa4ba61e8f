// GGUF files: a validated, memory-mapped reader and a writer.
//
// GgufFile::open maps the whole file read-only and parses the header, every metadata key/value and
// every tensor info, validating as it goes (see gguf.cpp NOTE): any problem throws ignis::Error with a
// one-line message naming the file, the key or tensor, and what is wrong. After open() succeeds, tensor
// data pointers are valid for the lifetime of the GgufFile and no further validation is needed.
// A GgufFile is immutable after open(): all const methods are thread-safe.
//
// Accepted: GGUF v2 and v3 (little-endian), every metadata value type, arrays nested up to 8 levels
// (at most 2^23 array elements per file, so a hostile file cannot cause a huge allocation),
// general.alignment (uint32, a power of two), tensors of 1..4 dims, each >= 1, of a type in
// core/dtype.h, in any order inside the data section. Tensor data from open() is aligned in
// memory to alignment() (up to the page size: the mapping is page-aligned); from_memory() copies
// into a heap buffer, so there only the offsets are aligned.
//
// from_parts() builds a GgufFile in memory from metadata and tensor infos whose data lives elsewhere
// (e.g. a Hugging Face folder's safetensors mapping, hf_load.h): it validates what open() validates
// about names, shapes, types and byte sizes, and keeps the memory alive through a shared_ptr. Its
// tensor data is aligned to the element size at least (callers guarantee it; checked), not to 32.
//
// Shapes use ggml's order: shape[0] is the row length (contiguous), shape[1] the number of rows, ...
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace ignis::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* value_type_name(ValueType t);
bool is_integer_type(ValueType t);  // any INT*/UINT* type
bool is_number_type(ValueType t);   // integer or FLOAT32/FLOAT64

// A metadata value. Scalars are widened into i / u / f; arrays keep their element type in `elem_type`
// and their elements in `arr` (nested arrays are arrays of Values).
struct Value {
  ValueType type = ValueType::UINT8;
  ValueType elem_type = ValueType::UINT8;  // for ARRAY
  uint64_t u = 0;    // UINT*, BOOL (the reader also sets it for INT* >= 0)
  int64_t i = 0;     // INT* (also set for UINT* that fit, and BOOL)
  double f = 0;      // FLOAT*
  std::string s;     // STRING
  std::vector<Value> arr;  // ARRAY

  bool is_integer() const;  // any INT*/UINT* type
  bool is_number() const;   // integer or float
};

struct TensorInfo {
  std::string name;
  DType type;
  std::vector<int64_t> shape;  // ggml order, 1..4 dims
  uint64_t offset = 0;         // relative to the data section
  size_t n_bytes = 0;
  const void* data = nullptr;  // into the mapping
  int64_t n_elements() const;
};

class GgufFile {
 public:
  // Opens, maps and validates `path`. Throws ignis::Error naming the file and the problem.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Same, over bytes owned by the caller (used by the fuzzer and tests); `name` is used in messages.
  static std::unique_ptr<GgufFile> from_memory(const void* data, size_t size, const std::string& name);
  // A GgufFile over metadata and tensors held elsewhere: each TensorInfo needs name, type, shape,
  // n_bytes and data (offset is ignored); `keep_alive` owns the memory the data pointers point into.
  // `name` is path() and is used in messages. Throws Error naming the key/tensor and the problem.
  static std::unique_ptr<GgufFile> from_parts(const std::string& name, std::vector<std::pair<std::string, Value>> kv,
                                              std::vector<TensorInfo> tensors, std::shared_ptr<const void> keep_alive);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // File offset of the tensor data section (0 when the file has no tensors).
  uint64_t data_offset() const { return data_offset_; }

  // Metadata, in file order. Long top-level arrays (a vocabulary) are checked at open and read on first
  // use: by find() (and the getters) for one key, by metadata() for all. Thread-safe.
  const std::vector<std::pair<std::string, Value>>& metadata() const;
  const Value* find(std::string_view key) const;
  // Elements of the array `key` without reading them (0 when absent or not an array).
  uint64_t array_size(std::string_view key) const;
  bool has(std::string_view key) const { return kv_index_.find(key) != kv_index_.end(); }  // reads nothing

  // Typed getters: throw Error "<file>: metadata key <key> is missing" / "... has type X, expected Y".
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;      // any integer type
  double get_float(std::string_view key) const;     // float or integer types
  bool get_bool(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  // get_string_array's elements one at a time, without the vector (a 150k-entry merge list is 5 MB of
  // fresh strings otherwise); the view is valid during the call only.
  void for_each_string(std::string_view key, const std::function<void(std::string_view)>& each) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  // Optional variants return nullopt when the key is absent (and still throw on a wrong type).
  std::optional<std::string> opt_string(std::string_view key) const;
  std::optional<int64_t> opt_int(std::string_view key) const;
  std::optional<double> opt_float(std::string_view key) const;
  std::optional<bool> opt_bool(std::string_view key) const;

  // The value of `key`; throws "<file>: metadata key <key> is missing".
  const Value& require(std::string_view key) const;

  // Drops the pages wholly inside [p, p + n) from this process's resident memory when they belong to
  // the file's own mapping (open()); a later read faults them back from the file. For memory the
  // GgufFile does not map itself it does nothing. Used after a tensor was copied (e.g. repacked).
  void release_pages(const void* p, size_t n) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Required tensors: throw "<file>: tensor <name> is missing" and, given a shape (ggml order),
  // "<file>: tensor <name> has shape [a, b], expected [c, d]".
  const TensorInfo& tensor(std::string_view name) const;
  const TensorInfo& tensor(std::string_view name, const std::vector<int64_t>& shape) const;

 private:
  GgufFile() = default;
  void parse(const uint8_t* data, size_t size);

  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  // A long array left unread at open: kv_[kv]'s elements start at pos of the file bytes.
  struct Lazy {
    size_t kv;
    size_t pos;
    uint64_t count;
    bool read = false;
  };
  void read_lazy(size_t kv) const;
  // Calls each(Value&&) for every element of the array `key` once its element type passes ok (else
  // throws as the typed getters do), straight from the file bytes while the array is unread: a
  // vocabulary taken by a typed getter is then never kept as Values as well.
  template <class F>
  void for_elements(std::string_view key, bool (*ok)(ValueType), const char* expected, F&& each) const;

  mutable std::vector<std::pair<std::string, Value>> kv_;  // (lazy arrays filled under lazy_mu_)
  mutable std::vector<Lazy> lazy_;
  mutable std::mutex lazy_mu_;
  const uint8_t* data_ = nullptr;  // the file bytes (mapping or owned_)
  size_t size_ = 0;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<uint8_t> owned_;  // for from_memory
  std::shared_ptr<const void> keep_alive_;  // for from_parts
};

// Writes GGUF v3 files. Metadata and tensor infos are written in insertion order; tensor data is
// aligned to `alignment` (general.alignment is written when it is not 32).
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32);
  void set_u8(const std::string& key, uint8_t v);
  void set_i8(const std::string& key, int8_t v);
  void set_u16(const std::string& key, uint16_t v);
  void set_i16(const std::string& key, int16_t v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_i64(const std::string& key, int64_t v);
  void set_f32(const std::string& key, float v);
  void set_f64(const std::string& key, double v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, const std::string& v);
  void set_array(const std::string& key, const Value& array_value);  // type must be ARRAY
  void set_value(const std::string& key, Value v) { set(key, std::move(v)); }  // any type, as read
  // The metadata set so far, in insertion order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  // Adds a tensor; `data` holds row_bytes(type, shape[0]) * (rows) bytes and is copied.
  void add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape,
                  const void* data, size_t n_bytes);
  // Writes the file (throws Error on I/O failure).
  void write(const std::string& path) const;
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
  };
  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<Tensor> tensors_;
  std::set<std::string, std::less<>> tensor_names_;
  void set(const std::string& key, Value v);
  void serialize(const std::function<void(const void*, size_t)>& out) const;
};

}  // namespace ignis::gguf
