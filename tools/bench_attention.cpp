// ignis-bench-attention: the attention tile kernels (model/attention_kernel.h) this CPU has, side by
// side on one KV head of an f16 cache, in ns per query vector and 16-position chunk (best of the
// repetitions, kernels alternated). Prefill: a causal prompt of CTX positions in tiles of the rows each
// kernel gets from attention.cpp; decode: one row at position CTX, over each of COPIES caches in turn
// (as a token's layers: with enough copies the K/V rows come from DRAM, not the caches).
//   ignis-bench-attention HEAD_DIM HEADS CTX [REPS] [COPIES]   (HEADS: the query heads sharing the KV head)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backend/cpu/packed.h"
#include "core/fp16.h"
#include "model/attention_kernel.h"

using namespace ignis;
using namespace ignis::model;

namespace {

struct Kernel {
  const char* name;
  AttnTileFn fn;
  int64_t rows;  // prefill rows per tile (attention.cpp's choice)
  int64_t (*scratch_floats)(const AttnTile&) = attn_scratch_floats;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: ignis-bench-attention HEAD_DIM HEADS CTX [REPS] [COPIES]\n");
    return 2;
  }
  const int64_t d = std::atoll(argv[1]), nh = std::atoll(argv[2]), ctx = std::atoll(argv[3]);
  const int reps = argc > 4 ? std::atoi(argv[4]) : 20;
  const int64_t copies = argc > 5 ? std::atoll(argv[5]) : 1;
  if (d <= 0 || d % 32 != 0 || d > 256 || nh <= 0 || nh > 64 || ctx <= 0 || ctx > (1 << 20) || reps <= 0 ||
      copies <= 0 || copies > 4096) {
    std::fprintf(stderr, "HEAD_DIM must be a multiple of 32 up to 256, HEADS 1..64, CTX 1..2^20, REPS > 0, "
                         "COPIES 1..4096\n");
    return 2;
  }
  const int64_t width = d, page = 256, n_pages = (ctx + page) / page;
  const double need = double(copies + 1) * 2 * n_pages * page * width * 2 + 2.0 * ctx * nh * d * 4;
  const double have = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  if (need > have) {
    std::fprintf(stderr, "%lld copies of %lld positions need %.1f GiB, more than this machine's %.1f GiB\n",
                 static_cast<long long>(copies), static_cast<long long>(ctx), need / (1 << 30), have / (1 << 30));
    return 2;
  }
  __builtin_cpu_init();
  std::vector<Kernel> kernels;
  if (__builtin_cpu_supports("avx512f")) kernels.push_back({"avx512", attend_tile_avx512, attn_avx512_tile_rows(nh, d)});
  if (cpu::amx_bf16_supported()) kernels.push_back({"amx", attend_tile_amx, 32, attn_amx_scratch_floats});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) kernels.push_back({"avx2", attend_tile_avx2, 8});
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 1);
  using Pages = std::vector<std::vector<uint16_t>>;
  Pages kp(n_pages, std::vector<uint16_t>(page * width)), vp = kp;
  for (auto* pages : {&kp, &vp})
    for (auto& p : *pages)
      for (auto& x : p) x = f32_to_f16(nd(rng));
  // COPIES caches holding the same values, each in memory of its own.
  std::vector<Pages> kset(copies, kp), vset(copies, vp);
  std::vector<std::vector<const void*>> kptr(copies), vptr(copies);
  for (int64_t c = 0; c < copies; ++c)
    for (int64_t p = 0; p < n_pages; ++p) {
      kptr[c].push_back(kset[c][p].data());
      vptr[c].push_back(vset[c][p].data());
    }
  const int64_t q_stride = nh * d;
  std::vector<float> q(ctx * q_stride), out(ctx * q_stride), scratch;
  for (auto& x : q) x = nd(rng);
  auto tile = [&](int64_t r0, int64_t n_rows, int64_t n_kv0, int64_t c = 0) {
    AttnTile t;
    t.head_dim = d;
    t.scale = 1.0f / 8;
    t.k_pages = kptr[c].data();
    t.v_pages = vptr[c].data();
    t.page = page;
    t.width = width;
    t.q = q.data() + r0 * q_stride;
    t.out = out.data() + r0 * q_stride;
    t.q_stride = q_stride;
    t.n_rows = n_rows;
    t.n_heads = nh;
    t.n_kv0 = n_kv0;
    return t;
  };
  auto call = [&](const Kernel& k, const AttnTile& t) {
    if (scratch.size() < static_cast<size_t>(k.scratch_floats(t) + 16)) scratch.resize(k.scratch_floats(t) + 16);
    k.fn(t, reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63}));
  };
  // Returns the pairs (vector, chunk) one pass computes.
  auto pass = [&](const Kernel& k, bool decode) {
    double pairs = 0;
    if (decode) {
      for (int64_t c = 0; c < copies; ++c) call(k, tile(0, 1, ctx, c));
      return double(copies * nh * ((ctx + 15) / 16));
    }
    for (int64_t r0 = 0; r0 < ctx; r0 += k.rows) {
      const int64_t n = std::min(k.rows, ctx - r0);
      call(k, tile(r0, n, r0 + 1));
      for (int64_t r = 0; r < n; ++r) pairs += double(nh * ((r0 + r + 16) / 16));
    }
    return pairs;
  };
  std::printf("head_dim %lld, %lld query heads per KV head, %lld positions: ns per (query vector, 16-position chunk)\n",
              static_cast<long long>(d), static_cast<long long>(nh), static_cast<long long>(ctx));
  for (const bool decode : {false, true}) {
    std::vector<double> best(kernels.size(), 1e30);
    for (int r = 0; r < reps; ++r)
      for (size_t i = 0; i < kernels.size(); ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const double pairs = pass(kernels[i], decode);
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best[i] = std::min(best[i], dt * 1e9 / pairs);
      }
    for (size_t i = 0; i < kernels.size(); ++i)
      std::printf("  %-7s %-6s %8.2f\n", decode ? "decode" : "prefill", kernels[i].name, best[i]);
  }
  return 0;
}
