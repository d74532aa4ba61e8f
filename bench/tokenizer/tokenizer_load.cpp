// Time to a tokenizer from a GGUF in a fresh process: GgufFile::open, then Tokenizer::from_gguf (the
// vocabulary's arrays read on first use, the token map, the merge table), then their teardown. Run it
// as new processes, alternating builds: the first touch of fresh memory is much of the cost on these
// VMs, so a second load in one process reads faster than a real one. Build and run (thirtieth session,
// BENCHMARKS.md):
//
//   g++ -std=c++20 -O2 -Isrc bench/tokenizer/tokenizer_load.cpp -o tokenizer-load -Wl,--start-group \
//     build/src/text/libignis_text.a build/src/format/libignis_format.a build/src/core/libignis_core.a \
//     -Wl,--end-group -lfmt -lpthread -lpcre2-8 -lutf8proc
//   for i in 1 2 3 4 5 6 7 8; do ./tokenizer-load-OLD M.gguf; ./tokenizer-load M.gguf; done
#include <chrono>
#include <cstdio>

#include "format/gguf.h"
#include "text/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tokenizer-load MODEL.gguf\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); };
  const auto t0 = Clock::now();
  auto f = ignis::gguf::GgufFile::open(argv[1]);
  const double open_ms = ms(t0);
  const auto t1 = Clock::now();
  auto tok = ignis::text::Tokenizer::from_gguf(*f);
  const double tok_ms = ms(t1);
  const int n_vocab = tok->n_vocab();
  const auto t2 = Clock::now();
  tok.reset();
  f.reset();
  std::printf("open %.1f ms, from_gguf %.1f ms, teardown %.1f ms (%d tokens)\n", open_ms, tok_ms, ms(t2), n_vocab);
}
