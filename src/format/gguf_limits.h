// Limits and message helpers shared by the GGUF reader and writer (internal to src/format).
//
// The limits keep a hostile file from causing huge allocations or deep recursion: every count is
// also bounded by the bytes left in the file before anything is allocated. Pure functions:
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ignis::gguf {

constexpr uint32_t kMaxDims = 4;             // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;            // arrays of arrays of ... (real files use 1 level)
constexpr uint32_t kMaxAlignment = 1u << 20; // larger than any page size in use
// Total array elements in one file's metadata. A parsed element costs ~90 bytes, so this caps the
// metadata at ~750 MB even for a hostile file; the largest real vocabularies (262k tokens with
// scores, types and merges) need under 1.5M.
constexpr uint64_t kMaxArrayElements = uint64_t{1} << 23;
// Keys and tensors per file: real files have under 100 keys and under 100k tensors; the limits keep
// a hostile count (also bounded by the file size) from costing more than ~200 MB of index.
constexpr uint64_t kMaxKeys = uint64_t{1} << 20;
constexpr uint64_t kMaxTensors = uint64_t{1} << 20;
constexpr size_t kMaxNameInMessage = 120;    // longer key/tensor names are cut in error messages

// `s` with control bytes escaped (\x0a) and cut to kMaxNameInMessage, so messages stay one line.
std::string printable_name(std::string_view s);
// "[64, 512]"
std::string format_shape(const std::vector<int64_t>& shape);

}  // namespace ignis::gguf
