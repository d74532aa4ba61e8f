// Packed (row-interleaved) products of every packable type: each output equals the scalar twin's
// (ggml's integer formulation on the unpacked row) to float rounding, multi-token calls equal one-token
// calls bit for bit, for row lengths of every block count and row counts off the 16-row groups; with
// prefill-sized calls this covers the AMX kernels (where the CPU has them) against the one-token kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <thread>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/packed.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/thread_pool.h"

namespace ignis::cpu {
namespace {

struct Case {
  DType type;
  int64_t n_in, n_out, n_tokens;
};

class Packed : public ::testing::TestWithParam<Case> {};

// Rows of weights of type t from the floats wf (n_rows x n_in). Types without a quantizer here (Q2_K, Q3_K):
// random blocks, every bit pattern of the quants and scales, with finite f16 scales of a typical size.
void make_weights(DType t, const float* wf, int64_t n_in, int64_t n_rows, uint8_t* dst) {
  const DTypeTraits* tr = dtype_traits(t);
  if (tr->from_float) return tr->from_float(wf, dst, n_in * n_rows);
  std::mt19937 rng(static_cast<uint32_t>(n_in * 131 + n_rows));
  const size_t bytes = row_bytes(t, n_in) * static_cast<size_t>(n_rows);
  for (size_t i = 0; i < bytes; ++i) dst[i] = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> d(0.001f, 0.02f);
  auto sign = [&] { return rng() % 2 ? 1.0f : -1.0f; };
  if (t == DType::Q3_K) {
    auto* b = reinterpret_cast<BlockQ3_K*>(dst);
    for (size_t i = 0; i < bytes / sizeof(BlockQ3_K); ++i) b[i].d = f32_to_f16(d(rng) * sign());
    return;
  }
  ASSERT_EQ(t, DType::Q2_K) << "no quantizer for " << dtype_name(t);
  auto* b = reinterpret_cast<BlockQ2_K*>(dst);
  for (size_t i = 0; i < bytes / sizeof(BlockQ2_K); ++i) b[i].d = f32_to_f16(d(rng) * sign()), b[i].dmin = f32_to_f16(d(rng) * sign());
}

TEST_P(Packed, ExactBlockDotsAndTokenInvariance) {
  const Case c = GetParam();
  const WeightView probe{c.type, reinterpret_cast<const void*>(16), c.n_in, c.n_out};
  if (!can_pack(probe)) GTEST_SKIP() << "no packed kernels on this CPU (" << isa_name() << ")";
  const DTypeTraits* tr = dtype_traits(c.type);
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> wf(c.n_in * c.n_out), x(c.n_in * c.n_tokens);
  for (auto& v : wf) v = g(rng);
  for (auto& v : x) v = g(rng) * (1 + (&v - x.data()) % 7);
  const size_t rb = row_bytes(c.type, c.n_in);
  std::vector<uint8_t> w(rb * c.n_out);
  make_weights(c.type, wf.data(), c.n_in, c.n_out, w.data());

  PackedStore store;
  const WeightView pv = store.add(WeightView{c.type, w.data(), c.n_in, c.n_out});
  ASSERT_TRUE(pv.packed);
  // Copied in the background (F16 on AVX-512; the quantized types there without AMX): the products on
  // ggml's rows (before the copy exists) against those on the copy, bit for bit.
  const bool background = copied_in_background(c.type);
  if (c.type == DType::F16 || background) {
    EXPECT_EQ(pv.data, w.data()) << "used in place until copied";
  }
  ThreadPool pool(2);
  std::vector<float> y_rows;
  if (background) {
    WeightView rows = pv;
    rows.repacked = nullptr;
    y_rows.assign(c.n_out * c.n_tokens, NAN);
    matmul(pool, rows, x.data(), c.n_tokens, y_rows.data());
    std::vector<float> y1(c.n_out);  // and decode's kernel on the rows
    matmul(pool, rows, x.data(), 1, y1.data());
    for (int64_t r = 0; r < c.n_out; ++r) ASSERT_EQ(y1[r], y_rows[r]) << "rows: one token != batched at " << r;
  }
  store.wait();
  EXPECT_EQ(store.bytes(), packed_bytes(pv));
  if (background) {
    ASSERT_NE(pv.repacked, nullptr);
    ASSERT_NE(pv.repacked->load(), nullptr);
  }

  std::vector<float> y(c.n_out * c.n_tokens, NAN);
  matmul(pool, pv, x.data(), c.n_tokens, y.data());
  for (size_t i = 0; i < y_rows.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(y_rows[i]), std::bit_cast<uint32_t>(y[i])) << "rows != copy at " << i;

  // Reference: the scalar twin (ggml's integer formulation) on the unpacked row and the activation
  // converted by the scalar quantizer of the type's vec_dot_type.
  const VecDotFn ref = find_vec_dot(c.type, Isa::kScalar);
  const DTypeTraits* act = dtype_traits(tr->vec_dot_type);
  std::vector<uint8_t> xq(row_bytes(act->type, c.n_in));
  std::vector<float> wd(c.n_in);
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    act->from_float(x.data() + t * c.n_in, xq.data(), c.n_in);
    std::vector<float> y1(c.n_out);
    matmul(pool, pv, x.data() + t * c.n_in, 1, y1.data());
    for (int64_t r = 0; r < c.n_out; ++r) {
      const float want = ref(c.n_in, w.data() + r * rb, xq.data());
      tr->to_float(w.data() + r * rb, wd.data(), c.n_in);
      double mag = 0;
      for (int64_t i = 0; i < c.n_in; ++i) mag += std::fabs(double{wd[i]} * x[t * c.n_in + i]);
      ASSERT_NEAR(y[t * c.n_out + r], want, 1e-5 * mag + 1e-6) << "token " << t << " row " << r;
      ASSERT_EQ(y[t * c.n_out + r], y1[r]) << "token " << t << " row " << r << ": batched != alone";
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
    // Row lengths of 1..12 blocks, row counts around the 16-row groups, the real model widths.
    for (int64_t nb = 1; nb <= 12; ++nb) v.push_back({t, 32 * nb, 13 + 3 * nb, nb % 3 == 0 ? 9 : 2});
    v.push_back({t, 896, 37, 5});
    v.push_back({t, 4864, 18, 1});
  }
  // Tiles larger than the weight slice a token group re-reads from cache (the output head's shape).
  v.push_back({DType::Q4_0, 896, 9001, 11});
  // Decode's two streams (row group g with g + half): 6 groups, the last partial, and 7 (one alone).
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K,
                  DType::Q6_K})
    for (int64_t n_out : {87, 103}) v.push_back({t, dtype_traits(t)->block_size == 256 ? 512 : 96, n_out, 2});
  // Prefill-sized calls: AMX's 16-token tiles where the CPU has AMX (then the AVX-512 6-token kernel
  // and the one-token kernel for the rest), one and two blocks per row, row counts off the groups.
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
    v.push_back({t, 32, 17, 80});
    v.push_back({t, 64, 33, 137});
    v.push_back({t, 896, 40, 64});
  }
  v.push_back({DType::Q8_0, 1536, 18, 130});
  v.push_back({DType::Q4_0, 1536, 18, 130});  // two row groups a group at a time (rows over 32 blocks)
  // More tokens than one AMX token block holds at this row length (6 KB of activations per token): a
  // call with many tiles, then a short block's few tiles and its leftover tokens.
  v.push_back({DType::Q8_0, 4864, 17, 200});
  // F16 (ggml's rows until the background copy exists, then the copy); odd row lengths exercise the
  // masked tail; tokens in a multi-token group and left over (AVX-512 takes 6 at a time, AVX2 4).
  for (int64_t n : {16, 100, 896}) v.push_back({DType::F16, n, 21, n == 100 ? 9 : 7});
  // Rows long enough that prefill takes them in blocks (4,864: the FFN down projection; 2,100: a masked
  // tail in the last block), next to a partial group taken in one pass.
  v.push_back({DType::F16, 4864, 16, 7});
  v.push_back({DType::F16, 100, 21, 5});  // fewer tokens than a multi-token group
  v.push_back({DType::F16, 2100, 21, 9});
  // On AMX-BF16: two tiles and one, a partial tile left over (one call), element pairs and 32-element
  // chunks cut by the row end, the prefill path (64 tokens or more) and the short one.
  v.push_back({DType::F16, 896, 40, 80});
  v.push_back({DType::F16, 100, 21, 70});
  v.push_back({DType::F16, 37, 18, 67});
  v.push_back({DType::F16, 4864, 17, 64});
  v.push_back({DType::F16, 64, 33, 49});
  // BF16 (vdpbf16ps on element pairs on AVX-512; on AVX2 F16's kernels in place, with bf16 weights):
  // steps of 32 cut by the row end at odd and even lengths, blocked rows (AVX2: segments of the prefill
  // tile, the last one cut), tokens left over, fewer tokens than a group, the output head's slice.
  for (int64_t n : {32, 37, 100, 896}) v.push_back({DType::BF16, n, 21, n == 100 ? 9 : 7});
  v.push_back({DType::BF16, 4864, 16, 7});
  v.push_back({DType::BF16, 2100, 21, 9});
  v.push_back({DType::BF16, 100, 21, 5});
  v.push_back({DType::BF16, 64, 33, 49});
  v.push_back({DType::BF16, 896, 9001, 3});
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    for (int64_t nb = 1; nb <= 3; ++nb) v.push_back({t, 256 * nb, 5 + 11 * nb, nb == 2 ? 9 : 2});
    v.push_back({t, 1536, 32, 6});
    v.push_back({t, 512, 20, 7});  // 3 tokens left over after a group of 4
    v.push_back({t, 4864, 17, 1});
    // AMX tiles (Q4_K on a CPU with AMX), with tokens and rows left over.
    v.push_back({t, 256, 17, 80});
    v.push_back({t, 1536, 33, 137});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Packed, ::testing::ValuesIn(cases()), [](const auto& info) {
  const Case& c = info.param;
  return std::string(dtype_name(c.type)) + "_" + std::to_string(c.n_in) + "x" + std::to_string(c.n_out) + "_t" +
         std::to_string(c.n_tokens);
});

TEST(PackedAmx, PrefillKernelsPresentWhereTheCpuHasAmx) {
  const char* env = std::getenv("IGNIS_AMX");
  if (best_isa() != Isa::kAvx512 || !amx_supported() || (env && std::string(env) == "0"))
    GTEST_SKIP() << "no AMX-INT8 here (or IGNIS_AMX=0)";
  for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q6_K})
    EXPECT_NE(packed_kernels(t).dott, nullptr) << dtype_name(t);
  if (amx_bf16_supported()) {
    EXPECT_TRUE(f16_on_amx());
    EXPECT_NE(packed_kernels(DType::F16).dott, nullptr);
  } else {
    EXPECT_EQ(packed_kernels(DType::F16).dott, nullptr);
  }
}

class PackedFused : public ::testing::TestWithParam<DType> {};

// A fused matrix's products equal its parts' products, bit for bit, for decode-sized and prefill-sized
// calls; for F16 on AMX also while its copy is being made in the background (the parts' rows stand in).
TEST_P(PackedFused, EqualsSeparateProductsAndRefusesMisfits) {
  const DType type = GetParam();
  const int64_t n_in = 896;
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  const int64_t outs[] = {32, 16, 19};
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<WeightView> parts;
  for (int64_t n_out : outs) {
    std::vector<float> wf(n_in * n_out);
    for (auto& v : wf) v = g(rng);
    bufs.emplace_back(row_bytes(type, n_in) * n_out);
    dtype_traits(type)->from_float(wf.data(), bufs.back().data(), n_in * n_out);
    parts.push_back(WeightView{type, bufs.back().data(), n_in, n_out});
  }
  if (!can_pack(parts[0])) GTEST_SKIP() << "no packed kernels on this CPU";
  PackedStore store;
  const WeightView fused = store.add_fused(parts);
  if ((type == DType::F16 || type == DType::BF16) && !copied_in_background(type)) {  // float rows in place do not fuse
    EXPECT_EQ(fused.data, nullptr);
    return;
  }
  ASSERT_TRUE(fused.packed);
  ASSERT_EQ(fused.n_out, 67);
  ThreadPool pool(2);
  for (int64_t n_tokens : {6, 80}) {
    std::vector<float> x(n_in * n_tokens);
    for (auto& v : x) v = g(rng);
    std::vector<float> yf(67 * n_tokens), yr;
    if (fused.repacked) {  // before the copy: the parts
      WeightView rows = fused;
      rows.repacked = nullptr;
      yr.resize(yf.size());
      matmul(pool, rows, x.data(), n_tokens, yr.data());
      store.wait();
      ASSERT_NE(fused.repacked->load(), nullptr);
    }
    matmul(pool, fused, x.data(), n_tokens, yf.data());
    for (size_t i = 0; i < yr.size(); ++i) ASSERT_EQ(yr[i], yf[i]) << "parts != copy at " << i;
    int64_t off = 0;
    for (const WeightView& p : parts) {
      std::vector<float> y(p.n_out * n_tokens);
      const WeightView pv = store.add(p);
      store.wait();
      matmul(pool, pv, x.data(), n_tokens, y.data());
      for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t r = 0; r < p.n_out; ++r) ASSERT_EQ(yf[t * 67 + off + r], y[t * p.n_out + r]) << t << " " << r;
      off += p.n_out;
    }
  }
  // A part that does not fill whole row groups can only come last; mixed types do not fuse.
  const WeightView misfit[] = {parts[2], parts[0]};
  EXPECT_EQ(store.add_fused(misfit).data, nullptr);
  std::vector<uint8_t> q8(row_bytes(DType::Q8_0, n_in) * 16, 0);
  const WeightView mixed[] = {parts[0], WeightView{DType::Q8_0, q8.data(), n_in, 16}};
  EXPECT_EQ(store.add_fused(mixed).data, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Types, PackedFused, ::testing::Values(DType::Q4_0, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

class PackedGlu : public ::testing::TestWithParam<DType> {};

// A combining step with biases, as the gated FFN's is: out = (g + gb) * 2 - (u + ub) / 3.
void test_glu(const float* g, const float* u, const float* gb, const float* ub, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = (g[i] + (gb ? gb[i] : 0.0f)) * 2.0f - (u[i] + (ub ? ub[i] : 0.0f)) / 3.0f;
}

// matmul_glu equals matmul of the fused [gate; up] matrix followed by the combining step, bit for bit,
// for decode, prefills of whole tiles and a rest, with and without biases; before a background copy
// exists (the products then run on the parts' rows) it refuses and writes nothing.
TEST_P(PackedGlu, EqualsProductThenCombineAndRefusesBeforeTheCopy) {
  const DType type = GetParam();
  const int64_t n_in = 1536, h = 48;
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<WeightView> parts;
  for (int i = 0; i < 2; ++i) {
    std::vector<float> wf(n_in * h);
    for (auto& v : wf) v = g(rng);
    bufs.emplace_back(row_bytes(type, n_in) * h);
    make_weights(type, wf.data(), n_in, h, bufs.back().data());
    parts.push_back(WeightView{type, bufs.back().data(), n_in, h});
  }
  if (!can_pack(parts[0])) GTEST_SKIP() << "no packed kernels on this CPU";
  PackedStore store;
  const WeightView fused = store.add_fused(parts);
  ThreadPool pool(2);
  const char* env = std::getenv("IGNIS_AMX");
  const bool amx = best_isa() == Isa::kAvx512 && amx_supported() && !(env && std::string(env) == "0") &&
                   packed_kernels(type).dott != nullptr;
  std::vector<float> gb(h), ub(h);
  for (auto& v : gb) v = g(rng);
  for (auto& v : ub) v = g(rng);
  // Off AMX it runs on the pair kernels, and on the others (whose multi-token form takes at most 8
  // tokens: all but AMX's F16) for at least that many tokens.
  const PackedKernels kernels = packed_kernels(type);
  auto off_amx = [&](int64_t n_tokens) {
    return kernels.dot_pair ? kernels.n_pair <= 8 : kernels.n_multi <= 8 && n_tokens >= kernels.n_multi;
  };
  for (int64_t n_tokens : {int64_t{1}, int64_t{5}, int64_t{40}, int64_t{100}, int64_t{160}}) {
    std::vector<float> x(n_in * n_tokens);
    for (auto& v : x) v = g(rng);
    std::vector<float> out(h * n_tokens, 7.0f);
    if (!fused.data) {  // F16 without a copy does not fuse
      EXPECT_FALSE(amx);
      return;
    }
    if (fused.repacked && !fused.repacked->load()) {
      // Before the background copy: refused.
      if (!matmul_glu(pool, fused, x.data(), n_tokens, out.data(), test_glu, nullptr, nullptr)) {
        for (float v : out) ASSERT_EQ(v, 7.0f);
      }
      store.wait();
    }
    std::vector<float> y(2 * h * n_tokens);
    matmul(pool, fused, x.data(), n_tokens, y.data());
    for (bool bias : {false, true}) {
      std::fill(out.begin(), out.end(), 7.0f);
      const bool ran = matmul_glu(pool, fused, x.data(), n_tokens, out.data(), test_glu, bias ? gb.data() : nullptr,
                                  bias ? ub.data() : nullptr);
      ASSERT_EQ(ran, (amx && n_tokens >= 64) || off_amx(n_tokens)) << n_tokens;
      if (!ran) {
        for (float v : out) ASSERT_EQ(v, 7.0f) << "wrote while refusing";
        continue;
      }
      std::vector<float> want(h);
      for (int64_t t = 0; t < n_tokens; ++t) {
        test_glu(&y[t * 2 * h], &y[t * 2 * h + h], bias ? gb.data() : nullptr, bias ? ub.data() : nullptr, h,
                 want.data());
        for (int64_t j = 0; j < h; ++j) ASSERT_EQ(out[t * h + j], want[j]) << "token " << t << " column " << j;
      }
    }
  }
  // Halves that are not whole 16-row groups are refused.
  WeightView odd = fused;
  odd.n_out -= 16;
  std::vector<float> x(n_in * 100, 0.5f), out(100 * h, 7.0f);
  EXPECT_FALSE(matmul_glu(pool, odd, x.data(), 100, out.data(), test_glu, nullptr, nullptr));
}

INSTANTIATE_TEST_SUITE_P(Types, PackedGlu,
                         ::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K,
                                           DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Each ISA's f16 rounding of the activations equals the scalar conversion, bit for bit.
void expect_rounding_equals_scalar(void (*round)(const float*, float*, int64_t)) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x;
  for (int i = 0; i < 997; ++i) x.push_back(g(rng) * std::pow(10.0f, static_cast<float>(i % 13 - 8)));
  // Ties (exact midpoints between f16 neighbours), the overflow edge, subnormals, specials.
  for (float v : {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65504.0f, 65519.0f, 65520.0f, -70000.0f, 5.96e-8f, 2.98e-8f,
                  1e-7f, -0.0f, INFINITY, -INFINITY})
    x.push_back(v);
  // Every length up to 40, so the tails of both vector widths are covered.
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{9}, int64_t{15}, int64_t{17}, int64_t{40}, static_cast<int64_t>(x.size())}) {
    std::vector<float> y(x.size(), 12345.0f);
    round(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = f16_to_f32(f32_to_f16(x[i]));
      ASSERT_EQ(std::signbit(y[i]), std::signbit(want)) << x[i];
      ASSERT_TRUE(y[i] == want || (std::isnan(y[i]) && std::isnan(want))) << x[i] << ": " << y[i] << " vs " << want;
    }
    for (size_t i = static_cast<size_t>(n); i < y.size(); ++i) ASSERT_EQ(y[i], 12345.0f) << "wrote past n = " << n;
  }
}

TEST(PackedF16, ActivationRoundingEqualsScalarConversion) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512";
  expect_rounding_equals_scalar(f16_round_avx512);
}

TEST(PackedF16, Avx2ActivationRoundingEqualsScalarConversion) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no AVX2 / F16C";
  expect_rounding_equals_scalar(f16_round_avx2);
}

// Inputs for the bf16 roundings: values across 13 decades, then ties, the overflow edge, subnormals,
// NaNs (quiet and signalling), infinities and -0.
std::vector<float> bf16_rounding_inputs() {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x;
  for (int i = 0; i < 997; ++i) x.push_back(g(rng) * std::pow(10.0f, static_cast<float>(i % 13 - 8)));
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x7f7f8000u, 0x00008000u, 0x00018000u,
                        0x80000001u, 0x7fc00000u, 0x7f800001u, 0xff812345u, 0x7f800000u, 0xff800000u, 0x80000000u})
    x.push_back(std::bit_cast<float>(bits));
  return x;
}

// The AVX-512 bf16 rounding of BF16 products' activations equals the scalar conversion (f32_to_bf16,
// ggml's) bit for bit, ties, subnormals, NaN and the overflow edge included, and zero-fills the padding.
TEST(PackedBf16, ActivationRoundingEqualsScalarConversion) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) GTEST_SKIP() << "no AVX-512";
  const std::vector<float> x = bf16_rounding_inputs();
  for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{40}, static_cast<int64_t>(x.size())}) {
    const int64_t padded = (n + 31) / 32 * 32;
    std::vector<uint16_t> y(padded + 8, 0xabcd);
    bf16_round_avx512(x.data(), y.data(), n, padded);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], f32_to_bf16(x[i])) << std::bit_cast<uint32_t>(x[i]);
    for (int64_t i = n; i < padded; ++i) ASSERT_EQ(y[i], 0) << "padding at " << i;
    for (size_t i = padded; i < y.size(); ++i) ASSERT_EQ(y[i], 0xabcd) << "wrote past the padding, n = " << n;
  }
}

// The AVX2 bf16 rounding (BF16 products' activations there, kept as floats) equals the scalar
// conversion bit for bit: ties, subnormals, NaN (made quiet), the overflow edge, every tail length.
TEST(PackedBf16, Avx2ActivationRoundingEqualsScalarConversion) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2";
  const std::vector<float> x = bf16_rounding_inputs();
  for (int64_t n = 1; n <= static_cast<int64_t>(x.size()); n += n < 40 ? 1 : static_cast<int64_t>(x.size()) - 40) {
    std::vector<float> y(x.size(), 12345.0f);
    bf16_round_avx2(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t want = uint32_t{f32_to_bf16(x[i])} << 16;
      ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), want) << std::bit_cast<uint32_t>(x[i]);
    }
    for (size_t i = static_cast<size_t>(n); i < y.size(); ++i) ASSERT_EQ(y[i], 12345.0f) << "wrote past n = " << n;
  }
}

// The AVX-512 packer of the 32-element activation layout (packed.h) gives, byte for byte, what the
// block-at-a-time AVX-512 Q8_0 quantizer and the layout's scalar loop gave: quants, f32 scales, -sum x
// 2^shift corrections; for block counts around its groups of 16, and blocks of zeros, NaN (-128, where
// the scalar quantizer's cast gives 0), infinities, huge and tiny values.
TEST(PackedActivation, Avx512Q8_0LayoutEqualsScalar) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) GTEST_SKIP() << "no AVX-512";
  const FromFloatFn blockwise = find_act_quantizer(DType::Q8_0, Isa::kAvx512);
  ASSERT_NE(blockwise, nullptr);
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (int64_t nb : {1, 5, 15, 16, 17, 31, 33, 152}) {
    std::vector<float> x(nb * 32);
    for (int64_t i = 0; i < nb * 32; ++i) x[i] = g(rng) * std::pow(10.0f, static_cast<float>((i / 32) % 9 - 4));
    if (nb > 4) {
      std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
      x[64 + 3] = NAN;                                 // NaN among finite values
      x[96 + 7] = INFINITY;
      x[128] = -3e38f, x[129] = 1e-40f;  // huge and subnormal
    }
    std::vector<BlockQ8_0> ref(nb);
    blockwise(x.data(), ref.data(), nb * 32);
    for (int shift : {3, 4, 7}) {
      std::vector<uint8_t> got(nb * 40 + 64, 0xcd);
      pack_act_q8_0_avx512(x.data(), nb, shift, got.data());
      for (int64_t b = 0; b < nb; ++b) {
        int32_t sum = 0;
        for (int e = 0; e < 32; ++e) {
          ASSERT_EQ(static_cast<int8_t>(got[b * 32 + e]), ref[b].qs[e]) << "nb " << nb << " block " << b << " elem " << e;
          sum += ref[b].qs[e];
        }
        float dx;
        int32_t cx;
        std::memcpy(&dx, got.data() + nb * 32 + 4 * b, 4);
        std::memcpy(&cx, got.data() + nb * 36 + 4 * b, 4);
        EXPECT_EQ(std::bit_cast<uint32_t>(dx), std::bit_cast<uint32_t>(f16_to_f32(ref[b].d))) << "nb " << nb << " block " << b;
        EXPECT_EQ(cx, -(sum * (1 << shift))) << "nb " << nb << " block " << b;
      }
      for (size_t i = nb * 40; i < got.size(); ++i) ASSERT_EQ(got[i], 0xcd) << "wrote past the layout, nb " << nb;
    }
    // Q4_1 / Q5_1: the same quants and scales, and the Q8_1 quantizer's sums (s) in place of the corrections.
    const FromFloatFn blockwise1 = find_act_quantizer(DType::Q8_1, Isa::kAvx512);
    ASSERT_NE(blockwise1, nullptr);
    std::vector<BlockQ8_1> ref1(nb);
    blockwise1(x.data(), ref1.data(), nb * 32);
    std::vector<uint8_t> got(nb * 40 + 64, 0xcd);
    pack_act_q8_0_avx512(x.data(), nb, 0, got.data(), true);
    for (int64_t b = 0; b < nb; ++b) {
      for (int e = 0; e < 32; ++e) ASSERT_EQ(static_cast<int8_t>(got[b * 32 + e]), ref1[b].qs[e]) << "block " << b;
      float dx, sx;
      std::memcpy(&dx, got.data() + nb * 32 + 4 * b, 4);
      std::memcpy(&sx, got.data() + nb * 36 + 4 * b, 4);
      EXPECT_EQ(std::bit_cast<uint32_t>(dx), std::bit_cast<uint32_t>(f16_to_f32(ref1[b].d))) << "nb " << nb << " block " << b;
      if (nb > 4 && b == 2) continue;  // NaN's quant saturates here, the quantizer's s sums it otherwise
      EXPECT_EQ(std::bit_cast<uint32_t>(sx), std::bit_cast<uint32_t>(f16_to_f32(ref1[b].s))) << "nb " << nb << " block " << b;
    }
    for (size_t i = nb * 40; i < got.size(); ++i) ASSERT_EQ(got[i], 0xcd) << "wrote past the layout, nb " << nb;
  }
}

// Rows read back from a packed copy (a tied embedding) equal the rows of the original, bit for bit,
// in full and partial row groups.
TEST(PackedRows, ReadBackEqualsTheUnpackedRows) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::F16, DType::BF16}) {
    // (F16, BF16: a partial step in the copy)
    const int64_t n_in = t == DType::F16 || t == DType::BF16 ? 100 : 96, n_out = 37;
    if (!can_pack(WeightView{t, reinterpret_cast<const void*>(16), n_in, n_out})) GTEST_SKIP() << "no packed kernels";
    std::vector<float> wf(n_in * n_out);
    for (auto& v : wf) v = g(rng);
    const size_t rb = row_bytes(t, n_in);
    std::vector<uint8_t> w(rb * n_out);
    for (int64_t r = 0; r < n_out; ++r) dtype_traits(t)->from_float(wf.data() + r * n_in, w.data() + r * rb, n_in);
    PackedStore store;
    const WeightView raw{t, w.data(), n_in, n_out};
    const WeightView pv = store.add(raw);
    ASSERT_TRUE(pv.packed);
    EXPECT_TRUE(packed_rows_readable(t));
    std::vector<float> want(n_in), got(n_in);
    for (int pass = 0; pass < 2; ++pass) {  // before and after a background copy exists
      if (pass == 1) store.wait();
      for (int64_t r = 0; r < n_out; ++r) {
        get_row(raw, r, want.data());
        get_row(pv, r, got.data());
        for (int64_t i = 0; i < n_in; ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << dtype_name(t) << " pass " << pass << " row " << r << " element " << i;
      }
    }
    EXPECT_THROW(get_row(pv, n_out, got.data()), Error);
  }
}

// A copy made while every core is busy (a server loaded from its start): the idle-priority thread gets
// almost no time, and from helper_after (here 200 ms; kIdleGrace by default) on the helper at normal
// priority claims slices next to it. The copy is published, and its products have the rows' bits. (How long the idle thread alone
// would take depends on the scheduler; measured in BENCHMARKS.md, not here.)
TEST(PackedStoreBackground, CopyFinishesWhileEveryCoreIsBusy) {
  if (!copied_in_background(DType::Q4_0)) GTEST_SKIP() << "Q4_0 is packed at load on this CPU";
  const int64_t n_in = 256, n_out = 16 * 256 * 6 + 5;  // 7 slices, the last partial
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> wf(n_in * n_out), x(n_in * 3);
  for (auto& v : wf) v = g(rng);
  for (auto& v : x) v = g(rng);
  std::vector<uint8_t> w(row_bytes(DType::Q4_0, n_in) * n_out);
  dtype_traits(DType::Q4_0)->from_float(wf.data(), w.data(), n_in * n_out);
  ThreadPool pool(1);
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i)
    busy.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  PackedStore store(std::chrono::milliseconds(200));
  const WeightView pv = store.add(WeightView{DType::Q4_0, w.data(), n_in, n_out});
  ASSERT_NE(pv.repacked, nullptr);
  WeightView rows = pv;
  rows.repacked = nullptr;
  std::vector<float> y_rows(n_out * 3), y(n_out * 3);
  matmul(pool, rows, x.data(), 3, y_rows.data());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pv.repacked->load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool published = pv.repacked->load() != nullptr;
  stop = true;
  for (auto& t : busy) t.join();
  ASSERT_TRUE(published) << "the copy was not made within 60 s with every core busy";
  store.wait();
  matmul(pool, pv, x.data(), 3, y.data());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(y_rows[i]), std::bit_cast<uint32_t>(y[i])) << "rows != copy at " << i;
}

// finish(pool): the pool's threads make every copy still missing, and it returns only once all are
// published, with the rows' bits (a second call returns at once). The copies (about 20 MB) are queued
// back to back and finish is called at once, so the background threads alone cannot have made them.
TEST(PackedStoreBackground, FinishMakesEveryCopyWithThePool) {
  if (!copied_in_background(DType::Q4_0)) GTEST_SKIP() << "the quantized types are packed at load on this CPU";
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  struct W {
    DType type;
    int64_t n_in, n_out;
    std::vector<uint8_t> bytes;
  };
  std::vector<W> ws = {{DType::Q4_0, 512, 16 * 1024 + 3, {}}, {DType::Q8_0, 1024, 8 * 1024, {}},
                       {DType::Q4_K, 768, 4096 + 7, {}}, {DType::Q6_K, 512, 2048, {}}};
  std::vector<float> x(1024 * 2);
  for (auto& v : x) v = g(rng);
  for (W& w : ws) {
    std::vector<float> wf(w.n_in * w.n_out);
    for (auto& v : wf) v = g(rng);
    w.bytes.resize(row_bytes(w.type, w.n_in) * w.n_out);
    dtype_traits(w.type)->from_float(wf.data(), w.bytes.data(), w.n_in * w.n_out);
  }
  ThreadPool pool(2);
  PackedStore store;
  std::vector<WeightView> views;
  for (W& w : ws) {
    views.push_back(store.add(WeightView{w.type, w.bytes.data(), w.n_in, w.n_out}));
    ASSERT_NE(views.back().repacked, nullptr) << dtype_name(w.type);
  }
  store.finish(pool);
  for (size_t i = 0; i < ws.size(); ++i) {
    ASSERT_NE(views[i].repacked->load(), nullptr) << dtype_name(ws[i].type) << ": finish returned before its copy";
    WeightView rows = views[i];
    rows.repacked = nullptr;  // the in-place kernels on the file's rows
    std::vector<float> y_rows(ws[i].n_out * 2), y(ws[i].n_out * 2);
    matmul(pool, rows, x.data(), 2, y_rows.data());
    matmul(pool, views[i], x.data(), 2, y.data());
    for (size_t j = 0; j < y.size(); ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(y_rows[j]), std::bit_cast<uint32_t>(y[j])) << dtype_name(ws[i].type) << " at " << j;
  }
  store.finish(pool);
}

// The loader's norm weights and biases: copies the store owns (out of the file mapping), 64-byte
// aligned, counted in bytes().
TEST(PackedStoreFloats, CopyFloatsIsAnAlignedCountedCopy) {
  std::vector<float> v(37);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i) - 3.0f;
  PackedStore store;
  const uint64_t before = store.bytes();
  const float* c = store.copy_floats(v.data(), static_cast<int64_t>(v.size()));
  ASSERT_NE(c, v.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u);
  EXPECT_EQ(std::memcmp(c, v.data(), v.size() * sizeof(float)), 0);
  EXPECT_EQ(store.bytes(), before + v.size() * sizeof(float));
  v[0] = 99.0f;  // a copy, not a view
  EXPECT_EQ(c[0], -3.0f);
}

// Many copies, some larger than the store's blocks of floats, between weights queued for the
// background copy (the loader's order): each stays aligned and intact.
TEST(PackedStoreFloats, ManyCopiesBetweenWeightsStayIntact) {
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<uint8_t> w(row_bytes(DType::Q8_0, 256) * 48);
  for (auto& b : w) b = static_cast<uint8_t>(rng() % 64);
  PackedStore store;
  std::vector<std::vector<float>> src;
  std::vector<const float*> copies;
  for (int64_t n : {1, 896, 128, 4864, 16, 40000, 3, 20000, 17000, 64}) {
    store.add(WeightView{DType::Q8_0, w.data(), 256, 48});
    src.emplace_back(n);
    for (float& x : src.back()) x = g(rng);
    copies.push_back(store.copy_floats(src.back().data(), n));
  }
  store.wait();
  for (size_t k = 0; k < src.size(); ++k) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(copies[k]) % 64, 0u) << k;
    EXPECT_EQ(std::memcmp(copies[k], src[k].data(), src[k].size() * sizeof(float)), 0) << k;
  }
}

TEST(PackedErrors, GetRowRefusesUnreadablePackedViewsAndUnpackableTypesStayUnpacked) {
  std::vector<uint8_t> w(row_bytes(DType::Q4_K, 256) * 3, 0);
  PackedStore store;
  const WeightView v = store.add(WeightView{DType::Q4_K, w.data(), 256, 3});
  std::vector<float> row(256);
  EXPECT_FALSE(packed_rows_readable(DType::Q4_K));
  if (v.packed) {
    EXPECT_THROW(get_row(v, 0, row.data()), Error);
  }
  // F32 weights have no packed kernels (their products take the per-row kernels).
  std::vector<float> f(256 * 2, 0.0f);
  EXPECT_FALSE(store.add(WeightView{DType::F32, f.data(), 256, 2}).packed);
}


// The AVX2 kernels compiled with AVX-VNNI (packed_avxvnni.cpp: vpdpbusd for the 32-element types) give
// the plain AVX2 kernels' bits: every quantized type, one token (both halves in one pass), two, three
// and four tokens, a full row group and a partial one, short and long rows.
TEST(PackedAvxVnni, SameBitsAsAvx2) {
  if (!avxvnni_supported()) GTEST_SKIP() << "no AVX-VNNI here";
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const int64_t bs = dtype_traits(t)->block_size;
    for (int64_t nb : {int64_t{1}, bs == 32 ? int64_t{37} : int64_t{3}}) {
      const int64_t n_in = bs * nb, n_out = 21, n_tok = 4;
      std::vector<float> wf(n_in * n_out), x(n_in * n_tok);
      for (auto& v : wf) v = g(rng);
      for (auto& v : x) v = g(rng) * 3;
      std::vector<uint8_t> w(row_bytes(t, n_in) * n_out);
      make_weights(t, wf.data(), n_in, n_out, w.data());
      const WeightView wv{t, w.data(), n_in, n_out};
      ASSERT_TRUE(can_pack(wv)) << dtype_name(t);
      std::vector<uint8_t> packed(packed_bytes(wv));
      pack_weight(wv, packed.data());
      const size_t act_row = packed_act_row_bytes(t, n_in), group = packed_group_bytes(t, n_in);
      std::vector<uint8_t> xb(act_row * n_tok);
      for (int64_t k = 0; k < n_tok; ++k) pack_activation(t, x.data() + k * n_in, n_in, xb.data() + k * act_row);
      // y[(kernel set, tokens)]: every group's outputs for that many tokens.
      auto run = [&](const PackedKernels& k, int tokens) {
        std::vector<float> y(n_out * tokens, NAN);
        for (int64_t gi = 0; gi * kPackRows < n_out; ++gi) {
          const int rows = static_cast<int>(std::min<int64_t>(kPackRows, n_out - gi * kPackRows));
          const uint8_t* gp = packed.data() + gi * group;
          float* out = y.data() + gi * kPackRows;
          if (tokens == 1) k.dot1(nb, gp, xb.data(), act_row, out, n_out, rows);
          else if (tokens == k.n_multi) k.dotn(nb, gp, xb.data(), act_row, out, n_out, rows);
          else k.dotn_rest(nb, gp, xb.data(), act_row, out, n_out, rows, tokens);
        }
        return y;
      };
      const PackedKernels plain = packed_kernels_avx2(t), vnni = packed_kernels_avxvnni(t);
      ASSERT_EQ(plain.n_multi, n_tok);
      ASSERT_EQ(vnni.n_multi, n_tok);
      for (int tokens = 1; tokens <= n_tok; ++tokens) {
        const std::vector<float> a = run(plain, tokens), b = run(vnni, tokens);
        for (size_t i = 0; i < a.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i]))
              << dtype_name(t) << " n_in=" << n_in << " tokens=" << tokens << " at " << i << ": " << a[i] << " vs " << b[i];
      }
    }
  }
}

// The products take those kernels where the CPU path is AVX2 and the CPU has AVX-VNNI, unless
// IGNIS_AVXVNNI=0.
TEST(PackedAvxVnni, TakenOnAvx2WhereTheCpuHasIt) {
  const char* env = std::getenv("IGNIS_AVXVNNI");
  const bool want = best_isa() == Isa::kAvx2 && avxvnni_supported() && !(env && std::string(env) == "0");
  EXPECT_EQ(use_avxvnni(), want);
  if (best_isa() != Isa::kAvx2) GTEST_SKIP() << "the CPU path is " << isa_name();
  for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q4_K}) {
    const PackedKernels k = packed_kernels(t);
    EXPECT_EQ(k.dot1, (want ? packed_kernels_avxvnni(t) : packed_kernels_avx2(t)).dot1) << dtype_name(t);
  }
}

}  // namespace
}  // namespace ignis::cpu
