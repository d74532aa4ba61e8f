// ignis serve: the OpenAI-compatible HTTP server.
//
// NOTE: the server listens before the model is loaded, so /health can answer 503 during the load and
// 200 once the engine runs. SIGTERM/SIGINT stops accepting connections, lets in-flight requests finish
// within --shutdown-timeout seconds, cancels what is left, and exits 0.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cli/size_arg.h"
#include "core/error.h"
#include "format/hf_load.h"
#include "hub/hub.h"
#include "ignis/engine.h"
#include "server/http_server.h"
#include "server/openai_service.h"

namespace ignis::cli {
namespace {

struct ServeOptions {
  std::string model;
  std::string hf;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;
  int64_t n_ctx = 0;
  std::string kv_memory;
  int max_seqs = 16;
  int max_queue = 256;
  int max_batched_tokens = 512;
  int kv_block_size = 16;
  std::string cache_type = "f16";
  int threads = 0;
  std::string alias;
  bool offline = false;
  std::string chat_template_file;
  int shutdown_timeout_s = 30;
  bool no_prefix_caching = false;
  std::string quant;  // --quant: quantize a Hugging Face folder at load
};

int run_serve(const ServeOptions& o) {
  if (o.model.empty() == o.hf.empty()) fail("give exactly one of -m FILE and -hf REPO[:QUANT]");
  if (o.port < 0 || o.port > 65535) fail("--port {} is out of range (0..65535)", o.port);
  if (o.threads < 0) fail("-t {} must be >= 1 (or 0 for all cores)", o.threads);
  if (o.n_ctx < 0) fail("-c {} must be > 0", o.n_ctx);
  if (o.max_seqs < 1) fail("--max-seqs {} must be >= 1", o.max_seqs);
  if (o.max_queue < 0) fail("--max-queue {} must be >= 0", o.max_queue);
  if (o.shutdown_timeout_s < 0) fail("--shutdown-timeout {} must be >= 0", o.shutdown_timeout_s);
  EngineOptions eo;
  eo.n_threads = o.threads;
  eo.n_ctx = o.n_ctx;
  eo.kv_memory_bytes = o.kv_memory.empty() ? 0 : parse_size(o.kv_memory, "--kv-memory");
  eo.max_seqs = o.max_seqs;
  eo.max_queue = o.max_queue;
  eo.max_batched_tokens = o.max_batched_tokens;
  eo.kv_block_size = o.kv_block_size;
  eo.kv_type = o.cache_type;
  eo.prefix_caching = !o.no_prefix_caching;
  eo.quant = o.quant;
  if (!o.quant.empty()) hf::check_quant_name(o.quant);  // before listening, not in the background load
  if (!o.chat_template_file.empty()) eo.chat_template = read_text_file(o.chat_template_file, "--chat-template-file");

  // Many keep-alive connections need many descriptors: raise the soft limit to the hard one.
  struct rlimit rl {};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  server::ServiceOptions so;
  so.api_key = o.api_key;
  so.model_name = !o.alias.empty() ? o.alias : (!o.hf.empty() ? o.hf : o.model);
  auto service = std::make_shared<server::OpenAiService>(so);
  server::HttpOptions ho;
  ho.host = o.host;
  ho.port = uint16_t(o.port);
  server::HttpServer http(ho, [service](const server::HttpRequest& r, std::shared_ptr<server::Exchange> ex) {
    service->handle(r, std::move(ex));
  });
  const uint16_t port = http.listen();
  std::fprintf(stderr, "ignis: listening on http://%s:%u\n", o.host.c_str(), unsigned(port));

  std::shared_ptr<Engine> engine;
  std::atomic<bool> load_failed{false};
  std::string load_error;
  std::thread loader([&]() {
    try {
      std::string path = o.model;
      if (!o.hf.empty()) {
        hub::HubOptions hopt;
        hopt.offline = o.offline;
        path = hub::resolve_model(o.hf, hub::with_env_defaults(hopt));
      }
      eo.model = path;
      auto t0 = std::chrono::steady_clock::now();
      engine = std::shared_ptr<Engine>(Engine::load(eo));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      service->set_engine(engine);
      std::fprintf(stderr, "ignis: model %s loaded in %.0f ms (context %lld)\n", path.c_str(), ms,
                   (long long)engine->info().n_ctx);
    } catch (const std::exception& e) {
      load_error = e.what();
      load_failed = true;
      http.stop();
    }
  });

  std::atomic<bool> stopping{false};
  std::thread drainer;
  http.on_signal([&](int) {
    if (stopping.exchange(true)) return;
    std::fprintf(stderr, "ignis: shutting down (waiting up to %d s for %zu requests)\n", o.shutdown_timeout_s,
                 service->in_flight());
    http.stop_accepting();
    service->set_draining(true);
    drainer = std::thread([&]() {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.shutdown_timeout_s);
      while (service->in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (engine) engine->shutdown(std::chrono::milliseconds(0));
      // Give the io thread a moment to flush the last responses.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      http.stop();
    });
  });
  http.run();
  loader.join();
  if (drainer.joinable()) drainer.join();
  if (load_failed) fail("{}", load_error);
  if (engine) engine->shutdown(std::chrono::milliseconds(0));
  return 0;
}

Action setup_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  app.add_option("-m,--model", o->model, "model: a GGUF file or a Hugging Face folder");
  app.add_option("--hf", o->hf, "Hugging Face repo REPO[:QUANT] to download the model from");
  app.add_option("--host", o->host, "address to listen on");
  app.add_option("--port", o->port, "port to listen on (0: any free port)");
  app.add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' on the API routes");
  app.add_option("-c,--ctx-size", o->n_ctx, "context size per request (default: min(training context, 4096))");
  app.add_option("--kv-memory", o->kv_memory, "KV cache memory, e.g. 2G or 512M (default: from free RAM)");
  app.add_option("--max-seqs", o->max_seqs, "requests running at once");
  app.add_option("--max-queue", o->max_queue, "waiting requests before answering 429");
  app.add_option("--max-batched-tokens", o->max_batched_tokens, "token budget per engine step");
  app.add_option("--kv-block-size", o->kv_block_size, "tokens per KV cache block");
  app.add_option("--cache-type", o->cache_type, "KV cache type, K and V: f16 (llama.cpp's default) or f32")
      ->check(CLI::IsMember({"f16", "f32"}))->capture_default_str();
  app.add_option("-t,--threads", o->threads, "compute threads (0: all cores)");
  app.add_option("--alias", o->alias, "model name reported by /v1/models and accepted in requests");
  app.add_flag("--offline", o->offline, "use only the local cache for -hf");
  app.add_option("--chat-template-file", o->chat_template_file, "Jinja chat template overriding the model's");
  app.add_option("--shutdown-timeout", o->shutdown_timeout_s, "seconds to let requests finish on SIGTERM");
  app.add_flag("--no-prefix-caching", o->no_prefix_caching, "disable KV prefix reuse across requests");
  app.add_option("--quant", o->quant,
                 "quantize a Hugging Face folder's weights at load, in memory: Q8_0, Q4_0, Q4_K_M, Q6_K, ...");
  return [o]() { return run_serve(*o); };
}

Command reg{"serve", "OpenAI-compatible HTTP server", setup_serve};

}  // namespace
}  // namespace ignis::cli
