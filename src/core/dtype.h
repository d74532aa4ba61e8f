// Tensor element types and their traits (GUIDE.md section 3: quant types are data).
//
// DType values are ggml's type ids, so a GGUF tensor's type field maps directly. Every type ignis
// knows has one row in the traits table: its name, block size (elements per block), bytes per block,
// the scalar reference to_float / from_float, and the type activations are converted to for its dot
// product (vec_dot_type). ISA-specific kernels live in backend/cpu and are keyed by the same DType.
// The table is immutable after static initialisation: all functions here are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ignis {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

// n elements (a multiple of block_size) of this type -> f32. `src` points at whole blocks.
using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
// n f32 elements (a multiple of block_size) -> this type, reference quantization (ggml's _ref).
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);

struct DTypeTraits {
  DType type;
  const char* name;        // ggml's name: "f32", "q4_0", "q4_K", ...
  int64_t block_size;      // elements per block (1 for plain types)
  size_t block_bytes;      // bytes per block
  bool is_quantized;
  ToFloatFn to_float;      // nullptr for types that cannot be converted (I8..I64)
  FromFloatFn from_float;  // nullptr where ignis has no quantizer for the type
  DType vec_dot_type;      // activation type the dot product consumes
};

// The row for `t`, or nullptr when ignis does not know the type (e.g. an id from a newer ggml).
const DTypeTraits* dtype_traits(DType t);
// Same, for a raw type id read from a file.
const DTypeTraits* dtype_traits(uint32_t raw_type_id);
// "q4_K" -> DType (case-insensitive); nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);
const char* dtype_name(DType t);

// Bytes of a row of n elements; n must be a multiple of the block size (callers validate first).
size_t row_bytes(DType t, int64_t n);

}  // namespace ignis
