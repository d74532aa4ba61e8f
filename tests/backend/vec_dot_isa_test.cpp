// Every SIMD vec_dot kernel (AVX2, AVX-512) against its scalar twin, per type and length, on random data
// with fixed seeds. Lengths cover one block, odd block counts (tails of the unrolled loops) and, for the
// float types, lengths that are not multiples of the vector width.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/dtype.h"

namespace ignis::cpu {
namespace {

constexpr int64_t kQKK_test = 256;

struct Case {
  DType type;
  std::vector<int64_t> lengths;
};

std::vector<float> random_row(std::mt19937& rng, int64_t n, int style) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (style % 3) {
      case 0: v[i] = g(rng); break;
      case 1: v[i] = 0.05f * g(rng) * (i % 17 == 0 ? 20.0f : 1.0f); break;  // outliers
      default: v[i] = 0.2f + u(rng); break;                                 // all positive
    }
  }
  return v;
}

// ignis has no Q2_K / Q3_K quantizer: their test blocks are random bytes with small finite f16 scales
// (every bit pattern of the quants and scale fields is a valid block).
std::vector<uint8_t> random_lowbit_blocks(DType t, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(row_bytes(t, n));
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  const size_t bb = dtype_traits(t)->block_bytes;
  for (size_t off = 0; off < out.size(); off += bb) {
    // d (and dmin) are the last f16 fields of both layouts: 0x2000..0x2fff is roughly 2^-7..2^-4.
    const size_t n_half = t == DType::Q2_K ? 2 : 1;
    for (size_t h = 0; h < n_half; ++h) {
      const uint16_t v = static_cast<uint16_t>(0x2000 | (rng() & 0x0fff));
      std::memcpy(&out[off + bb - 2 * (n_half - h)], &v, 2);
    }
  }
  return out;
}

std::vector<uint8_t> convert(DType t, const std::vector<float>& v) {
  const DTypeTraits* tr = dtype_traits(t);
  if (!tr->from_float) return random_lowbit_blocks(t, static_cast<int64_t>(v.size()), static_cast<uint32_t>(v.size()));
  std::vector<uint8_t> out(row_bytes(t, static_cast<int64_t>(v.size())));
  tr->from_float(v.data(), out.data(), static_cast<int64_t>(v.size()));
  return out;
}

// Sum of |w_i x_i| with w from the blocks (the budget scale for the float-order differences).
double abs_dot(DType t, const std::vector<uint8_t>& w, const std::vector<float>& xf) {
  std::vector<float> wd(xf.size());
  dtype_traits(t)->to_float(w.data(), wd.data(), static_cast<int64_t>(xf.size()));
  double s = 0;
  for (size_t i = 0; i < xf.size(); ++i) s += std::fabs(double{wd[i]} * xf[i]);
  return s;
}

class VecDotIsa : public ::testing::TestWithParam<DType> {};

TEST_P(VecDotIsa, SimdMatchesScalarTwin) {
  const DType t = GetParam();
  const DTypeTraits* tr = dtype_traits(t);
  const VecDotFn ref = find_vec_dot(t, Isa::kScalar);
  ASSERT_NE(ref, nullptr);
  std::vector<int64_t> lengths;
  if (tr->block_size == 1) {
    lengths = {1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 896, 1000};
  } else {
    for (int64_t nb : {1, 2, 3, 7, 28}) lengths.push_back(nb * tr->block_size);
  }
  int checked_isas = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    const VecDotFn simd = find_vec_dot(t, isa);
    ASSERT_NE(simd, nullptr) << tr->name << " has no " << isa_label(isa) << " kernel";
    ++checked_isas;
    std::mt19937 rng(1234 + static_cast<int>(t));
    for (int64_t n : lengths) {
      for (int style = 0; style < 3; ++style) {
        const auto wf = random_row(rng, n, style);
        const auto xf = random_row(rng, n, style + 1);
        const auto w = convert(t, wf);
        const auto x = convert(tr->vec_dot_type, xf);
        const double abs_sum = abs_dot(t, w, xf);
        const float want = ref(n, w.data(), x.data());
        const float got = simd(n, w.data(), x.data());
        // Same integers, different float summation order (and, for bf16, f32 pair sums).
        EXPECT_NEAR(got, want, 1e-5 * 2 * abs_sum + 1e-6)
            << tr->name << " " << isa_label(isa) << " n=" << n << " style=" << style;
        // Not identical by construction: the kernels must actually use the data.
        EXPECT_TRUE(std::isfinite(got));
      }
    }
  }
  if (checked_isas == 0) GTEST_SKIP() << "CPU has no SIMD ISA ignis supports";
}

// A SIMD kernel that ignores part of its input would still match on tiny data by luck; flipping one
// weight block must change the result the same way in both twins.
TEST_P(VecDotIsa, SimdSeesEveryBlock) {
  const DType t = GetParam();
  const DTypeTraits* tr = dtype_traits(t);
  const int64_t n = 5 * tr->block_size * (tr->block_size == 1 ? 37 : 1);
  std::mt19937 rng(99);
  const auto wf = random_row(rng, n, 0);
  const auto xf = random_row(rng, n, 0);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    const VecDotFn simd = find_vec_dot(t, isa);
    if (!simd) continue;
    const VecDotFn ref = find_vec_dot(t, Isa::kScalar);
    for (int64_t at = 0; at < n; at += std::max<int64_t>(1, n / 5)) {
      auto wf2 = wf;
      wf2[at] += 50.0f;  // a large change confined to one block
      const auto w = convert(t, wf2);
      const auto x = convert(tr->vec_dot_type, xf);
      const float want = ref(n, w.data(), x.data());
      const float got = simd(n, w.data(), x.data());
      EXPECT_NEAR(got, want, 1e-4 * (std::fabs(want) + 60.0f)) << tr->name << " " << isa_label(isa) << " at=" << at;
    }
  }
}

// Multi-token kernels: per token, bit-identical to the same ISA's single-row kernel and close to the
// scalar twin. Activation rows are spaced with padding to check the stride is honoured.
class VecDotMulti : public ::testing::TestWithParam<DType> {};

TEST_P(VecDotMulti, MatchesSingleAndScalar) {
  const DType t = GetParam();
  const DTypeTraits* tr = dtype_traits(t);
  const DTypeTraits* vt = dtype_traits(tr->vec_dot_type);
  int checked = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (isa == Isa::kScalar || !isa_supported(isa)) continue;
    const VecDotEntry* k = find_kernels(t, isa);
    ASSERT_TRUE(k && k->vec_dot_multi) << tr->name << " has no " << isa_label(isa) << " multi-token kernel";
    ++checked;
    std::mt19937 rng(4321 + static_cast<int>(t));
    const std::vector<int64_t> counts =
        tr->block_size == 1 ? std::vector<int64_t>{1, 7, 17, 33, 70, 1000} : std::vector<int64_t>{1, 3, 8};
    for (int64_t nb : counts) {
      const int64_t n = nb * tr->block_size;
      const auto wf = random_row(rng, n, 0);
      const auto w = convert(t, wf);
      const size_t stride = row_bytes(vt->type, n) + 64;
      std::vector<uint8_t> x(stride * kDotTokens);
      std::vector<std::vector<float>> xf;
      for (int j = 0; j < kDotTokens; ++j) {
        xf.push_back(random_row(rng, n, j));
        const auto xq = convert(vt->type, xf.back());
        std::copy(xq.begin(), xq.end(), x.begin() + j * stride);
      }
      float out[kDotTokens];
      k->vec_dot_multi(n, w.data(), x.data(), stride, out);
      for (int j = 0; j < kDotTokens; ++j) {
        const uint8_t* xj = x.data() + j * stride;
        EXPECT_EQ(out[j], k->vec_dot(n, w.data(), xj)) << tr->name << " " << isa_label(isa) << " token " << j;
        const double abs_sum = abs_dot(t, w, xf[j]);
        EXPECT_NEAR(out[j], find_vec_dot(t, Isa::kScalar)(n, w.data(), xj), 2e-5 * abs_sum + 1e-6)
            << tr->name << " " << isa_label(isa) << " token " << j;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "CPU has no SIMD ISA ignis supports";
}

INSTANTIATE_TEST_SUITE_P(MultiTokenTypes, VecDotMulti,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1,
                                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

INSTANTIATE_TEST_SUITE_P(CommonTypes, VecDotIsa,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1,
                                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// SIMD activation converters must produce the scalar reference's bytes exactly (matmul may use either).
class ActQuantIsa : public ::testing::TestWithParam<DType> {};

TEST_P(ActQuantIsa, SimdIsByteExactTwinOfScalar) {
  const DType act = GetParam();
  const DTypeTraits* tr = dtype_traits(act);
  std::vector<std::vector<float>> rows;
  std::mt19937 rng(555 + static_cast<int>(act));
  for (int style = 0; style < 6; ++style) rows.push_back(random_row(rng, 4 * kQKK_test, style));
  // Exact halves after scaling (amax 127 -> d = 1 -> quants are round(x)), zeros, and +-amax ties where
  // the first maximal element is negative (Q8_K takes the sign of the first one).
  std::vector<float> ties(4 * kQKK_test, 0.0f);
  for (size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<float>(static_cast<int>(i % 255) - 127) * 0.5f;
  for (size_t b = 0; b < ties.size(); b += 32) ties[b] = 127.0f;
  rows.push_back(ties);
  std::vector<float> mixed(4 * kQKK_test, 0.0f);  // block 0 all zero
  for (size_t i = kQKK_test; i < mixed.size(); ++i) mixed[i] = std::sin(static_cast<float>(i));
  mixed[kQKK_test + 3] = -5.0f;
  mixed[kQKK_test + 9] = 5.0f;
  rows.push_back(mixed);
  int checked = 0;
  const FromFloatFn scalar = find_act_quantizer(act, Isa::kScalar);
  ASSERT_NE(scalar, nullptr) << tr->name;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    const FromFloatFn simd = find_act_quantizer(act, isa);
    ASSERT_NE(simd, nullptr) << tr->name << " " << isa_label(isa);
    ++checked;
    for (size_t r = 0; r < rows.size(); ++r) {
      const int64_t n = static_cast<int64_t>(rows[r].size());
      std::vector<uint8_t> want(row_bytes(act, n), 0x11), got(row_bytes(act, n), 0x22);
      scalar(rows[r].data(), want.data(), n);
      simd(rows[r].data(), got.data(), n);
      EXPECT_EQ(got, want) << tr->name << " " << isa_label(isa) << " row " << r;
    }
  }
  if (checked == 0) GTEST_SKIP() << "CPU has no SIMD ISA ignis supports";
}

INSTANTIATE_TEST_SUITE_P(ActivationTypes, ActQuantIsa, ::testing::Values(DType::Q8_0, DType::Q8_1, DType::Q8_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Dispatch, BestIsaHasKernelsForCommonTypes) {
  for (DType t : {DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q2_K, DType::Q3_K, DType::F32}) {
    EXPECT_NE(best_vec_dot(t), nullptr) << dtype_name(t);
    EXPECT_NE(find_vec_dot(t, Isa::kScalar), nullptr) << dtype_name(t);
  }
  EXPECT_EQ(best_vec_dot(DType::I32), nullptr);
}

}  // namespace
}  // namespace ignis::cpu
