// ignis' scalar quant reference vs REFERENCE ggml (llama.cpp), through committed goldens in
// tests/data/quant produced by scripts/ref/ggml_quant_golden.c (see its header for the file layout).
//   - to_float(ggml's blocks) == ggml's floats, bit for bit, for all 13 weight types;
//   - from_float(input) == ggml's _ref blocks, byte for byte, for every type ignis quantizes;
//   - activation conversion (Q8_0 / Q8_1 / Q8_K / F16 / BF16) == ggml's from_float_ref, byte for byte;
//   - ignis' vec_dot (scalar twin and the dispatched kernel) and matmul on ggml's blocks == ggml-cpu's
//     vec_dot within a float-rounding budget (the integer parts are identical; only summation order differs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/ops.h"
#include "core/dtype.h"
#include "core/thread_pool.h"

namespace ignis {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

struct Reader {
  const std::vector<uint8_t>& buf;
  size_t pos = 0;
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, take(4), 4);
    return v;
  }
  const uint8_t* take(size_t n) {
    if (pos + n > buf.size()) throw std::runtime_error("golden file truncated");
    const uint8_t* p = buf.data() + pos;
    pos += n;
    return p;
  }
  std::vector<float> floats(size_t n) {
    std::vector<float> v(n);
    std::memcpy(v.data(), take(n * 4), n * 4);
    return v;
  }
  std::vector<uint8_t> bytes(size_t n) {
    const uint8_t* p = take(n);
    return std::vector<uint8_t>(p, p + n);
  }
};

struct Input {
  uint32_t n_rows = 0, n_per_row = 0;
  std::vector<float> x, act;
};

const Input& input() {
  static const Input in = [] {
    Input r;
    const auto buf = read_file(std::string(IGNIS_TEST_DATA) + "/quant/input.bin");
    Reader rd{buf};
    r.n_rows = rd.u32();
    r.n_per_row = rd.u32();
    r.x = rd.floats(size_t{r.n_rows} * r.n_per_row);
    r.act = rd.floats(r.n_per_row);
    return r;
  }();
  return in;
}

struct Golden {
  DType type{}, vec_dot_type{};
  uint32_t n_rows = 0, n_per_row = 0, row_bytes = 0, act_row_bytes = 0;
  std::vector<uint8_t> blocks, act_cpu, act_ref;
  std::vector<float> deq, dots;
};

Golden load(const std::string& name) {
  const auto buf = read_file(std::string(IGNIS_TEST_DATA) + "/quant/" + name + ".bin");
  Reader rd{buf};
  Golden g;
  EXPECT_EQ(0, std::memcmp(rd.take(4), "IGQ1", 4));
  g.type = static_cast<DType>(rd.u32());
  g.n_rows = rd.u32();
  g.n_per_row = rd.u32();
  g.row_bytes = rd.u32();
  g.vec_dot_type = static_cast<DType>(rd.u32());
  g.act_row_bytes = rd.u32();
  g.blocks = rd.bytes(size_t{g.n_rows} * g.row_bytes);
  g.deq = rd.floats(size_t{g.n_rows} * g.n_per_row);
  g.act_cpu = rd.bytes(g.act_row_bytes);
  g.act_ref = rd.bytes(g.act_row_bytes);
  g.dots = rd.floats(g.n_rows);
  EXPECT_EQ(rd.pos, buf.size()) << name << ": trailing bytes";
  return g;
}

class QuantGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantGolden, TraitsMatchGgmlGeometry) {
  const Golden g = load(GetParam());
  const DTypeTraits* tr = dtype_traits(g.type);
  ASSERT_NE(tr, nullptr);
  EXPECT_STREQ(tr->name, GetParam());
  EXPECT_EQ(row_bytes(g.type, g.n_per_row), g.row_bytes);
  EXPECT_EQ(tr->vec_dot_type, g.vec_dot_type);
  EXPECT_EQ(row_bytes(g.vec_dot_type, g.n_per_row), g.act_row_bytes);
}

TEST_P(QuantGolden, ToFloatIsBitExact) {
  const Golden g = load(GetParam());
  const DTypeTraits* tr = dtype_traits(g.type);
  ASSERT_NE(tr->to_float, nullptr);
  std::vector<float> out(g.deq.size(), NAN);
  for (uint32_t r = 0; r < g.n_rows; ++r)
    tr->to_float(g.blocks.data() + size_t{r} * g.row_bytes, out.data() + size_t{r} * g.n_per_row, g.n_per_row);
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::memcmp(&out[i], &g.deq[i], 4) != 0 && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << GetParam() << ": first mismatch at " << first << ": " << out[first]
                            << " vs ggml " << g.deq[first];
}

// Types ignis quantizes (all but q2_K / q3_K, which ignis only reads).
class QuantGoldenFromFloat : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantGoldenFromFloat, FromFloatIsByteExact) {
  const Golden g = load(GetParam());
  const DTypeTraits* tr = dtype_traits(g.type);
  ASSERT_NE(tr->from_float, nullptr) << GetParam();
  const Input& in = input();
  ASSERT_EQ(in.n_per_row, g.n_per_row);
  std::vector<uint8_t> out(g.blocks.size(), 0xAA);
  for (uint32_t r = 0; r < g.n_rows; ++r)
    tr->from_float(in.x.data() + size_t{r} * g.n_per_row, out.data() + size_t{r} * g.row_bytes, g.n_per_row);
  const size_t n_blocks = g.blocks.size() / tr->block_bytes;
  size_t bad = 0;
  for (size_t b = 0; b < n_blocks; ++b)
    bad += std::memcmp(out.data() + b * tr->block_bytes, g.blocks.data() + b * tr->block_bytes, tr->block_bytes) != 0;
  EXPECT_EQ(bad, 0u) << GetParam() << ": " << bad << " of " << n_blocks << " blocks differ from ggml";
}

TEST_P(QuantGolden, ActivationConversionIsByteExact) {
  const Golden g = load(GetParam());
  const DTypeTraits* vt = dtype_traits(g.vec_dot_type);
  ASSERT_NE(vt, nullptr);
  ASSERT_NE(vt->from_float, nullptr);
  std::vector<uint8_t> out(g.act_row_bytes, 0xAA);
  vt->from_float(input().act.data(), out.data(), g.n_per_row);
  EXPECT_EQ(out, g.act_ref) << GetParam() << ": activation as " << vt->name;
}

// What matmul converts activations with (every ISA this CPU has) equals ggml-cpu's run-time conversion
// (what llama.cpp multiplies with), byte for byte.
TEST_P(QuantGolden, RuntimeActivationConversionMatchesGgmlCpu) {
  const Golden g = load(GetParam());
  if (g.vec_dot_type != DType::Q8_0 && g.vec_dot_type != DType::Q8_1 && g.vec_dot_type != DType::Q8_K)
    GTEST_SKIP() << "float activations";
  for (cpu::Isa isa : {cpu::Isa::kScalar, cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
    const FromFloatFn f = cpu::find_act_quantizer(g.vec_dot_type, isa);
    if (!f) continue;
    std::vector<uint8_t> out(g.act_row_bytes, 0xAA);
    f(input().act.data(), out.data(), g.n_per_row);
    EXPECT_EQ(out, g.act_cpu) << GetParam() << " on " << cpu::isa_label(isa);
  }
}

// |ignis - ggml| <= rel * sum_i |w_i a_i| (+ a tiny absolute floor): same integer dot, different order of
// float accumulation. F16/BF16 products are exact in f32, so the same bound holds.
void expect_dot_close(float got, float want, double abs_sum, const std::string& what) {
  EXPECT_NEAR(got, want, 2e-6 * abs_sum + 1e-6) << what;
}

double abs_dot(const Golden& g, uint32_t r) {
  const DTypeTraits* vt = dtype_traits(g.vec_dot_type);
  std::vector<float> a(g.n_per_row);
  if (vt->to_float) {
    vt->to_float(g.act_cpu.data(), a.data(), g.n_per_row);
  } else {
    a = input().act;  // Q8_1 / Q8_K: within quantization error of the f32 activation, fine for a bound
  }
  double s = 0;
  for (uint32_t i = 0; i < g.n_per_row; ++i) s += std::fabs(double{g.deq[size_t{r} * g.n_per_row + i]} * a[i]);
  return 2 * s;
}

TEST_P(QuantGolden, VecDotMatchesGgml) {
  const Golden g = load(GetParam());
  for (int isa = 0; isa <= 2; ++isa) {
    const cpu::VecDotFn dot = cpu::find_vec_dot(g.type, static_cast<cpu::Isa>(isa));
    if (!dot) continue;
    for (uint32_t r = 0; r < g.n_rows; ++r) {
      const float got = dot(g.n_per_row, g.blocks.data() + size_t{r} * g.row_bytes, g.act_cpu.data());
      expect_dot_close(got, g.dots[r], abs_dot(g, r),
                       std::string(GetParam()) + " row " + std::to_string(r) + " isa " +
                           cpu::isa_label(static_cast<cpu::Isa>(isa)));
    }
  }
}

TEST_P(QuantGolden, MatmulMatchesGgml) {
  const Golden g = load(GetParam());
  ThreadPool pool(2);
  cpu::WeightView w{g.type, g.blocks.data(), g.n_per_row, g.n_rows};
  std::vector<float> y(g.n_rows, NAN);
  cpu::matmul(pool, w, input().act.data(), 1, y.data());
  for (uint32_t r = 0; r < g.n_rows; ++r) {
    // Same activation bytes as ggml-cpu (test above), same integer dots: only the float order differs.
    expect_dot_close(y[r], g.dots[r], abs_dot(g, r), std::string(GetParam()) + " row " + std::to_string(r));
  }
}

TEST_P(QuantGolden, GetRowMatchesGgml) {
  const Golden g = load(GetParam());
  cpu::WeightView w{g.type, g.blocks.data(), g.n_per_row, g.n_rows};
  std::vector<float> row(g.n_per_row);
  cpu::get_row(w, g.n_rows - 1, row.data());
  EXPECT_EQ(0, std::memcmp(row.data(), g.deq.data() + size_t{g.n_rows - 1} * g.n_per_row, row.size() * 4));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantGolden,
                         ::testing::Values("f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K",
                                           "q3_K", "q4_K", "q5_K", "q6_K"),
                         [](const auto& info) { return std::string(info.param); });
INSTANTIATE_TEST_SUITE_P(Quantizers, QuantGoldenFromFloat,
                         ::testing::Values("f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_K",
                                           "q5_K", "q6_K"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace ignis
