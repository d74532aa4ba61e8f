// The reference job through the public C++ API (the analogue of vLLM's LLM.chat):
// one user message, the model's chat template, greedy, 80 tokens.
//
//   reference_job MODEL.gguf [max_tokens]
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "ignis/engine.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [max_tokens]\n", argv[0]);
    return 2;
  }
  try {
    ignis::EngineOptions opts;
    opts.model = argv[1];
    auto engine = ignis::Engine::load(opts);

    ignis::SamplingParams sp;
    sp.temperature = 0.0f;
    sp.max_tokens = argc > 2 ? std::atoi(argv[2]) : 80;
    nlohmann::ordered_json messages = nlohmann::ordered_json::array(
        {{{"role", "user"},
          {"content",
           "A server handles 240 requests per second. Traffic increases by 35%. How many requests per second "
           "must it handle? Show the calculation."}}});
    ignis::Completion out = engine->chat(messages, sp);
    std::fwrite(out.text.data(), 1, out.text.size(), stdout);
    std::fprintf(stdout, "\n");
    std::fprintf(stderr, "finish_reason=%s prompt_tokens=%d completion_tokens=%zu\n", ignis::to_string(out.finish_reason),
                 out.n_prompt_tokens, out.token_ids.size());
    engine->shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
