// Safetensors reader. See safetensors.h.

#include "format/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fp16.h"

namespace ignis::st {

namespace {

// A header larger than this is refused before it is parsed (the reference library's limit too).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr size_t kMaxDims = 8;

bool parse_dtype(const std::string& s, StDType* t) {
  if (s == "F32") *t = StDType::F32;
  else if (s == "F16") *t = StDType::F16;
  else if (s == "BF16") *t = StDType::BF16;
  else return false;
  return true;
}

bool known_other_dtype(const std::string& s) {
  static const std::set<std::string> k = {"F64", "I64", "I32", "I16", "I8", "U64", "U32", "U16",
                                          "U8", "BOOL", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3",
                                          "F6_E3M2", "C64"};
  return k.count(s) > 0;
}

}  // namespace

const char* st_dtype_name(StDType t) {
  switch (t) {
    case StDType::F32: return "F32";
    case StDType::F16: return "F16";
    case StDType::BF16: return "BF16";
  }
  return "?";
}

size_t st_dtype_size(StDType t) { return t == StDType::F32 ? 4 : 2; }

int64_t StTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void StTensor::to_f32(float* out) const {
  const int64_t n = n_elements();
  switch (dtype) {
    case StDType::F32:
      std::memcpy(out, data, static_cast<size_t>(n) * 4);
      break;
    case StDType::F16: {
      const auto* p = static_cast<const uint8_t*>(data);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      break;
    }
    case StDType::BF16: {
      const auto* p = static_cast<const uint8_t*>(data);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = bf16_to_f32(h);
      }
      break;
    }
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) munmap(map_, map_size_);
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file", path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    fail("{}: file has {} bytes, too short for a safetensors header", path, size);
  }
  void* m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) fail("{}: cannot map: {}", path, std::strerror(errno));
  f->map_ = m;
  f->map_size_ = size;
  f->parse(static_cast<const uint8_t*>(m), size);
  return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::from_memory(const void* data, size_t size,
                                                              const std::string& name) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = name;
  f->owned_.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size);
  f->parse(f->owned_.data(), f->owned_.size());
  return f;
}

// NOTE: every number in the header is untrusted. The header length is checked against the file before
// the JSON is parsed; each tensor's byte length is computed with overflow checks and must equal
// data_offsets' span; spans must lie inside the data section and must not overlap (sorted by begin).
// After parse() succeeds every tensor's bytes are readable.
void SafetensorsFile::parse(const uint8_t* data, size_t size) {
  const std::string& p = path_;
  if (size < 8) fail("{}: file has {} bytes, too short for a safetensors header", p, size);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | data[i];
  if (hlen > kMaxHeaderBytes) fail("{}: header length {} exceeds the limit of {} bytes", p, hlen, kMaxHeaderBytes);
  if (hlen > size - 8) fail("{}: header length {} exceeds the file size {}", p, hlen, size);
  const uint64_t data_start = 8 + hlen;
  const uint64_t data_size = size - data_start;
  nlohmann::json h;
  // nlohmann keeps the last of duplicate keys; a tensor named twice must be an error, not a lost tensor.
  std::set<std::string> seen;
  std::string duplicate;
  auto on_key = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    if (ev == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    h = nlohmann::json::parse(data + 8, data + 8 + hlen, on_key);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    fail("{}: header is not valid JSON: {}", p, msg.substr(0, 200));
  }
  if (!duplicate.empty()) fail("{}: tensor {} appears twice in the header", p, duplicate);
  if (!h.is_object()) fail("{}: header is not a JSON object", p);
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail("{}: __metadata__ is not an object", p);
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) fail("{}: __metadata__ value {} is not a string", p, m.key());
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (name.empty()) fail("{}: a tensor has an empty name", p);
    if (!v.is_object()) fail("{}: tensor {} is not a JSON object", p, name);
    StTensor t;
    t.name = name;
    auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) fail("{}: tensor {} has no dtype string", p, name);
    const std::string ds = dt->get<std::string>();
    if (!parse_dtype(ds, &t.dtype)) {
      if (known_other_dtype(ds)) fail("{}: tensor {} has dtype {}, which is not supported (F32, F16, BF16)", p, name, ds);
      fail("{}: tensor {} has unknown dtype {}", p, name, ds);
    }
    auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) fail("{}: tensor {} has no shape array", p, name);
    if (sh->size() > kMaxDims) fail("{}: tensor {} has {} dims, at most {} are allowed", p, name, sh->size(), kMaxDims);
    uint64_t n_el = 1;
    bool overflow = false;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned()) fail("{}: tensor {} has a shape entry that is not a non-negative integer", p, name);
      uint64_t dv = d.get<uint64_t>();
      if (dv > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      t.shape.push_back(static_cast<int64_t>(dv));
      if (dv != 0 && n_el > std::numeric_limits<uint64_t>::max() / dv) overflow = true;
      n_el *= dv;
    }
    const uint64_t es = st_dtype_size(t.dtype);
    if (overflow || n_el > std::numeric_limits<uint64_t>::max() / es)
      fail("{}: tensor {} has shape [{}] whose byte size overflows", p, name, fmt::join(t.shape, ", "));
    auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      fail("{}: tensor {} has no data_offsets [begin, end] of non-negative integers", p, name);
    const uint64_t b = (*off)[0].get<uint64_t>(), e = (*off)[1].get<uint64_t>();
    if (b > e) fail("{}: tensor {} has data_offsets [{}, {}] with begin after end", p, name, b, e);
    if (e > data_size)
      fail("{}: tensor {} has data_offsets [{}, {}] beyond the data section of {} bytes", p, name, b, e, data_size);
    if (e - b != n_el * es)
      fail("{}: tensor {} has {} bytes in data_offsets but dtype {} x shape [{}] needs {}", p, name, e - b, ds,
           fmt::join(t.shape, ", "), n_el * es);
    t.offset = b;
    t.n_bytes = static_cast<size_t>(e - b);
    t.data = data + data_start + b;
    tensors_.push_back(std::move(t));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.n_bytes < b.n_bytes;
  });
  for (size_t i = 1; i < tensors_.size(); ++i) {
    const StTensor& a = tensors_[i - 1];
    const StTensor& b = tensors_[i];
    if (b.offset < a.offset + a.n_bytes)
      fail("{}: tensor {} overlaps tensor {} in the data section", p, b.name, a.name);
  }
  for (size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;
}

const StTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

// --- sharded sets -------------------------------------------------------------------------------

std::unique_ptr<SafetensorsSet> SafetensorsSet::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  auto set = std::make_unique<SafetensorsSet>();
  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single = dir + "/model.safetensors";
  if (fs::exists(index_path)) {
    set->source_ = index_path;
    std::ifstream in(index_path);
    if (!in) fail("{}: cannot open", index_path);
    nlohmann::json j;
    try {
      in >> j;
    } catch (const std::exception& e) {
      std::string msg = e.what();
      fail("{}: invalid JSON: {}", index_path, msg.substr(0, 200));
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail("{}: weight_map is missing or not an object", index_path);
    std::map<std::string, std::string> wanted;  // tensor -> shard
    std::set<std::string> shards;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) fail("{}: weight_map entry {} is not a string", index_path, it.key());
      std::string shard = it.value().get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
        fail("{}: weight_map entry {} names shard \"{}\", which is not a file name in the folder", index_path,
             it.key(), shard);
      wanted[it.key()] = shard;
      shards.insert(shard);
    }
    if (wanted.empty()) fail("{}: weight_map lists no tensors", index_path);
    std::map<std::string, const SafetensorsFile*> by_shard;
    for (const auto& s : shards) {
      set->files_.push_back(SafetensorsFile::open(dir + "/" + s));
      by_shard[s] = set->files_.back().get();
    }
    for (const auto& [name, shard] : wanted) {
      const StTensor* t = by_shard[shard]->find(name);
      if (!t) fail("{}/{}: tensor {} is missing (listed in model.safetensors.index.json)", dir, shard, name);
      set->by_name_[name] = t;
    }
    for (const auto& f : set->files_)
      for (const auto& t : f->tensors()) {
        auto it = set->by_name_.find(t.name);
        if (it == set->by_name_.end())
          fail("{}: tensor {} is not listed in model.safetensors.index.json", f->path(), t.name);
        if (it->second != &t) fail("{}: tensor {} is also in another shard", f->path(), t.name);
      }
    return set;
  }
  if (!fs::exists(single)) fail("{}: no model.safetensors or model.safetensors.index.json", dir);
  set->source_ = single;
  set->files_.push_back(SafetensorsFile::open(single));
  for (const auto& t : set->files_[0]->tensors()) set->by_name_[t.name] = &t;
  return set;
}

const StTensor* SafetensorsSet::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const StTensor& SafetensorsSet::tensor(std::string_view name) const {
  const StTensor* t = find(name);
  if (!t) fail("{}: tensor {} is missing", source_, name);
  return *t;
}

const StTensor& SafetensorsSet::tensor(std::string_view name, const std::vector<int64_t>& shape) const {
  const StTensor& t = tensor(name);
  if (t.shape != shape)
    fail("{}: tensor {} has shape [{}], expected [{}]", source_, name, fmt::join(t.shape, ", "),
         fmt::join(shape, ", "));
  return t;
}

std::vector<std::string> SafetensorsSet::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : by_name_) out.push_back(n);
  return out;
}

}  // namespace ignis::st
