// Safetensors files: a validated, memory-mapped reader, single files and sharded checkpoints.
//
// SafetensorsFile::open maps a .safetensors file read-only and validates its header the way GgufFile
// validates GGUF (see safetensors.cpp NOTE): header length within the file, valid JSON object, every
// tensor with a known dtype, a shape of non-negative dims, data_offsets inside the data section whose
// length equals dtype size x element count (no overflow), tensors not overlapping. Any problem throws
// ignis::Error with one line naming the file, the tensor and what is wrong. Only F32, F16 and BF16
// tensors are accepted (the dtypes of Hugging Face LLM checkpoints); others are refused by name.
// SafetensorsSet opens a Hugging Face folder's weights: model.safetensors, or every shard listed by
// model.safetensors.index.json, and looks tensors up by name across shards.
// Both are immutable after open(): all const methods are thread-safe. Tensor data pointers stay valid
// for the lifetime of the object that returned them.
//
// Shapes are in PyTorch order: shape[0] is the outermost dimension, the last one is contiguous.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ignis::st {

enum class StDType { F32, F16, BF16 };
const char* st_dtype_name(StDType t);
size_t st_dtype_size(StDType t);

struct StTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;  // PyTorch order; empty for a scalar
  uint64_t offset = 0;         // relative to the data section
  size_t n_bytes = 0;
  const void* data = nullptr;  // into the mapping
  int64_t n_elements() const;
  // Converts all elements to f32 into `out` (n_elements() floats).
  void to_f32(float* out) const;
};

class SafetensorsFile {
 public:
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  // Same over caller-owned bytes (tests); `name` is used in messages. The bytes are copied.
  static std::unique_ptr<SafetensorsFile> from_memory(const void* data, size_t size, const std::string& name);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // Tensors sorted by offset.
  const std::vector<StTensor>& tensors() const { return tensors_; }
  const StTensor* find(std::string_view name) const;
  // The optional "__metadata__" string map.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  void parse(const uint8_t* data, size_t size);

  std::string path_;
  std::vector<StTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<uint8_t> owned_;
};

// The weights of a Hugging Face folder.
class SafetensorsSet {
 public:
  // `dir` holds model.safetensors.index.json (shards named in its weight_map, all in `dir`) or
  // model.safetensors. Throws Error naming the file and the problem; a tensor listed in the index
  // but absent from its shard, or present in two shards, is an error.
  static std::unique_ptr<SafetensorsSet> open_dir(const std::string& dir);

  const StTensor* find(std::string_view name) const;
  // Throws "<file>: tensor <name> is missing" / "... has shape [..], expected [..]".
  const StTensor& tensor(std::string_view name) const;
  const StTensor& tensor(std::string_view name, const std::vector<int64_t>& shape) const;
  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  // Where tensors come from (the index or the single file), for messages.
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const StTensor*, std::less<>> by_name_;
};

}  // namespace ignis::st
