// ignis-bench-matmul: one weight product through cpu::matmul (packed as the model packs it), timed in
// isolation: GMAC/s for prefill shapes, and GB/s of weights read for decode (1 token). With COPIES > 1
// the product rotates over that many copies of the weight, so a decode reads them from DRAM instead of
// the cache (size the copies past the L3). With IGNIS_BENCH_ROWS=1 it times the kernels on ggml's rows
// that serve a weight copied in the background (packed.h: copied_in_background) until its copy exists.
//   ignis-bench-matmul TYPE N_IN N_OUT TOKENS [THREADS=1] [REPS=20] [COPIES=1]
// Prints the best and the median of REPS timed products (after one warm-up).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/packed.h"
#include "core/dtype.h"
#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/thread_pool.h"

using namespace ignis;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: ignis-bench-matmul TYPE N_IN N_OUT TOKENS [THREADS=1] [REPS=20] [COPIES=1]\n");
    return 2;
  }
  const auto type = dtype_from_name(argv[1]);
  const int64_t n_in = std::atoll(argv[2]), n_out = std::atoll(argv[3]), n_tok = std::atoll(argv[4]);
  const int threads = argc > 5 ? std::atoi(argv[5]) : 1;
  const int reps = argc > 6 ? std::atoi(argv[6]) : 20;
  const int copies = argc > 7 ? std::atoi(argv[7]) : 1;
  const DTypeTraits* tr = type ? dtype_traits(*type) : nullptr;
  // Q2_K and Q3_K have no quantizer here: random blocks with finite scales stand in (the kernels' work
  // does not depend on the values).
  const bool random_blocks = type && (*type == DType::Q2_K || *type == DType::Q3_K);
  if (!tr || (!tr->from_float && !random_blocks)) {
    std::fprintf(stderr, "ignis-bench-matmul: unknown or unquantizable type '%s'\n", argv[1]);
    return 2;
  }
  if (n_in <= 0 || n_in % tr->block_size != 0 || n_in > (1 << 20) || n_out <= 0 || n_out > (1 << 22) ||
      n_tok <= 0 || n_tok > 8192 || threads <= 0 || threads > 1024 || reps <= 0 || copies <= 0 || copies > 4096) {
    std::fprintf(stderr, "ignis-bench-matmul: N_IN a positive multiple of %lld, N_OUT, TOKENS (<= 8192), "
                         "THREADS, REPS and COPIES positive\n", static_cast<long long>(tr->block_size));
    return 2;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 1);
  const size_t rb = row_bytes(*type, n_in);
  std::vector<float> row(n_in);
  std::vector<uint8_t> raw(rb * n_out);
  for (int64_t o = 0; o < n_out && !random_blocks; ++o) {
    for (auto& v : row) v = nd(rng) * 0.02f;
    tr->from_float(row.data(), raw.data() + rb * o, n_in);
  }
  if (random_blocks) {
    for (auto& b : raw) b = static_cast<uint8_t>(rng());
    const uint16_t d = f32_to_f16(0.01f);
    for (size_t at = 0; at < raw.size(); at += tr->block_bytes) {
      if (*type == DType::Q2_K) {
        std::memcpy(raw.data() + at + offsetof(BlockQ2_K, d), &d, 2);
        std::memcpy(raw.data() + at + offsetof(BlockQ2_K, dmin), &d, 2);
      } else {
        std::memcpy(raw.data() + at + offsetof(BlockQ3_K, d), &d, 2);
      }
    }
  }
  const cpu::WeightView w{*type, raw.data(), n_in, n_out};
  std::vector<std::unique_ptr<cpu::PackedStore>> stores;
  std::vector<cpu::WeightView> views;
  std::vector<std::vector<uint8_t>> raws;  // unpacked copies (types without a packed kernel)
  const char* rows_env = std::getenv("IGNIS_BENCH_ROWS");
  const bool rows = rows_env && rows_env[0] == '1';
  if (rows && !cpu::copied_in_background(*type)) {
    std::fprintf(stderr, "ignis-bench-matmul: %s is not copied in the background on this CPU\n", tr->name);
    return 2;
  }
  for (int c = 0; c < copies; ++c) {
    stores.push_back(std::make_unique<cpu::PackedStore>());
    if (cpu::can_pack(w) && !cpu::copied_in_background(*type)) {
      views.push_back(stores.back()->add(w));
    } else {
      raws.push_back(raw);
      const cpu::WeightView wc{*type, raws.back().data(), n_in, n_out};
      views.push_back(cpu::can_pack(wc) ? stores.back()->add(wc) : wc);
    }
    stores.back()->wait();
    if (rows) views.back().repacked = nullptr;
  }
  std::vector<float> x(n_in * n_tok), y(n_out * n_tok);
  for (auto& v : x) v = nd(rng);
  ThreadPool pool(threads);
  cpu::matmul(pool, views[0], x.data(), n_tok, y.data());
  std::vector<double> secs;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::matmul(pool, views[static_cast<size_t>(r + 1) % views.size()], x.data(), n_tok, y.data());
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(secs.begin(), secs.end());
  const double macs = static_cast<double>(n_in) * n_out * n_tok, bytes = static_cast<double>(rb) * n_out;
  auto line = [&](const char* what, double s) {
    std::printf("%s %s %lld x %lld, %lld tokens, %d threads (%s): %.4f ms, %.1f GMAC/s, %.1f GB/s of weights\n",
                what, tr->name, static_cast<long long>(n_in), static_cast<long long>(n_out),
                static_cast<long long>(n_tok), threads, cpu::isa_name(), s * 1e3, macs / s * 1e-9, bytes / s * 1e-9);
  };
  line("best  ", secs.front());
  line("median", secs[secs.size() / 2]);
  return 0;
}
