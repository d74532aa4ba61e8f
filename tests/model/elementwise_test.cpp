// The row kernels of elementwise_kernel.h (RMSNorm, SwiGLU, RoPE, f16 rounding), portable, AVX2 and
// AVX-512, against their formulas evaluated in double on random rows whose lengths leave vector tails
// (f16: the nearest half, ties to even, from the half's bits decoded here); and the accuracy
// of the vector exponentials (exp512 of vec_math_avx512.h, the AVX2 kernels' exp256).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "model/elementwise_kernel.h"

namespace ignis::model {
namespace {

constexpr double kFloatEps = 1.0 / (1 << 23);  // 2^-23: one ulp of 1.0f

std::vector<float> randn(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct KernelSet {
  std::string name;
  const ElementwiseKernels* k;
};

// The portable kernels, and the AVX2 and AVX-512 ones when this CPU has them.
std::vector<KernelSet> kernel_sets() {
  std::vector<KernelSet> sets = {{"portable", &elementwise_kernels_portable()}};
  if (elementwise_avx2_supported()) sets.push_back({"avx2", &elementwise_kernels_avx2()});
  if (elementwise_avx512_supported()) sets.push_back({"avx512", &elementwise_kernels_avx512()});
  return sets;
}

const std::vector<int64_t> kSizes = {1, 3, 15, 16, 17, 37, 64, 100, 896, 1001};

// The set the model runs stays under IGNIS_ISA as the products do: model_avx2 runs this binary with
// IGNIS_ISA=avx2, and its model and golden tests then take the AVX2 kernels end to end.
TEST(ElementwiseKernels, ChoiceStaysUnderTheIsaCap) {
  const cpu::Isa cap = cpu::isa_cap();
  const ElementwiseKernels* want = &elementwise_kernels_portable();
  if (cap >= cpu::Isa::kAvx2 && elementwise_avx2_supported()) want = &elementwise_kernels_avx2();
  if (cap >= cpu::Isa::kAvx512 && elementwise_avx512_supported()) want = &elementwise_kernels_avx512();
  EXPECT_EQ(&elementwise_kernels(), want);
  const char* env = std::getenv("IGNIS_ISA");
  if (env && std::string(env) == "avx2") {
    EXPECT_EQ(cap, cpu::Isa::kAvx2);
    EXPECT_NE(&elementwise_kernels(), &elementwise_kernels_avx512());
  }
  if (env && std::string(env) == "scalar") {
    EXPECT_EQ(&elementwise_kernels(), &elementwise_kernels_portable());
  }
}

TEST(ElementwiseKernels, RmsNormMatchesFormula) {
  for (const KernelSet& ks : kernel_sets()) {
    for (const int64_t n : kSizes) {
      const std::vector<float> x = randn(n, 1 + n, 3.0f), w = randn(n, 2 + n);
      std::vector<float> y(n), y_inplace = x;
      ks.k->rms_norm_row(x.data(), w.data(), n, 1e-5f, y.data());
      ks.k->rms_norm_row(y_inplace.data(), w.data(), n, 1e-5f, y_inplace.data());
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
      const double scale = 1.0 / std::sqrt(ss / n + 1e-5);
      for (int64_t i = 0; i < n; ++i) {
        // The scale and two products each round once.
        const double ref = x[i] * scale * w[i];
        EXPECT_NEAR(y[i], ref, 3 * kFloatEps * std::fabs(ref)) << ks.name << " n=" << n << " i=" << i;
        EXPECT_EQ(y[i], y_inplace[i]) << ks.name << " n=" << n << " i=" << i;
      }
    }
  }
}

// The vector kernels sum the squares in another order than the portable one, in double, so they agree
// with it to within one rounding of the scale.
TEST(ElementwiseKernels, RmsNormVectorAgreesWithPortable) {
  const int64_t n = 4099;
  std::vector<float> x = randn(n, 7, 100.0f), w = randn(n, 8), a(n), b(n);
  x[5] = 1e6f;  // a large value among small ones: single-precision sums would lose the small ones
  elementwise_kernels_portable().rms_norm_row(x.data(), w.data(), n, 1e-6f, a.data());
  for (const KernelSet& ks : kernel_sets()) {
    ks.k->rms_norm_row(x.data(), w.data(), n, 1e-6f, b.data());
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(a[i], b[i], 3 * kFloatEps * std::fabs(a[i])) << ks.name << " " << i;
  }
}

TEST(ElementwiseKernels, SwigluMatchesFormula) {
  for (const KernelSet& ks : kernel_sets()) {
    for (const int64_t n : kSizes) {
      for (const bool bias : {false, true}) {
        std::vector<float> g = randn(n, 3 + n, 6.0f), u = randn(n, 4 + n);
        const std::vector<float> gb = randn(n, 5 + n), ub = randn(n, 6 + n);
        if (n > 5) {  // saturated ends: e^-z overflows to +inf, or vanishes
          g[0] = -200.0f;
          g[1] = 200.0f;
          g[2] = -87.0f;
          g[3] = 0.0f;
        }
        std::vector<float> out(n), out_inplace = g;
        const float* pgb = bias ? gb.data() : nullptr;
        const float* pub = bias ? ub.data() : nullptr;
        ks.k->swiglu_row(g.data(), u.data(), pgb, pub, n, out.data());
        ks.k->swiglu_row(out_inplace.data(), u.data(), pgb, pub, n, out_inplace.data());
        for (int64_t i = 0; i < n; ++i) {
          const float z = bias ? g[i] + gb[i] : g[i];  // the biased inputs round to float first
          const float v = bias ? u[i] + ub[i] : u[i];
          const double ref = z / (1.0 + std::exp(-double(z))) * v;
          // e^x within 2 ulp, then an add, a divide and a multiply that round once each.
          EXPECT_NEAR(out[i], ref, 6 * kFloatEps * std::fabs(ref) + 1e-37)
              << ks.name << " n=" << n << " bias=" << bias << " i=" << i << " z=" << z;
          EXPECT_EQ(out[i], out_inplace[i]) << ks.name << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

// Rotation of random vectors by random angles, both pairings, rotated dims n_rot <= head_dim (the rest
// copied), with and without a bias, out of place and in place.
TEST(ElementwiseKernels, RopeMatchesFormula) {
  struct Shape {
    int64_t head_dim, n_rot;
  };
  const std::vector<Shape> shapes = {{8, 8}, {12, 8}, {40, 34}, {64, 64}, {80, 48}, {128, 128}, {130, 98}};
  for (const KernelSet& ks : kernel_sets()) {
    for (const Shape sh : shapes) {
      for (const bool neox : {false, true}) {
        for (const bool bias : {false, true}) {
          const int64_t n_heads = 3, half = sh.n_rot / 2, width = n_heads * sh.head_dim;
          const std::vector<float> angle = randn(half, 11 + sh.n_rot, 100.0f);
          std::vector<float> c(half), s(half);
          for (int64_t i = 0; i < half; ++i) {
            c[i] = std::cos(angle[i]);
            s[i] = std::sin(angle[i]);
          }
          const RopeRow row{c.data(), s.data(), sh.head_dim, sh.n_rot, neox};
          const std::vector<float> x = randn(width, 12 + sh.head_dim), b = randn(width, 13 + sh.head_dim);
          std::vector<float> y(width), y_inplace = x;
          const float* pb = bias ? b.data() : nullptr;
          ks.k->rope_heads(row, x.data(), pb, n_heads, y.data());
          ks.k->rope_heads(row, y_inplace.data(), pb, n_heads, y_inplace.data());
          const std::string where = ks.name + " head_dim=" + std::to_string(sh.head_dim) +
                                    " n_rot=" + std::to_string(sh.n_rot) + (neox ? " neox" : " normal") +
                                    (bias ? " bias" : "");
          for (int64_t h = 0; h < n_heads; ++h) {
            const int64_t o = h * sh.head_dim;
            auto in = [&](int64_t i) { return bias ? x[o + i] + b[o + i] : x[o + i]; };
            for (int64_t i = 0; i < half; ++i) {
              const int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
              const double a0 = in(i0), a1 = in(i1);
              const double r0 = a0 * c[i] - a1 * s[i], r1 = a0 * s[i] + a1 * c[i];
              // Two products and a sum, each rounding once at most.
              const double tol = 3 * kFloatEps * (std::fabs(a0) + std::fabs(a1));
              EXPECT_NEAR(y[o + i0], r0, tol) << where << " h=" << h << " i=" << i;
              EXPECT_NEAR(y[o + i1], r1, tol) << where << " h=" << h << " i=" << i;
            }
            for (int64_t i = sh.n_rot; i < sh.head_dim; ++i) EXPECT_EQ(y[o + i], in(i)) << where << " i=" << i;
          }
          EXPECT_EQ(0, std::memcmp(y.data(), y_inplace.data(), width * sizeof(float))) << where;
        }
      }
    }
  }
}

// Distance in units in the last place between two finite non-negative floats.
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::abs(int64_t{ia} - int64_t{ib});
}

using ExpFn = void (*)(const float* x, int64_t n, float* y);

void expect_exp_within_two_ulp(ExpFn exp_fn) {
  // Evenly spaced points over [-87, 88] and random ones, plus the ends themselves.
  const int64_t n = 1 << 20;
  std::vector<float> x(n), y(n);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-87.0f, 88.0f);
  for (int64_t i = 0; i < n; ++i) x[i] = i % 2 ? d(rng) : -87.0f + 175.0f * static_cast<float>(i) / (n - 2);
  x[1] = -87.0f;
  x[3] = 88.0f;
  exp_fn(x.data(), n, y.data());
  int64_t worst = 0;
  float worst_x = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float ref = static_cast<float>(std::exp(static_cast<double>(x[i])));
    const int64_t u = ulp_distance(y[i], ref);
    if (u > worst) {
      worst = u;
      worst_x = x[i];
    }
  }
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
}

void expect_exp_edge_cases(ExpFn exp_fn) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {-inf, -1e30f, -104.0f, 0.0f, -0.0f, 89.0f, 100.0f, 1e30f, inf};
  const std::vector<float> want = {0.0f, 0.0f, 0.0f, 1.0f, 1.0f, inf, inf, inf, inf};
  std::vector<float> y(x.size());
  exp_fn(x.data(), static_cast<int64_t>(x.size()), y.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], want[i]) << "exp(" << x[i] << ")";
  // Subnormal results round once: e^-100 = 3.72e-44 is 26.55 times the smallest subnormal.
  const float xs = -100.0f;
  float ys = 0;
  exp_fn(&xs, 1, &ys);
  EXPECT_EQ(ys, static_cast<float>(std::exp(-100.0)));
}

// Inputs for the f16 row kernel: normal values over the whole f16 range, subnormal results, exact ties
// between neighbouring halves (both parities) and values that round to infinity.
std::vector<float> f16_inputs() {
  std::vector<float> x = randn(1001, 7, 3.0f);
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> e(-26.0f, 16.5f);
  for (int i = 0; i < 2000; ++i) x.push_back((i % 2 ? -1.0f : 1.0f) * std::exp2(e(rng)));
  for (float base : {1.0f, 0.1f, 1000.0f, 6.1e-5f, 3.0e-7f}) {
    const float h = std::ldexp(1.0f, std::ilogb(base) - 10 < -24 ? -24 : std::ilogb(base) - 10);  // f16 ulp
    for (int k = 0; k < 8; ++k) x.push_back(base + (k + 0.5f) * h);  // exact ties
  }
  for (float v : {65504.0f, 65519.0f, 65520.0f, 1e6f, -65520.0f, 0.0f, -0.0f, 2.98e-8f, 2.99e-8f, 6.0e-8f})
    x.push_back(v);
  return x;
}

// The f16 value of bits h as a double (independent of core/fp16.h).
double half_value(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? std::numeric_limits<double>::infinity()
                                                         : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

TEST(ElementwiseKernels, F16RowRoundsToNearestEven) {
  const std::vector<float> x = f16_inputs();
  for (const KernelSet& ks : kernel_sets()) {
    for (const int64_t n : kSizes) {
      if (n > static_cast<int64_t>(x.size())) continue;
      std::vector<uint16_t> y(n + 1, 0xabcd);
      ks.k->f16_row(x.data(), n, y.data());
      ASSERT_EQ(y[n], 0xabcd) << ks.name << ": wrote past n = " << n;
    }
    std::vector<uint16_t> y(x.size());
    ks.k->f16_row(x.data(), static_cast<int64_t>(x.size()), y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i], a = std::fabs(v);
      const uint16_t h = y[i];
      ASSERT_EQ(h >> 15, std::signbit(x[i]) ? 1 : 0) << ks.name << " x=" << x[i];
      const uint16_t mag = h & 0x7fff;
      if (a >= 65520.0) {
        ASSERT_EQ(mag, 0x7c00) << ks.name << " x=" << x[i] << " must round to infinity";
        continue;
      }
      ASSERT_LT(mag, 0x7c00) << ks.name << " x=" << x[i];
      const double got = std::fabs(half_value(mag)), err = std::fabs(got - a);
      const double below = mag > 0 ? std::fabs(half_value(mag - 1)) : -1.0;
      const double above = std::fabs(half_value(mag + 1));
      if (mag > 0) {
        ASSERT_LE(err, a - below) << ks.name << " x=" << x[i];
      }
      if (mag + 1 < 0x7c00) {
        ASSERT_LE(err, above - a) << ks.name << " x=" << x[i];
      }
      const bool tie = (mag > 0 && err == a - below) || (mag + 1 < 0x7c00 && err == above - a);
      if (tie && err > 0) {
        ASSERT_EQ(mag & 1, 0) << ks.name << " x=" << x[i] << ": a tie goes to the even half";
      }
    }
  }
}

TEST(Exp512, WithinTwoUlpOnTheFullRange) {
  if (!elementwise_avx512_supported()) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_exp_within_two_ulp(exp_avx512);
}

TEST(Exp512, EdgeCases) {
  if (!elementwise_avx512_supported()) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_exp_edge_cases(exp_avx512);
}

TEST(Exp256, WithinTwoUlpOnTheFullRange) {
  if (!elementwise_avx2_supported()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  expect_exp_within_two_ulp(exp_avx2);
}

TEST(Exp256, EdgeCases) {
  if (!elementwise_avx2_supported()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  expect_exp_edge_cases(exp_avx2);
}

}  // namespace
}  // namespace ignis::model
