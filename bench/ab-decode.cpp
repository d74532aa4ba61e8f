// A/B decode timing in one process: variants of a kernel choice alternate every K tokens, so the host's
// swings in memory bandwidth (one-thread membw 17-26 GB/s within minutes on the shared Zen 5 machines)
// fall on both alike. Separate runs of two binaries could not resolve the 5-10% effects of decode
// kernel changes; this can (an A/A control here reads 0.97-1.03).
//
// The variants are values of `ignis::cpu::g_exp`, a switch the experimenter adds around the code under
// test for the measurement only (not in the committed library). bench/ab-decode-example.patch is the
// switch behind the twenty-ninth session's numbers (BENCHMARKS.md): bit 1 restores one row group a unit
// in decode and the old prefetch choice, bit 2 takes the K-quants back to one group. Build and run:
//
//   git apply bench/ab-decode-example.patch && cmake --build build
//   g++ -std=c++20 -O2 -Isrc bench/ab-decode.cpp -o ab-decode -Wl,--start-group build/src/model/libignis_model.a \
//     build/src/format/libignis_format.a build/src/backend/libignis_backend.a build/src/core/libignis_core.a \
//     -Wl,--end-group -lfmt -lpthread
//   ./ab-decode MODEL.gguf THREADS ROUNDS K VARIANT...     e.g. ./ab-decode qwen2.5-1.5b-q4_0.gguf 2 60 8 0 1
//
// Each round times K tokens of each variant (after one untimed token), in alternating order; it prints
// each variant's t/s over all rounds, the rounds it was fastest in, and its total time over the first's.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace ignis::cpu {
extern std::atomic<int> g_exp;
}

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: ab-decode MODEL THREADS ROUNDS K VARIANT VARIANT...\n");
    return 2;
  }
  const int threads = std::atoi(argv[2]), rounds = std::atoi(argv[3]), k_tokens = std::atoi(argv[4]);
  std::vector<int> vars;
  for (int i = 5; i < argc; ++i) vars.push_back(std::atoi(argv[i]));
  auto m = ignis::model::Model::load(argv[1]);
  m->wait_repacked();
  ignis::ThreadPool pool(threads);
  const int64_t n_vocab = m->hparams().n_vocab;
  auto cache = m->new_cache(256);
  std::vector<float> logits(n_vocab);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(n_vocab - 1));
  auto step = [&] {  // one decode token, the context kept between 64 and 192 tokens
    if (cache->n_past() >= 192) cache->truncate(64);
    const int32_t t = tok(rng);
    m->forward(*cache, std::span<const int32_t>(&t, 1), logits.data(), false, pool);
  };
  for (int i = 0; i < 96; ++i) step();
  const size_t n = vars.size();
  std::vector<double> total(n, 0);
  std::vector<int> wins(n, 0);
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> dt(n);
    for (size_t i = 0; i < n; ++i) {
      const size_t v = r % 2 ? n - 1 - i : i;
      ignis::cpu::g_exp.store(vars[v]);
      step();
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < k_tokens; ++k) step();
      dt[v] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      total[v] += dt[v];
    }
    size_t best = 0;
    for (size_t v = 1; v < n; ++v)
      if (dt[v] < dt[best]) best = v;
    ++wins[best];
  }
  for (size_t v = 0; v < n; ++v)
    std::printf("variant %d: %.2f t/s, fastest in %d of %d rounds, time / first's %.4f\n", vars[v],
                rounds * k_tokens / total[v], wins[v], rounds, total[v] / total[0]);
}
