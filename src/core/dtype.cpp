// The dtype traits table. Block geometry follows ggml's definitions exactly (QK_K = 256).
// to_float / from_float point at the scalar reference implementations in core/quants.cpp.
#include "core/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "core/quants.h"

namespace ignis {
namespace {

constexpr int64_t kQK = 32;
constexpr int64_t kQKK = 256;

const std::array<DTypeTraits, 20>& table() {
  static const std::array<DTypeTraits, 20> t = {{
      {DType::F32, "f32", 1, 4, false, quants::to_float_f32, quants::from_float_f32, DType::F32},
      {DType::F16, "f16", 1, 2, false, quants::to_float_f16, quants::from_float_f16, DType::F16},
      {DType::BF16, "bf16", 1, 2, false, quants::to_float_bf16, quants::from_float_bf16, DType::BF16},
      {DType::Q4_0, "q4_0", kQK, 18, true, quants::to_float_q4_0, quants::from_float_q4_0, DType::Q8_0},
      {DType::Q4_1, "q4_1", kQK, 20, true, quants::to_float_q4_1, quants::from_float_q4_1, DType::Q8_1},
      {DType::Q5_0, "q5_0", kQK, 22, true, quants::to_float_q5_0, quants::from_float_q5_0, DType::Q8_0},
      {DType::Q5_1, "q5_1", kQK, 24, true, quants::to_float_q5_1, quants::from_float_q5_1, DType::Q8_1},
      {DType::Q8_0, "q8_0", kQK, 34, true, quants::to_float_q8_0, quants::from_float_q8_0, DType::Q8_0},
      {DType::Q8_1, "q8_1", kQK, 36, true, nullptr, quants::from_float_q8_1, DType::Q8_1},
      {DType::Q2_K, "q2_K", kQKK, 84, true, quants::to_float_q2_k, nullptr, DType::Q8_K},
      {DType::Q3_K, "q3_K", kQKK, 110, true, quants::to_float_q3_k, nullptr, DType::Q8_K},
      {DType::Q4_K, "q4_K", kQKK, 144, true, quants::to_float_q4_k, quants::from_float_q4_k, DType::Q8_K},
      {DType::Q5_K, "q5_K", kQKK, 176, true, quants::to_float_q5_k, quants::from_float_q5_k, DType::Q8_K},
      {DType::Q6_K, "q6_K", kQKK, 210, true, quants::to_float_q6_k, quants::from_float_q6_k, DType::Q8_K},
      {DType::Q8_K, "q8_K", kQKK, 292, true, nullptr, quants::from_float_q8_k, DType::Q8_K},
      {DType::I8, "i8", 1, 1, false, nullptr, nullptr, DType::I8},
      {DType::I16, "i16", 1, 2, false, nullptr, nullptr, DType::I16},
      {DType::I32, "i32", 1, 4, false, nullptr, nullptr, DType::I32},
      {DType::I64, "i64", 1, 8, false, nullptr, nullptr, DType::I64},
      {DType::F64, "f64", 1, 8, false, nullptr, nullptr, DType::F64},
  }};
  return t;
}

}  // namespace

const DTypeTraits* dtype_traits(DType t) { return dtype_traits(static_cast<uint32_t>(t)); }

const DTypeTraits* dtype_traits(uint32_t raw) {
  for (const auto& row : table())
    if (static_cast<uint32_t>(row.type) == raw) return &row;
  return nullptr;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  auto lower = [](std::string_view s) {
    std::string r(s);
    std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return std::tolower(c); });
    return r;
  };
  const std::string want = lower(name);
  for (const auto& row : table())
    if (lower(row.name) == want) return row.type;
  return std::nullopt;
}

const char* dtype_name(DType t) {
  const DTypeTraits* tr = dtype_traits(t);
  return tr ? tr->name : "unknown";
}

size_t row_bytes(DType t, int64_t n) {
  const DTypeTraits* tr = dtype_traits(t);
  return static_cast<size_t>(n / tr->block_size) * tr->block_bytes;
}

}  // namespace ignis
