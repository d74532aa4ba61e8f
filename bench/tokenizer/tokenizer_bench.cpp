// Times ignis's tokenizer on a text file: load once, encode the whole file R times (best time
// reported), and write the ids of the last run (one per line) for comparison with llama.cpp.
//   tokenizer_bench MODEL TEXT_FILE [REPEATS] [IDS_OUT]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "text/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokenizer_bench MODEL TEXT_FILE [REPEATS] [IDS_OUT]\n");
    return 2;
  }
  try {
    const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
    std::ifstream in(argv[2], std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    auto tok = ignis::text::Tokenizer::from_path(argv[1]);
    const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    std::vector<ignis::text::TokenId> ids;
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      const auto a = clock::now();
      ids = tok->encode(text, false, false);
      best = std::min(best, std::chrono::duration<double, std::milli>(clock::now() - a).count());
    }
    std::printf("ignis: %zu bytes -> %zu tokens, load %.0f ms, encode best of %d: %.1f ms (%.1f MB/s)\n",
                text.size(), ids.size(), load_ms, repeats, best, text.size() / best / 1e3);
    if (argc > 4) {
      std::ofstream out(argv[4]);
      for (auto id : ids) out << id << '\n';
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
