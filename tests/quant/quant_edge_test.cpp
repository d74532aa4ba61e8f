// Edge cases of the scalar conversions, with expectations from the IEEE-754 / C definitions
// (independent of ignis): f16 / bf16 rounding, overflow, subnormals and NaN; roundf-style halves in
// Q8_0 / Q8_1; all-zero blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/fp16.h"
#include "core/quant_blocks.h"

namespace ignis {
namespace {

TEST(Fp16, RoundsToNearestEvenAndSaturatesToInf) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // below the halfway point to 65536
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // halfway, ties to even = inf
  EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1). 1 + 3 * 2^-11 -> 1 + 2^-9.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(Fp16, SubnormalsAndNan) {
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);      // tie -> even (0)
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie -> even (2)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);      // smallest normal
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::quiet_NaN()) & 0x7e00, 0x7e00);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e01)));
  // Every finite half survives a round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(Bf16, RoundsToNearestEvenAndQuietsNan) {
  auto from_bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7f800001u)), 0x7fc0);  // signalling NaN comes back quiet
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
}

TEST(Q8, HalvesRoundAwayFromZeroLikeRoundf) {
  // amax = 127 gives d = 1 exactly, so the quants are roundf(x).
  std::vector<float> x(kQK, 0.0f);
  const float vals[] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 126.5f, -126.5f, 1.4999999f, 3.5f, -0.49999997f};
  std::copy(std::begin(vals), std::end(vals), x.begin());
  BlockQ8_0 b0;
  dtype_traits(DType::Q8_0)->from_float(x.data(), &b0, kQK);
  EXPECT_EQ(f16_to_f32(b0.d), 1.0f);
  const int want[] = {127, 3, -3, 1, -1, 127, -127, 1, 4, 0};
  for (int j = 0; j < 10; ++j) EXPECT_EQ(b0.qs[j], want[j]) << "x=" << vals[j];
  BlockQ8_1 b1;
  dtype_traits(DType::Q8_1)->from_float(x.data(), &b1, kQK);
  int sum = 0;
  for (int j = 0; j < 10; ++j) {
    EXPECT_EQ(b1.qs[j], want[j]) << "x=" << vals[j];
    sum += want[j];
  }
  EXPECT_EQ(f16_to_f32(b1.s), static_cast<float>(sum));
}

TEST(Quantizers, ZeroBlocksDecodeToZero) {
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K,
                  DType::Q6_K}) {
    const DTypeTraits* tr = dtype_traits(t);
    std::vector<float> x(kQKK, 0.0f), back(kQKK, 1.0f);
    std::vector<uint8_t> q(row_bytes(t, kQKK), 0xAA);
    tr->from_float(x.data(), q.data(), kQKK);
    tr->to_float(q.data(), back.data(), kQKK);
    for (int i = 0; i < kQKK; ++i) ASSERT_EQ(back[i], 0.0f) << tr->name << " at " << i;
  }
}

}  // namespace
}  // namespace ignis
