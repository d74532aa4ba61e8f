// cpu::matmul: tiling, threading and activation conversion. Each output must equal the dispatched
// vec_dot of its weight row and converted activation row bit for bit (the tiling may not change what
// is computed), and the whole product must be close to the f32 product of the dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/ops.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace ignis::cpu {
namespace {

struct Shape {
  DType type;
  int64_t n_in, n_out, n_tokens;
  int threads;
};

void PrintTo(const Shape& s, std::ostream* os) {
  *os << dtype_name(s.type) << " " << s.n_in << "x" << s.n_out << " t=" << s.n_tokens << " th=" << s.threads;
}

class Matmul : public ::testing::TestWithParam<Shape> {};

TEST_P(Matmul, EqualsPerRowVecDotAndIsCloseToF32) {
  const Shape s = GetParam();
  const DTypeTraits* tr = dtype_traits(s.type);
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> wf(s.n_in * s.n_out), x(s.n_in * s.n_tokens);
  for (auto& v : wf) v = g(rng);
  for (auto& v : x) v = g(rng);
  const size_t rb = row_bytes(s.type, s.n_in);
  std::vector<uint8_t> w(rb * s.n_out);
  for (int64_t r = 0; r < s.n_out; ++r) tr->from_float(wf.data() + r * s.n_in, w.data() + r * rb, s.n_in);

  ThreadPool pool(s.threads);
  std::vector<float> y(s.n_out * s.n_tokens, NAN);
  matmul(pool, WeightView{s.type, w.data(), s.n_in, s.n_out}, x.data(), s.n_tokens, y.data());

  const DTypeTraits* act = dtype_traits(tr->vec_dot_type);
  const size_t ab = row_bytes(act->type, s.n_in);
  std::vector<uint8_t> xq(ab);
  std::vector<float> wd(s.n_in);
  const VecDotFn dot = best_vec_dot(s.type);
  for (int64_t t = 0; t < s.n_tokens; ++t) {
    act->from_float(x.data() + t * s.n_in, xq.data(), s.n_in);
    for (int64_t r = 0; r < s.n_out; ++r) {
      const float want = dot(s.n_in, w.data() + r * rb, xq.data());
      ASSERT_EQ(y[t * s.n_out + r], want) << "token " << t << " row " << r;
      // Close to the f32 product of the dequantized row (budget: activation quantization error).
      tr->to_float(w.data() + r * rb, wd.data(), s.n_in);
      double exact = 0, abs_sum = 0;
      for (int64_t i = 0; i < s.n_in; ++i) {
        exact += double{wd[i]} * x[t * s.n_in + i];
        abs_sum += std::fabs(double{wd[i]} * x[t * s.n_in + i]);
      }
      const double rel = tr->vec_dot_type == DType::F32 ? 1e-5 : 1.5e-2;
      ASSERT_NEAR(want, exact, rel * abs_sum + 1e-5) << "token " << t << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Matmul,
    ::testing::Values(Shape{DType::Q4_0, 896, 37, 1, 2}, Shape{DType::Q4_0, 896, 37, 5, 3},
                      Shape{DType::Q8_0, 64, 50, 33, 2}, Shape{DType::Q4_1, 96, 17, 3, 2},
                      Shape{DType::Q5_0, 896, 20, 2, 1}, Shape{DType::Q5_1, 128, 19, 4, 2},
                      Shape{DType::Q4_K, 512, 21, 3, 2}, Shape{DType::Q5_K, 256, 16, 2, 2},
                      Shape{DType::Q6_K, 768, 33, 3, 2}, Shape{DType::F16, 100, 18, 3, 2},
                      Shape{DType::BF16, 130, 18, 2, 2},
                      // Decode's split: one region per thread, stolen from when a thread runs late (more
                      // threads than cores make some late); past 8 threads the regions live on the heap.
                      Shape{DType::Q8_0, 256, 4001, 1, 5}, Shape{DType::Q4_0, 64, 3000, 2, 9},
                      // f32 with 2 KiB activation rows: 300 tokens span three token blocks of the tiling.
                      Shape{DType::F32, 512, 23, 300, 2}),
    [](const auto& info) {
      const Shape& s = info.param;
      return std::string(dtype_name(s.type)) + "_" + std::to_string(s.n_in) + "x" + std::to_string(s.n_out) + "_t" +
             std::to_string(s.n_tokens) + "_th" + std::to_string(s.threads);
    });

TEST(MatmulErrors, RejectsRowLengthNotMultipleOfBlock) {
  ThreadPool pool(1);
  std::vector<uint8_t> w(1024);
  std::vector<float> x(100), y(4);
  EXPECT_THROW(matmul(pool, WeightView{DType::Q4_K, w.data(), 100, 4}, x.data(), 1, y.data()), Error);
  EXPECT_THROW(matmul(pool, WeightView{DType::I32, w.data(), 4, 4}, x.data(), 1, y.data()), Error);
}

TEST(GetRow, DequantizesTheRequestedRow) {
  std::vector<float> wf(64 * 3);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = static_cast<float>(i % 11) - 5.0f;
  std::vector<uint8_t> w(row_bytes(DType::Q8_0, 64) * 3);
  dtype_traits(DType::Q8_0)->from_float(wf.data(), w.data(), 64 * 3);
  std::vector<float> row(64);
  get_row(WeightView{DType::Q8_0, w.data(), 64, 3}, 2, row.data());
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(row[i], wf[128 + i], 0.03f) << i;
  EXPECT_THROW(get_row(WeightView{DType::Q8_0, w.data(), 64, 3}, 3, row.data()), Error);
}

TEST(Isa, NameIsKnown) {
  const std::string n = isa_name();
  EXPECT_TRUE(n == "scalar" || n == "avx2" || n == "avx512") << n;
}

}  // namespace
}  // namespace ignis::cpu
