// ignis quantize IN.gguf OUT.gguf TYPE: writes a quantized copy of a model, as llama-quantize does.
//
// The recipe (which tensor gets which type) and the conversion are format/quantize_recipe.h; this file
// is the command line. Q4_K and Q5_K are aliases of Q4_K_M and Q5_K_M, as in llama-quantize.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "format/quantize_recipe.h"

namespace ignis::cli {
namespace {

struct QuantizeOptions {
  std::string input;
  std::string output;
  std::string type;
  int threads = 0;
};

int quantize_main(const QuantizeOptions& o) {
  auto ft = gguf::parse_quant_type(o.type);
  if (!ft) fail("quantize: unknown type '{}' (valid: {})", o.type, gguf::quant_type_names());
  const auto t0 = std::chrono::steady_clock::now();
  ThreadPool pool(o.threads);
  gguf::QuantizeStats st = gguf::quantize_model(o.input, o.output, *ft, pool, [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
  });
  if (st.n_requantized > 0)
    std::fprintf(stderr, "quantize: note: %d tensor(s) were already quantized and were requantized "
                 "(quality is lower than quantizing from F16/F32)\n", st.n_requantized);
  if (st.n_f16 > 0)
    std::fprintf(stderr, "quantize: note: %d weight tensor(s) have rows no quantized type fits; written F16\n",
                 st.n_f16);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "quantize: model size %.2f MiB -> %.2f MiB, %.2f s\n", st.bytes_in / 1048576.0,
               st.bytes_out / 1048576.0, secs);
  return 0;
}

Action setup_quantize(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  app.add_option("input", o->input, "input model (GGUF: F32, F16, BF16 or quantized)")->required()->type_name("IN");
  app.add_option("output", o->output, "output GGUF path")->required()->type_name("OUT");
  app.add_option("type", o->type, "quantization type: " + gguf::quant_type_names() +
                                      " (Q4_K and Q5_K are aliases of Q4_K_M and Q5_K_M, as in llama-quantize)")
      ->required()
      ->type_name("TYPE");
  app.add_option("-t,--threads", o->threads, "threads (default: all hardware threads)")->type_name("INT");
  return [o] {
    if (o->threads < 0 || o->threads > 1024) fail("quantize: -t {} is out of range (0..1024)", o->threads);
    return quantize_main(*o);
  };
}

Command reg{"quantize", "Quantize a GGUF model (llama.cpp's recipes: Q4_0 ... Q8_0, Q4_K_M, Q5_K_M, Q6_K)",
            setup_quantize};

}  // namespace
}  // namespace ignis::cli
