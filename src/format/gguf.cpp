// GGUF reader: memory mapping, parsing and validation of header, metadata and tensor infos.
// The writer lives in gguf_writer.cpp.
#include "format/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/ranges.h>

#include "core/error.h"
#include "format/gguf_limits.h"

namespace ignis::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8: return "uint8";
    case ValueType::INT8: return "int8";
    case ValueType::UINT16: return "uint16";
    case ValueType::INT16: return "int16";
    case ValueType::UINT32: return "uint32";
    case ValueType::INT32: return "int32";
    case ValueType::FLOAT32: return "float32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::UINT64: return "uint64";
    case ValueType::INT64: return "int64";
    case ValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::UINT16: case ValueType::INT16:
    case ValueType::UINT32: case ValueType::INT32: case ValueType::UINT64: case ValueType::INT64:
      return true;
    default:
      return false;
  }
}

bool is_number_type(ValueType t) {
  return is_integer_type(t) || t == ValueType::FLOAT32 || t == ValueType::FLOAT64;
}

bool Value::is_integer() const { return is_integer_type(type); }
bool Value::is_number() const { return is_number_type(type); }

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated against overflow at parse time
  return n;
}

std::string printable_name(std::string_view s) {
  std::string out;
  const size_t n = std::min<size_t>(s.size(), kMaxNameInMessage);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  if (s.size() > n) out += "...";
  return out;
}

std::string format_shape(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32

// Smallest encoding of one element of `t` inside an array, used to bound counts by the bytes left
// before anything is allocated.
size_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
    case ValueType::UINT16: case ValueType::INT16: return 2;
    case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
    case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: return 8;
    case ValueType::STRING: return 8;   // the length
    case ValueType::ARRAY: return 12;   // element type + count
  }
  return 1;
}

bool valid_value_type(uint32_t raw) { return raw <= static_cast<uint32_t>(ValueType::FLOAT64); }

// Bounds-checked little-endian cursor over the file bytes. Every read names what it was reading so a
// truncated file reports "... truncated at offset N while reading <what>".
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  void skip(size_t n) { pos_ += n; }  // callers check n <= remaining()
  void seek(size_t pos) { pos_ = pos; }

  template <typename T>
  T read(std::string_view what) {
    if (remaining() < sizeof(T))
      fail("{}: file truncated at offset {} while reading {}", path_, pos_, what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > remaining())
      fail("{}: {} has length {} but only {} bytes remain in the file", path_, what, len, remaining());
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& path_;
};

struct ParseState {
  Cursor& cur;
  const std::string& path;
  uint64_t array_elements = 0;  // total over the file, bounded by kMaxArrayElements
  bool defer = false;           // may leave a long top-level array unread (lazy_*)
  size_t lazy_pos = 0;          // set when it did: where its elements start,
  uint64_t lazy_count = 0;      // and how many
};

// NOTE: a top-level array of at least kLazyArrayElements scalars or strings (a vocabulary) is checked
// at open but its elements are read only when first asked for (GgufFile::find, metadata()). Read at
// open, Qwen2's 151,936 tokens, 151,387 merges and token types were 455k Values of 88 bytes, about 43 MB
// resident for a model that `ignis bench` never tokenizes with (Qwen3-0.6B Q8_0 peak RSS 750 MB
// against llama-bench's 746).
constexpr uint64_t kLazyArrayElements = 4096;

Value read_value(ParseState& st, ValueType type, int depth, const std::string& what);

void read_array(ParseState& st, Value& v, int depth, const std::string& what) {
  if (depth >= kMaxArrayDepth)
    fail("{}: {} nests arrays deeper than {} levels", st.path, what, kMaxArrayDepth);
  const uint32_t raw = st.cur.read<uint32_t>(what + " (array element type)");
  if (!valid_value_type(raw)) fail("{}: {} has unknown array element type {}", st.path, what, raw);
  v.elem_type = static_cast<ValueType>(raw);
  const uint64_t count = st.cur.read<uint64_t>(what + " (array length)");
  const size_t min_size = min_encoded_size(v.elem_type);
  if (count > st.cur.remaining() / min_size)
    fail("{}: {} has array length {} but only {} bytes remain in the file", st.path, what, count,
         st.cur.remaining());
  if (count > kMaxArrayElements - st.array_elements)
    fail("{}: {} has array length {}, over the limit of {} array elements per file", st.path, what,
         count, kMaxArrayElements);
  st.array_elements += count;
  if (st.defer && depth == 0 && v.elem_type != ValueType::ARRAY && count >= kLazyArrayElements) {
    // Checked as read_value would read them, nothing kept.
    st.lazy_pos = st.cur.pos();
    st.lazy_count = count;
    if (v.elem_type == ValueType::STRING) {
      for (uint64_t k = 0; k < count; ++k) {
        const uint64_t len = st.cur.read<uint64_t>(what);
        if (len > st.cur.remaining())
          fail("{}: {} has length {} but only {} bytes remain in the file", st.path, what, len, st.cur.remaining());
        st.cur.skip(static_cast<size_t>(len));
      }
    } else if (v.elem_type == ValueType::BOOL) {
      for (uint64_t k = 0; k < count; ++k) {
        const uint8_t b = st.cur.read<uint8_t>(what);
        if (b > 1) fail("{}: {} has invalid bool value {}", st.path, what, b);
      }
    } else {
      st.cur.skip(static_cast<size_t>(count * min_size));  // fixed size: within bounds (checked above)
    }
    return;
  }
  v.arr.reserve(static_cast<size_t>(count));
  for (uint64_t k = 0; k < count; ++k) {
    // Nested arrays carry their index in error messages ("key[3]"); flat arrays reuse `what`.
    if (v.elem_type == ValueType::ARRAY)
      v.arr.push_back(read_value(st, v.elem_type, depth + 1, fmt::format("{}[{}]", what, k)));
    else
      v.arr.push_back(read_value(st, v.elem_type, depth + 1, what));
  }
}

Value read_value(ParseState& st, ValueType type, int depth, const std::string& what) {
  Value v;
  v.type = type;
  Cursor& c = st.cur;
  auto set_unsigned = [&v](uint64_t x) {
    v.u = x;
    if (x <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) v.i = static_cast<int64_t>(x);
  };
  auto set_signed = [&v](int64_t x) {
    v.i = x;
    if (x >= 0) v.u = static_cast<uint64_t>(x);
  };
  switch (type) {
    case ValueType::UINT8: set_unsigned(c.read<uint8_t>(what)); break;
    case ValueType::INT8: set_signed(c.read<int8_t>(what)); break;
    case ValueType::UINT16: set_unsigned(c.read<uint16_t>(what)); break;
    case ValueType::INT16: set_signed(c.read<int16_t>(what)); break;
    case ValueType::UINT32: set_unsigned(c.read<uint32_t>(what)); break;
    case ValueType::INT32: set_signed(c.read<int32_t>(what)); break;
    case ValueType::UINT64: set_unsigned(c.read<uint64_t>(what)); break;
    case ValueType::INT64: set_signed(c.read<int64_t>(what)); break;
    case ValueType::FLOAT32: v.f = c.read<float>(what); break;
    case ValueType::FLOAT64: v.f = c.read<double>(what); break;
    case ValueType::BOOL: {
      const uint8_t b = c.read<uint8_t>(what);
      if (b > 1) fail("{}: {} has invalid bool value {}", st.path, what, b);
      v.u = b;
      v.i = b;
      break;
    }
    case ValueType::STRING: v.s = c.read_string(what); break;
    case ValueType::ARRAY: read_array(st, v, depth, what); break;
  }
  return v;
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }  // callers keep x far from 2^64

// Closes a file descriptor on scope exit.
struct FdGuard {
  int fd;
  ~FdGuard() { if (fd >= 0) ::close(fd); }
};

}  // namespace

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  // NOTE: O_NONBLOCK so that opening a FIFO by mistake cannot hang; it is then rejected as not a
  // regular file. It has no effect on reads of regular files.
  FdGuard g{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (g.fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(g.fd, &st) != 0) fail("{}: cannot stat: {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("{}: is a directory, not a GGUF file", path);
  if (!S_ISREG(st.st_mode)) fail("{}: not a regular file", path);
  if (st.st_size == 0) fail("{}: file is empty, not a GGUF file", path);
  const size_t size = static_cast<size_t>(st.st_size);
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, g.fd, 0);
  if (m == MAP_FAILED) fail("{}: cannot memory-map {} bytes: {}", path, size, std::strerror(errno));
  f->map_ = m;
  f->map_size_ = size;
  // The weights are read soon after open in practice; ask the kernel to start reading ahead.
  ::madvise(m, size, MADV_WILLNEED);
  f->parse(static_cast<const uint8_t*>(m), size);
  return f;
}

void GgufFile::release_pages(const void* p, size_t n) const {
  const auto b = reinterpret_cast<uintptr_t>(p), m = reinterpret_cast<uintptr_t>(map_);
  if (!map_ || b < m || n > map_size_ || b - m > map_size_ - n) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (b + page - 1) / page * page, hi = (b + n) / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

std::unique_ptr<GgufFile> GgufFile::from_memory(const void* data, size_t size, const std::string& name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = name;
  if (size > 0) {
    const auto* p = static_cast<const uint8_t*>(data);
    f->owned_.assign(p, p + size);
  }
  f->parse(f->owned_.data(), f->owned_.size());
  return f;
}

// NOTE: the checks are those parse() makes on a tensor info, except the data-section ones (offsets,
// overlap), which have no meaning here; in their place each data pointer must be set and suit its
// type's element size.
std::unique_ptr<GgufFile> GgufFile::from_parts(const std::string& name,
                                               std::vector<std::pair<std::string, Value>> kv,
                                               std::vector<TensorInfo> tensors,
                                               std::shared_ptr<const void> keep_alive) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = name;
  f->version_ = 3;
  f->keep_alive_ = std::move(keep_alive);
  if (kv.size() > kMaxKeys) fail("{}: metadata count {} is over the limit of {}", name, kv.size(), kMaxKeys);
  if (tensors.size() > kMaxTensors)
    fail("{}: tensor count {} is over the limit of {}", name, tensors.size(), kMaxTensors);
  for (auto& [key, v] : kv) {
    if (key.empty()) fail("{}: metadata key #{} has an empty name", name, f->kv_.size());
    if (f->kv_index_.count(key)) fail("{}: duplicate metadata key {}", name, printable_name(key));
    f->kv_index_.emplace(key, f->kv_.size());
    f->kv_.emplace_back(std::move(key), std::move(v));
  }
  for (TensorInfo& ti : tensors) {
    if (ti.name.empty()) fail("{}: tensor #{} has an empty name", name, f->tensors_.size());
    const std::string what = "tensor " + printable_name(ti.name);
    if (f->tensor_index_.count(ti.name)) fail("{}: duplicate {}", name, what);
    if (ti.shape.empty() || ti.shape.size() > kMaxDims)
      fail("{}: {} has {} dimensions, expected 1 to {}", name, what, ti.shape.size(), kMaxDims);
    uint64_t n_el = 1;
    for (size_t d = 0; d < ti.shape.size(); ++d) {
      if (ti.shape[d] <= 0) fail("{}: {} has a dimension {} of size {}", name, what, d, ti.shape[d]);
      if (mul_overflows(n_el, static_cast<uint64_t>(ti.shape[d]), &n_el) ||
          n_el > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail("{}: {} has too many elements (shape overflows 63 bits)", name, what);
    }
    const DTypeTraits* tr = dtype_traits(ti.type);
    if (!tr) fail("{}: {} has unknown type id {}", name, what, static_cast<uint32_t>(ti.type));
    if (ti.shape[0] % tr->block_size != 0)
      fail("{}: {} of type {} has rows of {} elements, not a multiple of the block size {}", name, what, tr->name,
           ti.shape[0], tr->block_size);
    const uint64_t bytes = n_el / static_cast<uint64_t>(tr->block_size) * tr->block_bytes;
    if (ti.n_bytes != bytes)
      fail("{}: {} has shape {} ({}) and {} bytes, expected {}", name, what, format_shape(ti.shape), tr->name,
           ti.n_bytes, bytes);
    if (!ti.data) fail("{}: {} has no data", name, what);
    const size_t el = tr->is_quantized ? 1 : tr->block_bytes;
    if (reinterpret_cast<uintptr_t>(ti.data) % el != 0)
      fail("{}: {} data is not aligned to its element size {}", name, what, el);
    ti.offset = 0;
    f->tensor_index_.emplace(ti.name, f->tensors_.size());
    f->tensors_.push_back(std::move(ti));
  }
  return f;
}

GgufFile::~GgufFile() {
  if (map_) ::munmap(map_, map_size_);
}

// NOTE: validation order follows the file: header, then each key/value (bounded by the bytes left,
// so a hostile count fails before anything is allocated), then each tensor info on its own (name,
// dims, type, byte size without overflow, aligned offset), and finally the tensors against the
// data section (inside the file, pairwise disjoint). Zero-sized dimensions are rejected even though
// ggml accepts them: no model tensor is empty, and callers may divide by any dim.
void GgufFile::parse(const uint8_t* data, size_t size) {
  const std::string& path = path_;
  Cursor cur(data, size, path);
  if (size < 4) fail("{}: file is too small to be GGUF ({} bytes)", path, size);
  const uint32_t magic = cur.read<uint32_t>("magic");
  if (magic != kMagic) fail("{}: not a GGUF file (bad magic)", path);
  version_ = cur.read<uint32_t>("version");
  if (version_ == 1) fail("{}: GGUF version 1 is not supported (only versions 2 and 3)", path);
  if (version_ != 2 && version_ != 3) {
    if (version_ == 0x02000000 || version_ == 0x03000000)
      fail("{}: big-endian GGUF files are not supported", path);
    fail("{}: unsupported GGUF version {} (only versions 2 and 3)", path, version_);
  }
  const uint64_t n_tensors = cur.read<uint64_t>("tensor count");
  const uint64_t n_kv = cur.read<uint64_t>("metadata count");
  // A key/value needs at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at least
  // 8 (name length) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset).
  if (n_kv > cur.remaining() / 13)
    fail("{}: metadata count {} is larger than the file can hold", path, n_kv);
  if (n_tensors > cur.remaining() / 32)
    fail("{}: tensor count {} is larger than the file can hold", path, n_tensors);
  if (n_kv > kMaxKeys) fail("{}: metadata count {} is over the limit of {}", path, n_kv, kMaxKeys);
  if (n_tensors > kMaxTensors)
    fail("{}: tensor count {} is over the limit of {}", path, n_tensors, kMaxTensors);

  ParseState st{cur, path};
  kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = cur.read_string(fmt::format("the name of metadata key #{}", k));
    if (key.empty()) fail("{}: metadata key #{} has an empty name", path, k);
    const std::string what = "metadata key " + printable_name(key);
    if (kv_index_.count(key)) fail("{}: duplicate {}", path, what);
    const uint32_t raw = cur.read<uint32_t>(what + " (type)");
    if (!valid_value_type(raw)) fail("{}: {} has unknown value type {}", path, what, raw);
    st.defer = true;
    st.lazy_count = 0;
    Value v = read_value(st, static_cast<ValueType>(raw), 0, what);
    st.defer = false;
    if (st.lazy_count) lazy_.push_back(Lazy{kv_.size(), st.lazy_pos, st.lazy_count});
    kv_index_.emplace(key, kv_.size());
    kv_.emplace_back(std::move(key), std::move(v));
  }
  data_ = data;
  size_ = size;

  if (const Value* a = find("general.alignment")) {
    if (a->type != ValueType::UINT32)
      fail("{}: metadata key general.alignment has type {}, expected uint32", path,
           value_type_name(a->type));
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      fail("{}: metadata key general.alignment is {}, expected a nonzero power of two", path, a->u);
    if (a->u > kMaxAlignment)
      fail("{}: metadata key general.alignment is {}, larger than the limit {}", path, a->u,
           kMaxAlignment);
    alignment_ = static_cast<uint32_t>(a->u);
  }

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t t = 0; t < n_tensors; ++t) {
    TensorInfo ti;
    ti.name = cur.read_string(fmt::format("the name of tensor #{}", t));
    if (ti.name.empty()) fail("{}: tensor #{} has an empty name", path, t);
    const std::string what = "tensor " + printable_name(ti.name);
    if (tensor_index_.count(ti.name)) fail("{}: duplicate {}", path, what);
    const uint32_t n_dims = cur.read<uint32_t>(what + " (n_dims)");
    if (n_dims < 1 || n_dims > kMaxDims)
      fail("{}: {} has {} dimensions, expected 1 to {}", path, what, n_dims, kMaxDims);
    uint64_t n_el = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = cur.read<uint64_t>(what + " (shape)");
      if (dim == 0) fail("{}: {} has a zero-sized dimension {}", path, what, d);
      if (mul_overflows(n_el, dim, &n_el) || n_el > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail("{}: {} has too many elements (shape overflows 63 bits)", path, what);
      ti.shape.push_back(static_cast<int64_t>(dim));
    }
    const uint32_t raw_type = cur.read<uint32_t>(what + " (type)");
    const DTypeTraits* tr = dtype_traits(raw_type);
    if (!tr) fail("{}: {} has unknown type id {}", path, what, raw_type);
    ti.type = tr->type;
    if (ti.shape[0] % tr->block_size != 0)
      fail("{}: {} of type {} has rows of {} elements, not a multiple of the block size {}", path,
           what, tr->name, ti.shape[0], tr->block_size);
    uint64_t bytes = 0;
    if (mul_overflows(n_el / static_cast<uint64_t>(tr->block_size), tr->block_bytes, &bytes) ||
        bytes > size)
      fail("{}: {} has shape {} ({}), needing more bytes than the file holds ({})", path, what,
           format_shape(ti.shape), tr->name, size);
    ti.n_bytes = static_cast<size_t>(bytes);
    ti.offset = cur.read<uint64_t>(what + " (offset)");
    if (ti.offset % alignment_ != 0)
      fail("{}: {} has offset {}, not a multiple of the alignment {}", path, what, ti.offset,
           alignment_);
    tensor_index_.emplace(ti.name, tensors_.size());
    tensors_.push_back(std::move(ti));
  }

  if (tensors_.empty()) return;
  const uint64_t data_start = align_up(cur.pos(), alignment_);
  if (data_start > size)
    fail("{}: file truncated: the tensor data section would start at offset {} but the file has {} bytes",
         path, data_start, size);
  data_offset_ = data_start;
  const uint64_t data_size = size - data_start;
  for (TensorInfo& ti : tensors_) {
    if (ti.offset > data_size || ti.n_bytes > data_size - ti.offset)
      fail("{}: tensor {} data ({} bytes at offset {}) extends past the end of the file", path,
           printable_name(ti.name), ti.n_bytes, data_start + ti.offset);
    ti.data = data + data_start + ti.offset;
  }
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [this](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& a = tensors_[order[k - 1]];
    const TensorInfo& b = tensors_[order[k]];
    if (a.offset + a.n_bytes > b.offset)
      fail("{}: tensors {} and {} overlap in the data section", path, printable_name(a.name),
           printable_name(b.name));
  }
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  if (it == kv_index_.end()) return nullptr;
  read_lazy(it->second);
  return &kv_[it->second].second;
}

uint64_t GgufFile::array_size(std::string_view key) const {
  auto it = kv_index_.find(key);
  if (it == kv_index_.end()) return 0;
  {
    std::lock_guard lock(lazy_mu_);
    for (const Lazy& l : lazy_)
      if (l.kv == it->second && !l.read) return l.count;
  }
  return kv_[it->second].second.arr.size();
}

void GgufFile::read_lazy(size_t kv) const {
  if (lazy_.empty()) return;
  std::lock_guard lock(lazy_mu_);
  for (Lazy& l : lazy_) {
    if (l.kv != kv || l.read) continue;
    Value& v = kv_[kv].second;
    Cursor cur(data_, size_, path_);
    cur.seek(l.pos);
    ParseState st{cur, path_};
    const std::string what = "metadata key " + printable_name(kv_[kv].first);
    v.arr.reserve(static_cast<size_t>(l.count));
    for (uint64_t k = 0; k < l.count; ++k) v.arr.push_back(read_value(st, v.elem_type, 1, what));
    l.read = true;
  }
}

const std::vector<std::pair<std::string, Value>>& GgufFile::metadata() const {
  for (const Lazy& l : lazy_) read_lazy(l.kv);
  return kv_;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& GgufFile::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) fail("{}: tensor {} is missing", path_, printable_name(name));
  return *t;
}

const TensorInfo& GgufFile::tensor(std::string_view name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = tensor(name);
  if (t.shape != shape)
    fail("{}: tensor {} has shape {}, expected {}", path_, printable_name(name), format_shape(t.shape),
         format_shape(shape));
  return t;
}

// ---- typed getters ----

namespace {

[[noreturn]] void wrong_type(const std::string& path, std::string_view key, const Value& v,
                             const char* expected) {
  std::string got = value_type_name(v.type);
  if (v.type == ValueType::ARRAY) got = fmt::format("array of {}", value_type_name(v.elem_type));
  fail("{}: metadata key {} has type {}, expected {}", path, printable_name(key), got, expected);
}

int64_t as_int(const std::string& path, std::string_view key, const Value& v, const char* expected) {
  if (!v.is_integer()) wrong_type(path, key, v, expected);
  if (v.type == ValueType::UINT64 && v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail("{}: metadata key {} has value {}, too large for a signed 64-bit integer", path,
         printable_name(key), v.u);
  return v.i;
}

double as_float(const std::string& path, std::string_view key, const Value& v, const char* expected) {
  if (v.type == ValueType::FLOAT32 || v.type == ValueType::FLOAT64) return v.f;
  if (v.type == ValueType::UINT64) return static_cast<double>(v.u);
  if (v.is_integer()) return static_cast<double>(v.i);
  wrong_type(path, key, v, expected);
}

}  // namespace

const Value& GgufFile::require(std::string_view key) const {
  const Value* v = find(key);
  if (!v) fail("{}: metadata key {} is missing", path_, printable_name(key));
  return *v;
}

std::string GgufFile::get_string(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::STRING) wrong_type(path_, key, v, "string");
  return v.s;
}

int64_t GgufFile::get_int(std::string_view key) const {
  return as_int(path_, key, require(key), "an integer");
}

double GgufFile::get_float(std::string_view key) const {
  return as_float(path_, key, require(key), "a number");
}

bool GgufFile::get_bool(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::BOOL) wrong_type(path_, key, v, "bool");
  return v.u != 0;
}

// NOTE: the typed array getters read an unread long array from the file bytes into their own vector:
// through the kept Values (read_lazy), Qwen3-0.6B's tokenizer (151,936 tokens, 151,387 merges, token
// types) first filled 455k Values of 88 bytes, and on these VMs faulting in that fresh memory was most of
// the time to load the tokenizer.
template <class F>
void GgufFile::for_elements(std::string_view key, bool (*ok)(ValueType), const char* expected, F&& each) const {
  auto it = kv_index_.find(key);
  if (it == kv_index_.end()) fail("{}: metadata key {} is missing", path_, printable_name(key));
  const Value& v = kv_[it->second].second;  // an unread array has its type and element type
  if (v.type != ValueType::ARRAY || !ok(v.elem_type)) wrong_type(path_, key, v, expected);
  std::optional<Lazy> unread;
  {
    std::lock_guard lock(lazy_mu_);
    for (const Lazy& l : lazy_)
      if (l.kv == it->second && !l.read) unread = l;
  }
  if (!unread) {
    for (const Value& e : v.arr) each(Value(e));
    return;
  }
  Cursor cur(data_, size_, path_);
  cur.seek(unread->pos);
  ParseState st{cur, path_};
  const std::string what = "metadata key " + printable_name(kv_[it->second].first);
  for (uint64_t k = 0; k < unread->count; ++k) each(read_value(st, v.elem_type, 1, what));
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  std::vector<std::string> out;
  out.reserve(array_size(key));
  for_elements(key, [](ValueType t) { return t == ValueType::STRING; }, "array of string",
               [&](Value&& e) { out.push_back(std::move(e.s)); });
  return out;
}

void GgufFile::for_each_string(std::string_view key, const std::function<void(std::string_view)>& each) const {
  for_elements(key, [](ValueType t) { return t == ValueType::STRING; }, "array of string",
               [&](Value&& e) { each(e.s); });
}

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
  std::vector<float> out;
  out.reserve(array_size(key));
  for_elements(key, is_number_type, "array of numbers",
               [&](Value&& e) { out.push_back(static_cast<float>(as_float(path_, key, e, "array of numbers"))); });
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  std::vector<int64_t> out;
  out.reserve(array_size(key));
  for_elements(key, is_integer_type, "array of integers",
               [&](Value&& e) { out.push_back(as_int(path_, key, e, "array of integers")); });
  return out;
}

std::optional<std::string> GgufFile::opt_string(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_string(key);
}

std::optional<int64_t> GgufFile::opt_int(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_int(key);
}

std::optional<double> GgufFile::opt_float(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_float(key);
}

std::optional<bool> GgufFile::opt_bool(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_bool(key);
}

}  // namespace ignis::gguf
