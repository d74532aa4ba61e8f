// Concurrent streaming requests through the public C++ API, then shutdown (the analogue of SGLang's
// Engine.async_generate + Engine.shutdown): each prompt is consumed by its own thread through a pull
// stream while the engine batches them together.
//
//   async_generate MODEL.gguf PROMPT...
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "ignis/engine.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf PROMPT...\n", argv[0]);
    return 2;
  }
  try {
    ignis::EngineOptions opts;
    opts.model = argv[1];
    auto engine = ignis::Engine::load(opts);
    ignis::SamplingParams sp;
    sp.temperature = 0.0f;
    sp.max_tokens = 32;

    std::vector<std::string> results(argc - 2);
    std::vector<std::thread> consumers;
    for (int i = 2; i < argc; ++i) {
      auto stream = engine->stream(engine->tokenize(argv[i]), sp);
      consumers.emplace_back([&results, i, s = std::move(stream)]() {
        while (auto chunk = s->next()) results[i - 2] += chunk->text;
      });
    }
    for (auto& t : consumers) t.join();
    engine->shutdown();
    for (size_t i = 0; i < results.size(); ++i) std::printf("[%zu] %s%s\n", i, argv[i + 2], results[i].c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
