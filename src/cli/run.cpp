// ignis run: generate text from a raw prompt, streamed to stdout.
//
// NOTE: the interface follows llama.cpp's llama-cli / llama-completion so results compare side by side:
// - the prompt is tokenized raw (no chat template), special tokens parsed, BOS added when the GGUF
//   metadata says so; its tokens enter the repetition-penalty history;
// - sampling defaults are llama.cpp's (temp 0.8, top-k 40, top-p 0.95, min-p 0.05, repeat penalty 1.0
//   over the last 64 tokens, presence/frequency 0); --temp 0 is greedy argmax;
// - -n defaults to -1: generate until an end-of-generation token or until the context is full
//   (llama.cpp's default too); a full context ends generation with a warning, it is never shifted;
// - -c defaults to min(training context, 4096); a larger -c than the training context is allowed
//   with a warning; a prompt longer than the context is an error naming both numbers;
// - --seed defaults to a random seed, printed on stderr so the run can be repeated.
// stdout carries only the generated text (or, with --json, one JSON object per generated token);
// everything else (load time, speeds, warnings, errors) goes to stderr.
// Every numeric flag is read as text and checked here, so a bad value is one "error: ..." line and
// exit code 1.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/generation_defaults.h"
#include "hub/hub.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "cli/size_arg.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace ignis::cli {
namespace {

constexpr const char* kDefaultHfRepo = "Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q4_K_M";
constexpr int64_t kDefaultMaxCtx = 4096;
constexpr int64_t kMaxCtx = int64_t{1} << 24;  // beyond this a -c value is a typo, not a request
constexpr int kMaxThreads = 1024;
constexpr int kJsonTopLogprobs = 5;

// Flags as given (strings: validated by parse_* below with one-line errors).
struct RunOptions {
  std::string model;
  std::string hf;
  std::optional<std::string> prompt;
  std::string n_predict = "-1";
  std::string temp = "0.8";
  std::string top_k = "40";
  std::string top_p = "0.95";
  std::string min_p = "0.05";
  std::string repeat_penalty = "1.0";
  std::string repeat_last_n = "64";
  std::string presence_penalty = "0";
  std::string frequency_penalty = "0";
  std::string seed = "-1";
  std::vector<std::string> stop;
  std::string threads;
  std::string ctx;
  std::string cache_type = "f16";
  bool json = false;
  bool offline = false;
  bool chat = false;
  std::string system;
  std::string chat_template_file;
  engine::SamplingFieldsSet given;  // sampling flags given on the command line (others may come from the model)
  std::string quant;  // --quant: quantize a Hugging Face folder at load
};

int64_t parse_int(const std::string& flag, const std::string& s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    fail("run: {} expects an integer, got '{}'", flag, s);
  if (v < lo || v > hi) fail("run: {} must be in [{}, {}], got {}", flag, lo, hi, v);
  return v;
}

float parse_float(const std::string& flag, const std::string& s) {
  float v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    fail("run: {} expects a finite number, got '{}'", flag, s);
  return v;
}

// The validated, typed form of RunOptions.
struct RunConfig {
  int32_t n_predict = -1;
  int64_t n_ctx = 0;  // 0: default from the model
  DType kv_type = DType::F16;
  int n_threads = 0;
  int32_t repeat_last_n = 64;  // -1: the context size
  bool seed_given = false;
  sample::SamplingParams sampling;
  std::vector<text::TokenId> eog_ids;  // generation_config.json's eos_token_id (model folders)
};

RunConfig check_options(const RunOptions& o) {
  RunConfig c;
  if (!o.prompt && !o.chat) fail("run: missing -p PROMPT");
  if (!o.chat && !o.system.empty()) fail("run: --system needs --chat");
  if (!o.chat && !o.chat_template_file.empty()) fail("run: --chat-template-file needs --chat");
  if (!o.model.empty() && !o.hf.empty()) fail("run: give either -m FILE or -hf REPO[:QUANT], not both");
  c.n_predict = static_cast<int32_t>(parse_int("-n", o.n_predict, -1, std::numeric_limits<int32_t>::max()));
  if (!o.ctx.empty()) c.n_ctx = parse_int("-c", o.ctx, 1, kMaxCtx);
  c.kv_type = model::parse_kv_type(o.cache_type);
  if (!o.threads.empty()) c.n_threads = static_cast<int>(parse_int("-t", o.threads, 1, kMaxThreads));
  auto& s = c.sampling;
  s.temperature = parse_float("--temp", o.temp);
  if (s.temperature < 0) fail("run: --temp must be >= 0 (0 = greedy), got {}", o.temp);
  s.top_k = static_cast<int32_t>(parse_int("--top-k", o.top_k, 0, std::numeric_limits<int32_t>::max()));
  s.top_p = parse_float("--top-p", o.top_p);
  if (!(s.top_p > 0 && s.top_p <= 1)) fail("run: --top-p must be in (0, 1], got {}", o.top_p);
  s.min_p = parse_float("--min-p", o.min_p);
  if (!(s.min_p >= 0 && s.min_p <= 1)) fail("run: --min-p must be in [0, 1], got {}", o.min_p);
  s.repeat_penalty = parse_float("--repeat-penalty", o.repeat_penalty);
  if (s.repeat_penalty <= 0) fail("run: --repeat-penalty must be > 0 (1 = off), got {}", o.repeat_penalty);
  c.repeat_last_n = static_cast<int32_t>(
      parse_int("--repeat-last-n", o.repeat_last_n, -1, std::numeric_limits<int32_t>::max()));
  s.presence_penalty = parse_float("--presence-penalty", o.presence_penalty);
  s.frequency_penalty = parse_float("--frequency-penalty", o.frequency_penalty);
  if (o.seed != "-1") {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(o.seed.data(), o.seed.data() + o.seed.size(), v);
    if (o.seed.empty() || ec != std::errc() || p != o.seed.data() + o.seed.size())
      fail("run: --seed expects an integer in [0, 2^64) or -1 (random), got '{}'", o.seed);
    s.seed = v;
    c.seed_given = true;
  }
  for (const auto& st : o.stop)
    if (st.empty()) fail("run: --stop must not be empty");
  return c;
}

std::string model_path(const RunOptions& o) {
  if (!o.model.empty()) return o.model;
  hub::HubOptions h;
  h.offline = o.offline;
  return hub::resolve_model(o.hf.empty() ? kDefaultHfRepo : o.hf, hub::with_env_defaults(h));
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double per_second(int64_t n, double ms) { return ms > 0 ? n * 1000.0 / ms : 0.0; }

void write_out(std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

std::string token_json(const engine::TokenEvent& ev) {
  nlohmann::ordered_json j;  // keys in the documented order
  j["id"] = ev.id;
  j["text"] = ev.text;
  j["logprob"] = ev.logprobs.chosen;
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (const auto& t : ev.logprobs.top) top.push_back({{"id", t.id}, {"logprob", t.logprob}});
  j["top_logprobs"] = std::move(top);
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// --- Chat mode -------------------------------------------------------------------------------------

// The template: --chat-template-file, else the model's, else ChatML with a warning.
std::unique_ptr<text::ChatTemplate> load_chat_template(const RunOptions& o, const text::Tokenizer& tok,
                                                       const std::string& path) {
  std::string src = o.chat_template_file.empty() ? tok.chat_template()
                                                 : read_text_file(o.chat_template_file, "--chat-template-file");
  if (src.empty()) {
    std::fprintf(stderr, "warning: %s has no chat template; using ChatML\n", path.c_str());
    src = text::ChatTemplate::chatml_source();
  }
  return std::make_unique<text::ChatTemplate>(src);
}

nlohmann::ordered_json chat_messages(const std::string& system,
                                     const std::vector<std::pair<std::string, std::string>>& turns) {
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  if (!system.empty()) msgs.push_back({{"role", "system"}, {"content", system}});
  for (const auto& [role, content] : turns) msgs.push_back({{"role", role}, {"content", content}});
  return msgs;
}

// NOTE: rendered as transformers' apply_chat_template does; the text carries BOS where the template
// puts it, so it is tokenized without adding special tokens, with special tokens parsed.
std::string render_chat(const text::ChatTemplate& tmpl, const text::Tokenizer& tok,
                        const nlohmann::ordered_json& messages) {
  text::ChatTemplateInputs in;
  in.messages = messages;
  in.add_generation_prompt = true;
  if (tok.bos() >= 0) in.bos_token = tok.token_text(tok.bos());
  if (tok.eos() >= 0) in.eos_token = tok.token_text(tok.eos());
  return tmpl.render(in);
}

sample::SamplingParams make_sampling(const RunConfig& cfg, const text::Tokenizer& tok, const model::HParams& hp,
                                     int64_t n_ctx) {
  sample::SamplingParams sp = cfg.sampling;
  sp.repeat_last_n = cfg.repeat_last_n < 0 ? static_cast<int32_t>(n_ctx) : cfg.repeat_last_n;
  if (!cfg.seed_given) sp.seed = (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  for (int64_t id = tok.n_vocab(); id < hp.n_vocab; ++id)
    sp.logit_bias[static_cast<sample::TokenId>(id)] = -std::numeric_limits<float>::infinity();
  return sp;
}

// Interactive chat on a terminal: history kept across turns, /clear forgets it, /exit (or EOF) quits.
// The KV cache keeps the rendered conversation; each turn recomputes only what the template changed.
int interactive_chat(const RunOptions& o, const RunConfig& cfg, const model::Model& m, const text::Tokenizer& tok,
                     const text::ChatTemplate& tmpl, int64_t n_ctx, const std::string& path, double load_ms) {
  std::fprintf(stderr, "load: %.0f ms (%s, n_ctx %lld)\n", load_ms, path.c_str(), static_cast<long long>(n_ctx));
  std::fprintf(stderr, "chat: type a message; /clear forgets the conversation, /exit quits\n");
  ThreadPool pool(cfg.n_threads);
  std::unique_ptr<model::KvCache> cache = m.new_cache(n_ctx, cfg.kv_type);
  std::vector<text::TokenId> in_cache;  // tokens whose K/V the cache holds, in order
  std::vector<std::pair<std::string, std::string>> turns;
  sample::SamplingParams sp = make_sampling(cfg, tok, m.hparams(), n_ctx);
  std::string line;
  for (;;) {
    std::fputs("> ", stdout);
    std::fflush(stdout);
    char buf[4096];
    line.clear();
    bool got = false;
    while (std::fgets(buf, sizeof buf, stdin)) {
      got = true;
      line += buf;
      if (!line.empty() && line.back() == '\n') break;
    }
    if (!got) break;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line == "/exit" || line == "/quit") break;
    if (line == "/clear") {
      turns.clear();
      std::fputs("(conversation cleared)\n", stdout);
      continue;
    }
    if (line.empty()) continue;
    turns.push_back({"user", line});
    std::vector<text::TokenId> all = tok.encode(render_chat(tmpl, tok, chat_messages(o.system, turns)), false, true);
    if (static_cast<int64_t>(all.size()) >= n_ctx) {
      std::fprintf(stderr, "error: the conversation has %zu tokens but the context is %lld; use /clear\n",
                   all.size(), static_cast<long long>(n_ctx));
      turns.pop_back();
      continue;
    }
    size_t keep = 0;
    const size_t limit = std::min<size_t>({in_cache.size(), all.size() - 1, static_cast<size_t>(cache->n_past())});
    while (keep < limit && in_cache[keep] == all[keep]) ++keep;
    cache->truncate(static_cast<int64_t>(keep));
    in_cache.assign(all.begin(), all.begin() + keep);
    sample::Sampler sampler(sp, static_cast<int32_t>(m.hparams().n_vocab));
    for (size_t i = 0; i < keep; ++i) sampler.accept(all[i]);
    std::vector<text::TokenId> generated;
    std::string reply;
    engine::GenerateOptions gopts;
    gopts.n_predict = cfg.n_predict;
    gopts.stop = o.stop;
    gopts.eog_ids = cfg.eog_ids;
    engine::GenerateCallbacks cb;
    cb.on_token = [&](const engine::TokenEvent& ev) {
      generated.push_back(ev.id);
      return true;
    };
    cb.on_text = [&](std::string_view s) {
      reply += s;
      write_out(s);
    };
    std::span<const text::TokenId> rest(all.data() + keep, all.size() - keep);
    engine::generate(m, *cache, tok, sampler, pool, rest, gopts, cb);
    write_out("\n");
    in_cache.insert(in_cache.end(), rest.begin(), rest.end());
    // Every sampled token but the last was fed back through the model.
    if (!generated.empty()) in_cache.insert(in_cache.end(), generated.begin(), generated.end() - 1);
    in_cache.resize(std::min<size_t>(in_cache.size(), static_cast<size_t>(cache->n_past())));
    turns.push_back({"assistant", reply});
  }
  return 0;
}

// A model folder's generation_config.json: its sampling values for the flags not given, its eos ids as
// end of generation. Returns the line that says what it applied ("" when nothing).
std::string apply_model_defaults(const RunOptions& o, const std::string& path, RunConfig* cfg) {
  const engine::GenerationDefaults gd = engine::load_generation_defaults(path);
  sample::SamplingParams& s = cfg->sampling;
  engine::SamplingValues v{s.temperature, s.top_p, s.top_k, s.repeat_penalty};
  const std::string applied = engine::apply_generation_defaults(gd, o.given, &v);
  s.temperature = v.temperature;
  s.top_p = v.top_p;
  s.top_k = v.top_k;
  s.repeat_penalty = v.repetition_penalty;
  cfg->eog_ids.assign(gd.eos_token_ids.begin(), gd.eos_token_ids.end());
  std::string note;
  if (!applied.empty()) note += "sampling defaults from " + gd.path + ": " + applied + "\n";
  if (!gd.eos_token_ids.empty()) {
    note += "end of generation also at token ids from " + gd.path + ":";
    for (int32_t id : gd.eos_token_ids) note += " " + std::to_string(id);
    note += "\n";
  }
  return note;
}

int run_main(const RunOptions& o) {
  RunConfig cfg = check_options(o);
  const std::string path = model_path(o);
  const std::string defaults_note = apply_model_defaults(o, path, &cfg);

  auto t_load = std::chrono::steady_clock::now();
  std::unique_ptr<model::Model> m = model::Model::load(path, {.quant = o.quant, .n_threads = cfg.n_threads});
  std::unique_ptr<text::Tokenizer> tok = text::Tokenizer::from_gguf(m->file());
  const model::HParams& hp = m->hparams();
  int64_t n_ctx = cfg.n_ctx;
  if (n_ctx == 0) n_ctx = hp.n_ctx_train > 0 ? std::min(hp.n_ctx_train, kDefaultMaxCtx) : kDefaultMaxCtx;
  std::unique_ptr<model::KvCache> cache = m->new_cache(n_ctx, cfg.kv_type);
  ThreadPool pool(cfg.n_threads);
  const double load_ms = ms_since(t_load);

  std::unique_ptr<text::ChatTemplate> tmpl;
  if (o.chat) tmpl = load_chat_template(o, *tok, path);
  if (o.chat && !o.prompt) {
    if (!isatty(fileno(stdin)))
      fail("run: --chat without -p needs an interactive terminal (give -p PROMPT to chat once)");
    std::fputs(defaults_note.c_str(), stderr);
    return interactive_chat(o, cfg, *m, *tok, *tmpl, n_ctx, path, load_ms);
  }
  std::vector<text::TokenId> prompt =
      o.chat ? tok->encode(render_chat(*tmpl, *tok, chat_messages(o.system, {{"user", *o.prompt}})), false, true)
             : tok->encode(*o.prompt, /*add_special=*/true, /*parse_special=*/true);
  if (prompt.empty()) fail("run: the prompt has no tokens (empty prompt and the model adds no BOS)");
  if (static_cast<int64_t>(prompt.size()) > n_ctx)
    fail("run: the prompt has {} tokens but the context is {} tokens (raise -c or shorten the prompt)",
         prompt.size(), n_ctx);

  // Printed only once the prompt is known to fit, so a failed run says one line: the error.
  std::fprintf(stderr, "load: %.0f ms (%s, n_ctx %lld, %d threads)\n", load_ms, path.c_str(),
               static_cast<long long>(n_ctx), pool.n_threads());
  if (hp.n_ctx_train > 0 && n_ctx > hp.n_ctx_train)
    std::fprintf(stderr, "warning: -c %lld is larger than the model's training context %lld\n",
                 static_cast<long long>(n_ctx), static_cast<long long>(hp.n_ctx_train));
  std::fputs(defaults_note.c_str(), stderr);

  // Rows past the tokenizer's vocabulary are padding of the output matrix (Qwen2.5: 151936 rows for
  // 151665 tokens); they have no text, so make_sampling bans them.
  sample::SamplingParams sp = make_sampling(cfg, *tok, hp, n_ctx);
  if (sp.temperature > 0) std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(sp.seed));
  sample::Sampler sampler(sp, static_cast<int32_t>(hp.n_vocab));

  engine::GenerateOptions gopts;
  gopts.n_predict = cfg.n_predict;
  gopts.stop = o.stop;
  gopts.eog_ids = cfg.eog_ids;
  gopts.n_top_logprobs = o.json ? kJsonTopLogprobs : 0;
  engine::GenerateCallbacks cb;
  if (o.json) {
    cb.on_token = [](const engine::TokenEvent& ev) {
      write_out(token_json(ev));
      return true;
    };
  } else {
    cb.on_text = [](std::string_view s) { write_out(s); };
  }
  engine::GenerateResult r = engine::generate(*m, *cache, *tok, sampler, pool, prompt, gopts, cb);
  if (!o.json && isatty(fileno(stdout))) write_out("\n");

  if (r.reason == engine::StopReason::kContextFull)
    std::fprintf(stderr, "warning: the context (%lld tokens) is full, generation stopped after %lld tokens\n",
                 static_cast<long long>(n_ctx), static_cast<long long>(r.n_generated));
  std::fprintf(stderr, "prompt: %lld tokens, %.2f tok/s\n", static_cast<long long>(r.n_prompt),
               per_second(r.n_prompt, r.prompt_ms));
  std::fprintf(stderr, "generation: %lld tokens, %.2f tok/s (stop: %s)\n", static_cast<long long>(r.n_generated),
               per_second(r.n_generated, r.generation_ms), engine::stop_reason_name(r.reason));
  return 0;
}

Action setup_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  app.add_option("-m,--model", o->model, "model: a GGUF file or a Hugging Face folder")->type_name("FILE");
  app.add_option("--hf,--hf-repo", o->hf,
                 std::string("Hugging Face repo REPO[:QUANT] (also -hf); default ") + kDefaultHfRepo)
      ->type_name("REPO");
  app.add_option("-p,--prompt", o->prompt, "prompt, tokenized raw (no chat template)")->type_name("STR");
  auto num = [&](const char* flags, std::string& v, const char* type, const char* help) {
    return app.add_option(flags, v, help)->type_name(type)->capture_default_str();
  };
  num("-n,--n-predict", o->n_predict, "INT", "tokens to generate; -1 = until end of generation or full context");
  // For a model folder with generation_config.json, its values replace these defaults when not given.
  CLI::Option* temp = num("--temp", o->temp, "FLOAT", "temperature; 0 = greedy");
  CLI::Option* top_k = num("--top-k", o->top_k, "INT", "top-k; 0 = off");
  CLI::Option* top_p = num("--top-p", o->top_p, "FLOAT", "top-p in (0, 1]; 1 = off");
  num("--min-p", o->min_p, "FLOAT", "min-p in [0, 1]; 0 = off");
  CLI::Option* rep = num("--repeat-penalty", o->repeat_penalty, "FLOAT", "repetition penalty; 1 = off");
  num("--repeat-last-n", o->repeat_last_n, "INT", "tokens the penalties look back; 0 = off, -1 = context");
  num("--presence-penalty", o->presence_penalty, "FLOAT", "presence penalty; 0 = off");
  num("--frequency-penalty", o->frequency_penalty, "FLOAT", "frequency penalty; 0 = off");
  num("-s,--seed", o->seed, "INT", "RNG seed (std::mt19937_64); -1 = random");
  app.add_option("--stop", o->stop, "stop string (repeatable); not printed")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)
      ->type_name("STR");
  app.add_option("-t,--threads", o->threads, "threads (default: all hardware threads)")->type_name("INT");
  app.add_option("-c,--ctx-size", o->ctx, "context size (default: min(training context, 4096))")->type_name("INT");
  app.add_option("--cache-type", o->cache_type, "KV cache type, K and V: f16 (llama.cpp's default) or f32")
      ->check(CLI::IsMember({"f16", "f32"}))->type_name("TYPE")->capture_default_str();
  app.add_option("--quant", o->quant,
                 "quantize a Hugging Face folder's weights at load, in memory: Q8_0, Q4_0, Q4_K_M, Q6_K, ... "
                 "(the types of `ignis quantize`)")
      ->type_name("TYPE");
  app.add_flag("--json", o->json, "one JSON object per generated token instead of text");
  app.add_flag("--offline", o->offline, "use only the local model cache for -hf");
  app.add_flag("--chat", o->chat,
               "apply the model's chat template: -p is one user message and only the reply is printed; "
               "without -p, an interactive chat on a terminal");
  app.add_option("--system", o->system, "system message for --chat")->type_name("TEXT");
  app.add_option("--chat-template-file", o->chat_template_file, "Jinja chat template overriding the model's")
      ->type_name("FILE");
  return [o, temp, top_k, top_p, rep]() {
    o->given = {temp->count() > 0, top_p->count() > 0, top_k->count() > 0, rep->count() > 0};
    return run_main(*o);
  };
}

Command reg{"run", "Generate text from a prompt", setup_run};

}  // namespace
}  // namespace ignis::cli
