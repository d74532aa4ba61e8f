// ignis bench: prompt processing (pp) and token generation (tg) speed, measured as llama-bench does.
//
// NOTE: method follows llama-bench so the numbers compare side by side: each test starts from an empty
// KV cache, or from n_depth random tokens already in it (-d; evaluated once, untimed, and kept across
// repetitions as llama-bench restores its saved state); pp evaluates n_prompt random tokens as one
// batch, tg evaluates n_gen tokens one at a time; one warm-up run precedes the timed repetitions; t/s is
// reported as the mean and standard deviation of the per-repetition rates.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/cpu/ops.h"
#include "cli/command.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "format/gguf.h"
#include "hub/hub.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace ignis::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::string hf;
  bool offline = false;
  std::string n_prompt = "512";
  std::string n_gen = "128";
  std::string n_depth = "0";
  std::string threads;
  int reps = 5;
  std::string output = "md";
  std::string cache_type = "f16";
  std::string quant;  // --quant: quantize a Hugging Face folder at load
};

// Values in a list above hi are typos, not requests (a thread pool of a million threads, a prompt of
// more tokens than any context).
std::vector<int> parse_list(const std::string& s, const char* flag, int lo, long hi) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      long v = std::stol(item, &used);
      if (used != item.size() || v < lo || v > hi) throw std::invalid_argument("range");
      out.push_back(static_cast<int>(v));
    } catch (const std::exception&) {
      fail("{}: '{}' is not a valid value (expected integers {}..{}, comma-separated)", flag, item, lo, hi);
    }
  }
  if (out.empty()) fail("{}: no value given", flag);
  return out;
}

uint64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

std::string cpu_model() {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return "";
  char line[512];
  std::string out;
  while (std::fgets(line, sizeof line, f)) {
    std::string s(line);
    if (s.rfind("model name", 0) == 0) {
      auto p = s.find(':');
      out = s.substr(p + 2);
      if (!out.empty() && out.back() == '\n') out.pop_back();
      break;
    }
  }
  std::fclose(f);
  return out;
}

// The names llama-bench gives the llama_ftype values of general.file_type (those of types ignis loads).
const char* file_type_label(uint64_t ft) {
  switch (ft) {
    case 0: return "all F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K - Medium";
    case 11: return "Q3_K - Small";
    case 12: return "Q3_K - Medium";
    case 13: return "Q3_K - Large";
    case 14: return "Q4_K - Small";
    case 15: return "Q4_K - Medium";
    case 16: return "Q5_K - Small";
    case 17: return "Q5_K - Medium";
    case 18: return "Q6_K";
    case 21: return "Q2_K - Small";
    case 32: return "BF16";
    default: return nullptr;
  }
}

// "qwen2 0.5B Q4_K - Medium" in llama-bench's style: arch, size class, and the file type its
// general.file_type names (else the weight type holding the most bytes).
std::string model_type(const model::Model& m) {
  const auto& hp = m.hparams();
  double params = double(m.n_params());
  std::string size = params >= 1e9 ? fmt::format("{:.1f}B", params / 1e9) : fmt::format("{:.0f}M", params / 1e6);
  if (const gguf::Value* ft = m.file().find("general.file_type"); ft && ft->is_integer() && ft->i >= 0)
    if (const char* label = file_type_label(static_cast<uint64_t>(ft->i))) return fmt::format("{} {} {}", hp.arch, size, label);
  std::map<std::string, uint64_t> bytes_by_type;
  for (const auto& t : m.file().tensors())
    if (t.shape.size() >= 2) bytes_by_type[dtype_name(t.type)] += t.n_bytes;
  std::string type = "?";
  uint64_t best = 0;
  for (auto& [name, b] : bytes_by_type)
    if (b > best) best = b, type = name;
  std::transform(type.begin(), type.end(), type.begin(), ::toupper);
  return fmt::format("{} {} {}", hp.arch, size, type);
}

struct TestResult {
  int n_prompt = 0, n_gen = 0, n_depth = 0, threads = 0;
  std::vector<double> samples_ns;
  std::vector<double> samples_ts;
};

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  double m = mean(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / (v.size() - 1));
}

TestResult run_test(const model::Model& m, ThreadPool& pool, int n_prompt, int n_gen, int n_depth, int reps,
                    DType kv_type) {
  TestResult r;
  r.n_prompt = n_prompt;
  r.n_gen = n_gen;
  r.n_depth = n_depth;
  r.threads = pool.n_threads();
  const int64_t n_vocab = m.hparams().n_vocab;
  std::mt19937 rng(42);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(n_vocab - 1));
  auto cache = m.new_cache(std::max(1, n_depth + n_prompt + n_gen), kv_type);
  std::vector<float> logits(n_vocab);
  if (n_depth > 0) {  // the context every repetition starts from
    std::vector<int32_t> toks(n_depth);
    for (auto& t : toks) t = tok(rng);
    m.forward(*cache, toks, logits.data(), false, pool);
  }
  auto once = [&]() {
    cache->truncate(n_depth);
    if (n_prompt > 0) {
      std::vector<int32_t> toks(n_prompt);
      for (auto& t : toks) t = tok(rng);
      m.forward(*cache, toks, logits.data(), false, pool);
    }
    for (int i = 0; i < n_gen; ++i) {
      int32_t t = tok(rng);
      m.forward(*cache, std::span<const int32_t>(&t, 1), logits.data(), false, pool);
    }
  };
  once();  // warm-up
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    once();
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    r.samples_ns.push_back(ns);
    r.samples_ts.push_back((n_prompt + n_gen) / (ns * 1e-9));
  }
  return r;
}

int run_bench(const BenchOptions& o) {
  constexpr long kMaxTokens = 1000000, kMaxThreads = 1024;  // kMaxThreads: as ignis run's -t
  auto prompts = parse_list(o.n_prompt, "-p", 0, kMaxTokens);
  auto gens = parse_list(o.n_gen, "-n", 0, kMaxTokens);
  auto depths = parse_list(o.n_depth, "-d", 0, kMaxTokens);
  std::vector<int> threads =
      o.threads.empty() ? std::vector<int>{static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))}
                        : parse_list(o.threads, "-t", 1, kMaxThreads);
  if (std::all_of(prompts.begin(), prompts.end(), [](int p) { return p == 0; }) &&
      std::all_of(gens.begin(), gens.end(), [](int g) { return g == 0; }))
    fail("bench: nothing to measure (every -p and -n value is 0)");
  if (o.reps < 1 || o.reps > 1000) fail("-r: {} repetitions is out of range (1..1000)", o.reps);
  if (o.output != "md" && o.output != "json" && o.output != "jsonl")
    fail("-o: unknown output format '{}' (md or json)", o.output);
  const DType kv_type = model::parse_kv_type(o.cache_type);

  if (o.model.empty() == o.hf.empty()) fail("bench: give exactly one of -m FILE and -hf REPO[:QUANT]");
  std::string path = o.model;
  if (!o.hf.empty()) {
    hub::HubOptions h;
    h.offline = o.offline;
    path = hub::resolve_model(o.hf, hub::with_env_defaults(h));
  }

  auto t0 = std::chrono::steady_clock::now();
  auto m = model::Model::load(path, {.quant = o.quant});
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // load_ms: until the model can run. Weights still being copied in the background (packed.h:
  // copied_in_background) are made before anything is timed, so the rates are the final kernels'; a
  // pool of every core makes them (the background's idle thread alone took 1.2-2.5 s for a 1 GB copy).
  {
    ThreadPool copy_pool(0);
    m->finish_repacking(copy_pool);
  }
  const int64_t n_ctx_train = m->hparams().n_ctx_train;
  // Each test runs alone in a cache of its own length (llama-bench's n_prompt + n_gen), which may pass
  // the training context, as llama-bench allows; it is said.
  for (int d : depths)
    for (const auto* list : {&prompts, &gens})
      for (int n : *list)
        if (n_ctx_train > 0 && n > 0 && int64_t{d} + n > n_ctx_train)
          std::fprintf(stderr, "warning: a test of %lld tokens is longer than the model's training context %lld\n",
                       static_cast<long long>(int64_t{d} + n), static_cast<long long>(n_ctx_train));
  const std::string type = model_type(*m);
  const uint64_t size = m->weight_bytes();
  const bool md = o.output == "md";
  if (md) {
    std::printf("| %-30s | %10s | %10s | %-7s | %7s | %13s | %20s |\n", "model", "size", "params", "backend", "threads",
                "test", "t/s");
    std::printf("| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", std::string(30, '-').c_str(),
                std::string(9, '-').c_str(), std::string(9, '-').c_str(), std::string(7, '-').c_str(),
                std::string(6, '-').c_str(), std::string(12, '-').c_str(), std::string(19, '-').c_str());
    std::fflush(stdout);
  }
  for (int nt : threads) {
    ThreadPool pool(nt);
    struct Test {
      int p, g, d;
    };
    std::vector<Test> tests;  // llama-bench's order: depths, then its prompts and generations
    for (int d : depths) {
      for (int p : prompts)
        if (p > 0) tests.push_back({p, 0, d});
      for (int g : gens)
        if (g > 0) tests.push_back({0, g, d});
    }
    for (auto [p, g, d] : tests) {
      TestResult r = run_test(*m, pool, p, g, d, o.reps, kv_type);
      std::string test = p > 0 ? fmt::format("pp{}", p) : fmt::format("tg{}", g);
      if (d > 0) test += fmt::format(" @ d{}", d);
      if (md) {
        std::printf("| %-30s | %6.2f GiB | %8.2f B | %-7s | %7d | %13s | %20s |\n", type.c_str(), size / 1073741824.0,
                    m->n_params() / 1e9, "CPU", nt, test.c_str(),
                    fmt::format("{:.2f} ± {:.2f}", mean(r.samples_ts), stddev(r.samples_ts)).c_str());
      } else {
        nlohmann::json j = {
            {"model_filename", path},
            {"model_type", type},
            {"model_size", size},
            {"model_n_params", m->n_params()},
            {"backends", "CPU"},
            {"cpu_info", cpu_model()},
            {"isa", cpu::isa_name()},
            {"n_threads", nt},
            {"n_prompt", p},
            {"n_gen", g},
            {"n_depth", d},
            {"type_k", o.cache_type},
            {"type_v", o.cache_type},
            {"avg_ns", static_cast<uint64_t>(mean(r.samples_ns))},
            {"stddev_ns", static_cast<uint64_t>(stddev(r.samples_ns))},
            {"avg_ts", mean(r.samples_ts)},
            {"stddev_ts", stddev(r.samples_ts)},
            {"samples_ns", r.samples_ns},
            {"samples_ts", r.samples_ts},
            {"peak_rss_bytes", peak_rss_bytes()},
            {"load_ms", load_ms},
        };
        std::printf("%s\n", j.dump().c_str());
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

Action setup_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  app.add_option("-m,--model", o->model, "model: a GGUF file or a Hugging Face folder");
  app.add_option("--hf", o->hf, "Hugging Face repo REPO[:QUANT] to download the model from (also -hf)");
  app.add_flag("--offline", o->offline, "use only the local cache for -hf");
  app.add_option("-p,--n-prompt", o->n_prompt, "prompt lengths to test, comma-separated (0 skips)");
  app.add_option("-n,--n-gen", o->n_gen, "generation lengths to test, comma-separated (0 skips)");
  app.add_option("-d,--n-depth", o->n_depth,
                 "context depths to test at, comma-separated: tokens already in the KV cache (llama-bench's -d)");
  app.add_option("-t,--threads", o->threads, "thread counts, comma-separated (default: all cores)");
  app.add_option("-r,--repetitions", o->reps, "timed repetitions per test");
  app.add_option("-o,--output", o->output, "md (table) or json (one object per test per line)");
  app.add_option("--cache-type", o->cache_type, "KV cache type, K and V: f16 (llama.cpp's default) or f32")
      ->check(CLI::IsMember({"f16", "f32"}))->capture_default_str();
  app.add_option("--quant", o->quant,
                 "quantize a Hugging Face folder's weights at load, in memory: Q8_0, Q4_0, Q4_K_M, Q6_K, ...");
  return [o]() { return run_bench(*o); };
}

Command reg{"bench", "Measure prompt processing and generation speed (llama-bench's method)", setup_bench};

}  // namespace
}  // namespace ignis::cli
