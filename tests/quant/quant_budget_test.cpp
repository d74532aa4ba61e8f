// ignis' quantizers and dot products within ggml's own error budgets (llama.cpp's
// tests/test-quantize-fns.cpp: same synthetic data 0.1 + 2 cos(i + offset), n = 4096, the same metrics:
// sqrt(sum of squared errors) / n < 0.002 after a quantize/dequantize round trip, and
// |vec_dot - f32 dot| / n < 0.02 for the quantized weight against the converted activation).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/dtype.h"

namespace ignis {
namespace {

constexpr int64_t kN = 32 * 128;
constexpr float kMaxQuantizationError = 0.002f;
constexpr float kMaxDotProductError = 0.02f;

std::vector<float> synthetic(float offset) {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = 0.1f + 2 * std::cos(static_cast<float>(i) + offset);
  return v;
}

class QuantBudget : public ::testing::TestWithParam<DType> {};

TEST_P(QuantBudget, RoundTripErrorWithinGgmlBudget) {
  const DTypeTraits* tr = dtype_traits(GetParam());
  const auto x = synthetic(0.0f);
  std::vector<uint8_t> q(row_bytes(tr->type, kN));
  std::vector<float> back(kN);
  tr->from_float(x.data(), q.data(), kN);
  tr->to_float(q.data(), back.data(), kN);
  double sum = 0;
  for (int64_t i = 0; i < kN; ++i) sum += (double{x[i]} - back[i]) * (double{x[i]} - back[i]);
  const float err = static_cast<float>(std::sqrt(sum) / kN);
  EXPECT_LT(err, kMaxQuantizationError) << tr->name;
  if (tr->is_quantized) {
    EXPECT_GT(err, 0.0f) << tr->name << ": a lossy type cannot be exact on this data";
  }
}

TEST_P(QuantBudget, DotProductErrorWithinGgmlBudget) {
  const DTypeTraits* tr = dtype_traits(GetParam());
  const DTypeTraits* vt = dtype_traits(tr->vec_dot_type);
  const auto a = synthetic(0.0f), b = synthetic(1.0f);
  std::vector<uint8_t> qa(row_bytes(tr->type, kN)), qb(row_bytes(vt->type, kN));
  tr->from_float(a.data(), qa.data(), kN);
  vt->from_float(b.data(), qb.data(), kN);
  double ref = 0;
  for (int64_t i = 0; i < kN; ++i) ref += double{a[i]} * b[i];
  for (int isa = 0; isa <= 2; ++isa) {
    const cpu::VecDotFn dot = cpu::find_vec_dot(tr->type, static_cast<cpu::Isa>(isa));
    if (!dot) continue;
    const float got = dot(kN, qa.data(), qb.data());
    EXPECT_LT(std::fabs(got - ref) / kN, kMaxDotProductError)
        << tr->name << " " << cpu::isa_label(static_cast<cpu::Isa>(isa)) << ": " << got << " vs " << ref;
  }
}

INSTANTIATE_TEST_SUITE_P(Quantizers, QuantBudget,
                         ::testing::Values(DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                                           DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace ignis
