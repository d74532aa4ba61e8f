// The tiled attention kernels (attention_kernel.h) against a naive float64 softmax attention, per ISA
// path this CPU has and per cache type (f16 and f32 pages), over head widths with and without 16-lane tails, chunk tails (positions not a
// multiple of 16), pages that cut chunks, several query heads per tile, and score ranges that
// overflow a naive exp; and tile invariance: a row's output is bit-identical whatever tile holds it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed.h"
#include "model/blocks.h"
#include "core/fp16.h"
#include "model/attention_kernel.h"

namespace ignis::model::test {
namespace {

struct Case {
  int64_t head_dim, n_heads, n_rows, n_kv0, page;
  float scale;
};

struct Kernel {
  const char* name;
  AttnTileFn fn;
  int64_t width_step;  // head_dim must be a multiple of it
  bool f16_only = false;
  // Max error relative to the naive attention's outputs. AMX carries Q and the scores' products to 16
  // significant bits (attention_amx.cpp); the FMA kernels take f32 Q whole.
  double tolerance = 2e-6;
  int64_t (*scratch_floats)(const AttnTile&) = attn_scratch_floats;
  bool takes(int64_t head_dim, bool f16) const { return head_dim % width_step == 0 && (f16 || !f16_only); }
};

std::vector<Kernel> kernels() {
  __builtin_cpu_init();
  std::vector<Kernel> k{{"portable", attend_tile_portable, 1}};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) k.push_back({"avx2", attend_tile_avx2, 1});
  if (__builtin_cpu_supports("avx512f")) k.push_back({"avx512", attend_tile_avx512, 16});
  if (cpu::amx_bf16_supported()) k.push_back({"amx", attend_tile_amx, 32, true, 4e-5, attn_amx_scratch_floats});
  return k;
}

// K/V of one KV head at kv_off inside rows of `width`, as f16 (the cache's default) or f32, in pages
// handed out in reverse order (unused rows NaN).
struct Pages {
  bool f16;
  std::vector<std::vector<uint16_t>> k16, v16;
  std::vector<std::vector<float>> k32, v32;
  std::vector<const void*> kp, vp;
  Pages(const std::vector<float>& keys, const std::vector<float>& vals, int64_t n, int64_t width, int64_t page,
        bool f16_pages = true)
      : f16(f16_pages) {
    const int64_t n_pages = (n + page - 1) / page;
    k16.assign(f16 ? n_pages : 0, std::vector<uint16_t>(page * width, 0x7e00));
    v16 = k16;
    k32.assign(f16 ? 0 : n_pages, std::vector<float>(page * width, NAN));
    v32 = k32;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t e = 0; e < width; ++e) {
        const int64_t pg = n_pages - 1 - j / page, at = (j % page) * width + e;
        if (f16) {
          k16[pg][at] = f32_to_f16(keys[j * width + e]);
          v16[pg][at] = f32_to_f16(vals[j * width + e]);
        } else {
          k32[pg][at] = keys[j * width + e];
          v32[pg][at] = vals[j * width + e];
        }
      }
    for (int64_t p = 0; p < n_pages; ++p) {
      kp.push_back(f16 ? static_cast<const void*>(k16[n_pages - 1 - p].data()) : k32[n_pages - 1 - p].data());
      vp.push_back(f16 ? static_cast<const void*>(v16[n_pages - 1 - p].data()) : v32[n_pages - 1 - p].data());
    }
  }
};

struct Problem {
  Case c;
  int64_t width, kv_off, q_stride, n_kv_max;
  std::vector<float> keys, vals, q;
  Problem(const Case& cs, uint32_t seed, float spread) : c(cs) {
    width = (c.n_heads + 1) * c.head_dim;  // the tile's KV head sits at an offset inside wider rows
    kv_off = c.head_dim;
    q_stride = c.n_heads * c.head_dim + 5;
    n_kv_max = c.n_kv0 + c.n_rows - 1;
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    keys.resize(n_kv_max * width);
    vals.resize(keys.size());
    q.resize(c.n_rows * q_stride);
    // K and V hold f16 values, so the naive reference sees what the kernels read.
    for (float& x : keys) x = f16_to_f32(f32_to_f16(nd(rng) * spread));
    for (float& x : vals) x = f16_to_f32(f32_to_f16(nd(rng)));
    for (float& x : q) x = nd(rng);
  }
  AttnTile tile(const Pages& p, float* out, int64_t row0, int64_t n_rows) const {
    AttnTile t;
    t.head_dim = c.head_dim;
    t.scale = c.scale;
    t.k_pages = p.kp.data();
    t.v_pages = p.vp.data();
    t.kv_f16 = p.f16;
    t.page = c.page;
    t.width = width;
    t.kv_off = kv_off;
    t.q = q.data() + row0 * q_stride;
    t.out = out + row0 * q_stride;
    t.q_stride = q_stride;
    t.n_rows = n_rows;
    t.n_heads = c.n_heads;
    t.n_kv0 = c.n_kv0 + row0;
    return t;
  }
};

void run(const Kernel& k, const AttnTile& t) {
  std::vector<float> scratch(k.scratch_floats(t) + 16);
  auto* s = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
  k.fn(t, s);
}

// Max |out - naive| over the problem, relative to max |naive| (outputs are convex mixes of V rows).
double max_error(const Problem& pb, const std::vector<float>& out) {
  const Case& c = pb.c;
  double err = 0;
  for (int64_t r = 0; r < c.n_rows; ++r)
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const int64_t n_kv = c.n_kv0 + r;
      const float* qv = pb.q.data() + r * pb.q_stride + h * c.head_dim;
      std::vector<double> s(n_kv);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < n_kv; ++j) {
        double d = 0;
        for (int64_t e = 0; e < c.head_dim; ++e) d += double(qv[e]) * pb.keys[j * pb.width + pb.kv_off + e];
        s[j] = d * c.scale;
        mx = std::max(mx, s[j]);
      }
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t e = 0; e < c.head_dim; ++e) {
        double o = 0;
        for (int64_t j = 0; j < n_kv; ++j) o += s[j] / sum * pb.vals[j * pb.width + pb.kv_off + e];
        err = std::max(err, std::abs(o - out[r * pb.q_stride + h * c.head_dim + e]));
      }
    }
  return err;
}

const Case kCases[] = {
    {64, 7, 8, 1, 16, 0.125f},     // prefill from position 0 (Qwen2.5-0.5B's group of 7)
    {64, 7, 1, 100, 16, 0.125f},   // decode, chunk tail (one-row tiles read f16 rows in place)
    {128, 2, 1, 37, 3, 0.0884f},   // decode over pages of 3
    {256, 3, 1, 40, 16, 0.0625f},  // decode, wide heads
    {128, 2, 5, 37, 3, 0.0884f},   // pages of 3 cut every chunk
    {80, 3, 3, 50, 64, 0.111f},    // 16-lane multiple, not a power of two
    {48, 1, 9, 16, 7, 0.144f},     // rows crossing a chunk boundary
    {16, 4, 2, 17, 5, 0.25f},
    {20, 2, 4, 30, 16, 0.22f},     // width not a multiple of 16 (portable and AVX2 only)
    {256, 1, 2, 33, 32, 0.0625f},
    {256, 3, 2, 40, 16, 0.0625f},  // wide heads, several per tile (one V pass per head)
    {192, 2, 3, 20, 16, 0.072f},
};

TEST(AttentionKernel, MatchesNaiveSoftmaxPerIsa) {
  uint32_t seed = 1;
  for (const Case& c : kCases)
    for (const Kernel& k : kernels())
      for (const bool f16 : {true, false}) {
        if (!k.takes(c.head_dim, f16)) continue;
        const Problem pb(c, seed++, 1.0f);
        const Pages pages(pb.keys, pb.vals, pb.n_kv_max, pb.width, c.page, f16);
        std::vector<float> out(c.n_rows * pb.q_stride, 0.0f);
        run(k, pb.tile(pages, out.data(), 0, c.n_rows));
        EXPECT_LT(max_error(pb, out), k.tolerance) << k.name << (f16 ? " f16" : " f32") << " head_dim " << c.head_dim
                                            << " n_kv0 " << c.n_kv0;
      }
}

// The model's choice stays under IGNIS_ISA as the products do (model_avx2 runs this binary with
// IGNIS_ISA=avx2; its model and golden tests then attend with the AVX2 kernel).
TEST(AttentionKernel, ChoiceStaysUnderTheIsaCap) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx512 = __builtin_cpu_supports("avx512f");
  for (const int64_t head_dim : {64, 128, 72})
    for (const bool f16 : {true, false}) {
      const std::string name = attention_kernel_name(head_dim, f16);
      switch (cpu::isa_cap()) {
        case cpu::Isa::kScalar:
          EXPECT_EQ(name, "portable");
          break;
        case cpu::Isa::kAvx2:
          EXPECT_EQ(name, avx2 ? "avx2" : "portable");
          break;
        case cpu::Isa::kAvx512:
          if (avx512 && head_dim % 16 == 0) {
            EXPECT_TRUE(name == "avx512" || name == "amx") << name;
          }
          if (!avx512) {
            EXPECT_EQ(name, avx2 ? "avx2" : "portable");
          }
          break;
      }
    }
  const char* env = std::getenv("IGNIS_ISA");
  if (env && std::string(env) == "avx2") {
    EXPECT_EQ(cpu::isa_cap(), cpu::Isa::kAvx2);
  }
}

// The f16 pages are widened exactly: on the same values, f16 and f32 pages give the same bits.
TEST(AttentionKernel, F16PagesGiveTheBitsOfF32PagesHoldingTheSameValues) {
  uint32_t seed = 100;
  for (const Case& c : kCases)
    for (const Kernel& k : kernels()) {
      if (!k.takes(c.head_dim, false)) continue;
      const Problem pb(c, seed++, 1.0f);
      const Pages p16(pb.keys, pb.vals, pb.n_kv_max, pb.width, c.page, true);
      const Pages p32(pb.keys, pb.vals, pb.n_kv_max, pb.width, c.page, false);
      std::vector<float> a(c.n_rows * pb.q_stride, 0.0f), b(a.size(), 0.0f);
      run(k, pb.tile(p16, a.data(), 0, c.n_rows));
      run(k, pb.tile(p32, b.data(), 0, c.n_rows));
      EXPECT_EQ(a, b) << k.name << " head_dim " << c.head_dim << " n_kv0 " << c.n_kv0;
    }
}

TEST(AttentionKernel, LongContextWithScoresBeyondExpRange) {
  // Scores spread over hundreds: a softmax without the running max would overflow; 3000 positions
  // exercise the rescaling of many chunks.
  const Case c{64, 2, 3, 3000, 16, 0.125f};
  for (const Kernel& k : kernels()) {
    const Problem pb(c, 77, 40.0f);
    const Pages pages(pb.keys, pb.vals, pb.n_kv_max, pb.width, c.page);
    std::vector<float> out(c.n_rows * pb.q_stride, 0.0f);
    run(k, pb.tile(pages, out.data(), 0, c.n_rows));
    for (int64_t r = 0; r < c.n_rows; ++r)
      for (int64_t e = 0; e < c.n_heads * c.head_dim; ++e) ASSERT_TRUE(std::isfinite(out[r * pb.q_stride + e])) << k.name;
    EXPECT_LT(max_error(pb, out), 10 * k.tolerance) << k.name;
  }
}

// A row's output is bit-identical whatever tile holds it. And the heads of a tile can be cut into slices
// (attend_spans splits a KV head's group across threads) while a kernel may take a row's heads together
// (AVX2: in pairs; AVX-512: scores in pairs, softmax and values in fours; AMX: groups of 16 vectors, with
// the softmax down the score tile for full groups and per vector for small ones, and V read in place for
// a single small group): a head's output is bit-identical alone, in a slice, and among all of them.
TEST(AttentionKernel, ResultDoesNotDependOnItsTileOrHeadSlice) {
  // Rows go through the AVX-512 kernel in groups of at least 8 vectors that see the same positions of a
  // chunk: 2, 4 and 8 rows here, with the groups cut by the causal edge.
  const Case cases[] = {{64, 5, 11, 20, 16, 0.125f}, {128, 2, 12, 40, 7, 0.0884f}, {64, 1, 33, 5, 16, 0.125f}};
  for (const Case& c : cases)
    for (const Kernel& k : kernels()) {
      if (!k.takes(c.head_dim, true)) continue;
      const Problem pb(c, 5, 1.0f);
      const Pages pages(pb.keys, pb.vals, pb.n_kv_max, pb.width, c.page);
      std::vector<float> whole(c.n_rows * pb.q_stride, 0.0f), split(whole.size(), 0.0f), single(whole.size(), 0.0f);
      run(k, pb.tile(pages, whole.data(), 0, c.n_rows));
      run(k, pb.tile(pages, split.data(), 0, 4));
      run(k, pb.tile(pages, split.data(), 4, c.n_rows - 4));
      for (int64_t r = 0; r < c.n_rows; ++r) run(k, pb.tile(pages, single.data(), r, 1));
      EXPECT_EQ(whole, split) << k.name << " head_dim " << c.head_dim;
      EXPECT_EQ(whole, single) << k.name << " head_dim " << c.head_dim;

      std::vector<float> alone(whole.size(), 0.0f), sliced(whole.size(), 0.0f);
      auto heads = [&](float* out, int64_t h0, int64_t n) {
        AttnTile t = pb.tile(pages, out, 0, c.n_rows);
        t.q += h0 * c.head_dim;
        t.out += h0 * c.head_dim;
        t.n_heads = n;
        run(k, t);
      };
      for (int64_t h = 0; h < c.n_heads; ++h) heads(alone.data(), h, 1);
      heads(sliced.data(), 0, 1);
      heads(sliced.data(), 1, c.n_heads - 1);
      EXPECT_EQ(whole, alone) << k.name << " head_dim " << c.head_dim;
      EXPECT_EQ(whole, sliced) << k.name << " head_dim " << c.head_dim;
    }
}

}  // namespace
}  // namespace ignis::model::test
