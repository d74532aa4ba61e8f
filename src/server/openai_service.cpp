#include "server/openai_service.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <random>

#include "core/error.h"
#include "server/openai_params.h"

namespace ignis::server {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

void send_error(Exchange& ex, const ApiError& e) {
  json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
  std::map<std::string, std::string> extra;
  if (e.status == 429 || e.status == 503) extra["Retry-After"] = "1";
  ex.respond(e.status, "application/json", dump(json{{"error", err}}), extra);
}

namespace {

ApiError api_error(int status, std::string message, std::string type = "invalid_request_error", std::string code = "") {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.code = std::move(code);
  return e;
}

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s = prefix;
  for (int i = 0; i < 24; ++i) s += hex[rng() & 15];
  return s;
}

// Maps an engine error to the HTTP answer: context overflows are 400 context_length_exceeded.
ApiError engine_error(const std::exception& e) {
  std::string msg = e.what();
  if (dynamic_cast<const QueueFullError*>(&e)) return api_error(429, msg, "rate_limit_error", "queue_full");
  if (msg.find("context_length_exceeded") != std::string::npos) {
    auto pos = msg.find(": ");
    return api_error(400, pos == std::string::npos ? msg : msg.substr(pos + 2), "invalid_request_error",
                     "context_length_exceeded");
  }
  if (msg.find("shutting down") != std::string::npos) return api_error(503, msg, "server_error");
  return api_error(400, msg);
}

// Flattens OpenAI content (string, or a list of {"type": "text", "text": ...} parts) for templates that
// expect strings, as vLLM does by default.
json normalize_messages(const json& messages) {
  if (!messages.is_array() || messages.empty()) bad_param("messages", "'messages' must be a non-empty array");
  json out = json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad_param(where, "'" + where + "' must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad_param(where + ".role", "'" + where + ".role' must be a string");
    json mm = m;
    auto c = m.find("content");
    if (c != m.end() && c->is_array()) {
      std::string text;
      for (size_t k = 0; k < c->size(); ++k) {
        const json& part = (*c)[k];
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
          bad_param(where + ".content", "'" + where + ".content[" + std::to_string(k) +
                                            "]' must be a text part {\"type\": \"text\", \"text\": ...}");
        if (!text.empty()) text += "\n";
        text += part["text"].get<std::string>();
      }
      mm["content"] = text;
    } else if (c != m.end() && !c->is_string() && !c->is_null()) {
      bad_param(where + ".content", "'" + where + ".content' must be a string or an array of text parts");
    }
    out.push_back(std::move(mm));
  }
  return out;
}

}  // namespace

// One HTTP request's generation: n choices (per prompt), streamed or collected.
struct GenerationJob : std::enable_shared_from_this<GenerationJob> {
  struct Choice {
    size_t prompt_index = 0;
    std::string text;
    std::vector<TokenInfo> tokens;
    FinishReason finish = FinishReason::None;
    bool done = false;
    bool role_sent = false;
    bool first_seen = false;
    Clock::time_point last;
    std::string error;
  };
  OpenAiService* svc = nullptr;
  std::shared_ptr<Exchange> ex;
  bool chat = true;
  bool stream = false;
  bool include_usage = false;
  int logprobs = -1;  // top-n per token, or -1
  bool echo = false;
  std::string id;
  int64_t created = 0;
  std::string model;
  std::vector<std::vector<TokenId>> prompts;
  std::vector<std::string> prompt_texts;
  std::vector<std::vector<TokenInfo>> prompt_logprobs;
  std::vector<Choice> choices;
  std::vector<RequestId> ids;
  std::mutex mu;
  size_t remaining = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  Clock::time_point start = Clock::now();
  bool failed = false;

  json chat_logprobs(const std::vector<TokenInfo>& toks) const {
    json content = json::array();
    for (const auto& t : toks) {
      json top = json::array();
      for (const auto& x : t.top) {
        std::string s = svc->engine_->detokenize({x.id}, false);
        top.push_back({{"token", s}, {"logprob", x.logprob}, {"bytes", bytes_of(s)}});
      }
      content.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", bytes_of(t.text)}, {"top_logprobs", top}});
    }
    return json{{"content", content}};
  }

  // OpenAI's legacy completions logprobs object; `offset` is the text offset of the first token.
  json completion_logprobs(const std::vector<TokenInfo>& toks, size_t offset, bool first_null) const {
    json tokens = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
    for (size_t i = 0; i < toks.size(); ++i) {
      const auto& t = toks[i];
      tokens.push_back(t.text);
      const bool null_lp = (first_null && i == 0) || std::isnan(t.logprob);
      lps.push_back(null_lp ? json(nullptr) : json(t.logprob));
      if (null_lp) {
        tops.push_back(nullptr);
      } else {
        json top = json::object();
        for (const auto& x : t.top) top[svc->engine_->detokenize({x.id}, false)] = x.logprob;
        tops.push_back(top);
      }
      offs.push_back(offset);
      offset += t.text.size();
    }
    return json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
  }

  json usage() const {
    int64_t completion = 0;
    for (const auto& c : choices) completion += int64_t(c.tokens.size());
    json u = {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion},
              {"total_tokens", prompt_tokens + completion}};
    u["prompt_tokens_details"] = {{"cached_tokens", cached_tokens}};
    return u;
  }

  void send_chunk(json choice) {
    json j = {{"id", id}, {"object", chat ? "chat.completion.chunk" : "text_completion"}, {"created", created},
              {"model", model}, {"choices", json::array({std::move(choice)})}};
    if (include_usage) j["usage"] = nullptr;
    ex->send("data: " + dump(j) + "\n\n");
  }

  void on_chunk(size_t ci, const StreamChunk& ch) {  // engine thread
    std::lock_guard<std::mutex> lk(mu);
    Choice& c = choices[ci];
    const auto now = Clock::now();
    if (!ch.tokens.empty()) {
      if (!c.first_seen) {
        c.first_seen = true;
        svc->metrics_.first_token(std::chrono::duration<double>(now - start).count());
      } else {
        svc->metrics_.inter_token(std::chrono::duration<double>(now - c.last).count());
      }
      c.last = now;
    }
    c.text += ch.text;
    if (!ch.prompt_logprobs.empty()) prompt_logprobs[c.prompt_index] = ch.prompt_logprobs;
    const size_t first_new = c.tokens.size();
    for (const auto& t : ch.tokens) c.tokens.push_back(t);
    if (ch.finished) {
      c.done = true;
      c.finish = ch.finish_reason;
      c.error = ch.error;
      if (!ch.error.empty()) svc->metrics_.request_failed();
      else svc->metrics_.request_finished(ch.finish_reason, std::chrono::duration<double>(now - start).count(), ch.queue_s);
      if (ci == 0 || choices[ci].prompt_index != choices[ci - 1].prompt_index) cached_tokens += ch.n_cached_tokens;
      --remaining;
    }
    if (stream && !failed) {
      std::vector<TokenInfo> fresh(c.tokens.begin() + first_new, c.tokens.end());
      if (chat) {
        if (!c.role_sent) {
          c.role_sent = true;
          send_chunk({{"index", ci}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                      {"finish_reason", nullptr}});
        }
        if (!ch.text.empty() || (logprobs >= 0 && !fresh.empty()))
          send_chunk({{"index", ci}, {"delta", {{"content", ch.text}}},
                      {"logprobs", logprobs >= 0 ? chat_logprobs(fresh) : json(nullptr)}, {"finish_reason", nullptr}});
        if (c.done && c.error.empty())
          send_chunk({{"index", ci}, {"delta", json::object()}, {"logprobs", nullptr},
                      {"finish_reason", to_string(c.finish)}});
      } else {
        if (!ch.text.empty() || (logprobs >= 0 && !fresh.empty()) || c.done) {
          json choice = {{"index", ci}, {"text", ch.text},
                         {"logprobs", logprobs >= 0 ? completion_logprobs(fresh, c.text.size() - ch.text.size(), false)
                                                    : json(nullptr)},
                         {"finish_reason", c.done && c.error.empty() ? json(to_string(c.finish)) : json(nullptr)}};
          send_chunk(choice);
        }
      }
    }
    if (remaining == 0) finish_locked();
  }

  void finish_locked() {
    --svc->in_flight_;
    for (const auto& c : choices)
      if (!c.error.empty() || c.finish == FinishReason::Cancelled) {
        if (c.finish == FinishReason::Cancelled && c.error.empty()) return;  // client gone: nothing to send
        if (stream) {
          ex->send("data: " + dump(json{{"error", {{"message", c.error}, {"type", "server_error"}}}}) + "\n\n");
          ex->end_stream();
        } else {
          send_error(*ex, api_error(500, c.error, "server_error"));
        }
        return;
      }
    if (stream) {
      if (include_usage)
        ex->send("data: " + dump(json{{"id", id}, {"object", chat ? "chat.completion.chunk" : "text_completion"},
                                      {"created", created}, {"model", model}, {"choices", json::array()},
                                      {"usage", usage()}}) + "\n\n");
      ex->end_stream("data: [DONE]\n\n");
      return;
    }
    json arr = json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
      const Choice& c = choices[i];
      if (chat) {
        arr.push_back({{"index", i}, {"message", {{"role", "assistant"}, {"content", c.text}}},
                       {"logprobs", logprobs >= 0 ? chat_logprobs(c.tokens) : json(nullptr)},
                       {"finish_reason", to_string(c.finish)}});
      } else {
        std::string text = c.text;
        json lp = nullptr;
        if (echo) text = prompt_texts[c.prompt_index] + c.text;
        if (logprobs >= 0) {
          std::vector<TokenInfo> all;
          if (echo) all = prompt_logprobs[c.prompt_index];
          all.insert(all.end(), c.tokens.begin(), c.tokens.end());
          lp = completion_logprobs(all, 0, echo);
        }
        arr.push_back({{"index", i}, {"text", text}, {"logprobs", lp}, {"finish_reason", to_string(c.finish)}});
      }
    }
    json j = {{"id", id}, {"object", chat ? "chat.completion" : "text_completion"}, {"created", created},
              {"model", model}, {"choices", arr}, {"usage", usage()}};
    ex->respond(200, "application/json", dump(j));
  }

  // Submits every choice; throws what submit() throws (nothing was started then).
  void launch(const SamplingParams& base, int n) {
    auto self = shared_from_this();
    for (size_t p = 0; p < prompts.size(); ++p)
      for (int k = 0; k < n; ++k) {
        Choice c;
        c.prompt_index = p;
        choices.push_back(c);
      }
    remaining = choices.size();
    ++svc->in_flight_;
    // NOTE: chunks may arrive on the engine thread as soon as a choice is submitted; holding mu until
    // the stream's headers are queued keeps them behind the headers.
    std::unique_lock<std::mutex> lk(mu);
    for (size_t ci = 0; ci < choices.size(); ++ci) {
      SamplingParams sp = base;
      if (sp.seed) sp.seed = *sp.seed + (ci % size_t(n));
      if (logprobs >= 0) sp.logprobs = logprobs;
      if (echo && logprobs >= 0) sp.prompt_logprobs = logprobs;
      try {
        const size_t pi = choices[ci].prompt_index;
        ids.push_back(svc->engine_->submit(prompts[pi], sp, [self, ci](const StreamChunk& ch) {
          self->on_chunk(ci, ch);
        }));
      } catch (...) {
        failed = true;
        for (RequestId id : ids) svc->engine_->cancel(id);
        --svc->in_flight_;
        remaining = size_t(-1) / 2;  // callbacks of cancelled choices must not answer
        throw;
      }
    }
    if (stream) ex->start_stream(200, "text/event-stream");
    std::weak_ptr<GenerationJob> weak = self;
    ex->on_close([weak]() {
      if (auto j = weak.lock()) {
        std::lock_guard<std::mutex> g(j->mu);
        for (RequestId id : j->ids) j->svc->engine_->cancel(id);
      }
    });
  }
};

void OpenAiService::set_engine(std::shared_ptr<Engine> engine) {
  engine_ = std::move(engine);
  if (opts_.model_name.empty()) opts_.model_name = engine_->info().path;
  ready_ = true;
}

void OpenAiService::handle(const HttpRequest& req, std::shared_ptr<Exchange> ex) {
  try {
    if (req.path == "/health") {
      if (!ready_)
        return ex->respond(503, "application/json", R"({"status":"loading","error":{"message":"Loading model","type":"unavailable_error","code":503}})");
      return ex->respond(200, "application/json", R"({"status":"ok"})");
    }
    if (req.path == "/metrics") {
      EngineStats st;
      if (ready_) st = engine_->stats();
      return ex->respond(200, "text/plain; version=0.0.4", metrics_.render(opts_.model_name, ready_ ? &st : nullptr));
    }
    const bool known = req.path == "/v1/chat/completions" || req.path == "/v1/completions" ||
                       req.path == "/v1/models" || req.path == "/tokenize" || req.path == "/detokenize";
    if (!known) return send_error(*ex, api_error(404, "Not found: " + req.path, "invalid_request_error", "not_found"));
    if (!opts_.api_key.empty()) {
      auto it = req.headers.find("authorization");
      const std::string want = "Bearer " + opts_.api_key;
      if (it == req.headers.end() || it->second != want)
        return send_error(*ex, api_error(401, it == req.headers.end() ? "Missing API key: send 'Authorization: Bearer KEY'"
                                                                      : "Incorrect API key provided.",
                                         "invalid_request_error", "invalid_api_key"));
    }
    if (!ready_) return send_error(*ex, api_error(503, "Loading model", "unavailable_error"));
    if (draining_) return send_error(*ex, api_error(503, "The server is shutting down", "unavailable_error"));
    if (req.path == "/v1/models") {
      if (req.method != "GET") return send_error(*ex, api_error(405, "Use GET for /v1/models"));
      return models(ex);
    }
    if (req.method != "POST") return send_error(*ex, api_error(405, "Use POST for " + req.path));
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::parse_error& e) {
      return send_error(*ex, api_error(400, std::string("Invalid JSON body: ") + e.what()));
    }
    if (!body.is_object()) return send_error(*ex, api_error(400, "The request body must be a JSON object"));
    if (req.path == "/v1/chat/completions" || req.path == "/v1/completions") {
      if (auto m = opt_str(body, "model"); m && *m != opts_.model_name)
        return send_error(*ex, api_error(404, "The model `" + *m + "` does not exist.", "invalid_request_error",
                                         "model_not_found"));
    }
    if (req.path == "/v1/chat/completions") return chat_completions(body, ex);
    if (req.path == "/v1/completions") return completions(body, ex);
    if (req.path == "/tokenize") return tokenize(body, ex);
    return detokenize(body, ex);
  } catch (const ApiException& e) {
    send_error(*ex, e.error);
  } catch (const std::exception& e) {
    send_error(*ex, engine_error(e));
  }
}

void OpenAiService::models(std::shared_ptr<Exchange> ex) {
  const auto& info = engine_->info();
  json m = {{"id", opts_.model_name}, {"object", "model"}, {"created", int64_t(std::time(nullptr))},
            {"owned_by", "ignis"}, {"max_model_len", info.n_ctx}};
  ex->respond(200, "application/json", dump(json{{"object", "list"}, {"data", json::array({m})}}));
}

void OpenAiService::chat_completions(const json& body, std::shared_ptr<Exchange> ex) {
  CommonFields f = parse_common(body, engine_ ? engine_->default_sampling_params() : SamplingParams{});
  json messages = normalize_messages(body.contains("messages") ? body["messages"] : json());
  json tools = body.contains("tools") && !body["tools"].is_null() ? body["tools"] : json(nullptr);
  if (!tools.is_null() && !tools.is_array()) bad_param("tools", "'tools' must be an array");
  json kwargs = json::object();
  if (auto it = body.find("chat_template_kwargs"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) bad_param("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    kwargs = *it;
  }
  auto job = std::make_shared<GenerationJob>();
  job->svc = this;
  job->ex = ex;
  job->chat = true;
  job->stream = f.stream;
  job->include_usage = f.stream && f.include_usage;
  if (opt_boolean(body, "logprobs").value_or(false))
    job->logprobs = int(opt_integer(body, "top_logprobs", 0, 20).value_or(0));
  else if (opt_integer(body, "top_logprobs", 0, 20))
    bad_param("top_logprobs", "'top_logprobs' requires 'logprobs': true");
  job->id = random_id("chatcmpl-");
  job->created = std::time(nullptr);
  job->model = opts_.model_name;
  const std::string prompt = engine_->apply_chat_template(messages, tools, true, kwargs);
  job->prompts.push_back(engine_->tokenize(prompt, false, true));
  job->prompt_tokens = int64_t(job->prompts[0].size());
  if (!f.max_tokens_given) f.params.max_tokens = int32_t(std::max<int64_t>(0, engine_->info().n_ctx - job->prompt_tokens));
  job->launch(f.params, f.n);
}

void OpenAiService::completions(const json& body, std::shared_ptr<Exchange> ex) {
  CommonFields f = parse_common(body, engine_ ? engine_->default_sampling_params() : SamplingParams{});
  auto job = std::make_shared<GenerationJob>();
  job->svc = this;
  job->ex = ex;
  job->chat = false;
  job->stream = f.stream;
  job->include_usage = f.stream && f.include_usage;
  job->echo = opt_boolean(body, "echo").value_or(false);
  if (auto v = opt_integer(body, "logprobs", 0, 20)) job->logprobs = int(*v);
  if (job->echo && f.stream) bad_param("echo", "'echo' is not supported together with 'stream'");
  if (!f.max_tokens_given) f.params.max_tokens = 16;  // OpenAI's default for completions
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) bad_param("prompt", "'prompt' is required");
  auto add_text = [&](const std::string& s) {
    job->prompts.push_back(engine_->tokenize(s, true, true));
    job->prompt_texts.push_back(s);
  };
  auto add_ids = [&](const json& arr) {
    std::vector<TokenId> ids;
    for (const auto& t : arr) {
      if (!t.is_number_integer()) bad_param("prompt", "'prompt' token arrays must hold integers");
      ids.push_back(t.get<TokenId>());
    }
    job->prompt_texts.push_back(engine_->detokenize(ids, false));
    job->prompts.push_back(std::move(ids));
  };
  if (it->is_string()) {
    add_text(it->get<std::string>());
  } else if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) {
    add_ids(*it);
  } else if (it->is_array() && !it->empty()) {
    for (const auto& p : *it) {
      if (p.is_string()) add_text(p.get<std::string>());
      else if (p.is_array()) add_ids(p);
      else bad_param("prompt", "'prompt' must be a string, an array of strings, or token arrays");
    }
  } else {
    bad_param("prompt", "'prompt' must be a non-empty string, array of strings, or token arrays");
  }
  if (job->prompts.size() * size_t(f.n) > 256) bad_param("n", "too many choices: prompts x n must be <= 256");
  for (const auto& p : job->prompts) job->prompt_tokens += int64_t(p.size());
  job->prompt_logprobs.resize(job->prompts.size());
  job->id = random_id("cmpl-");
  job->created = std::time(nullptr);
  job->model = opts_.model_name;
  job->launch(f.params, f.n);
}

void OpenAiService::tokenize(const json& body, std::shared_ptr<Exchange> ex) {
  const bool add_special = opt_boolean(body, "add_special_tokens").value_or(opt_boolean(body, "add_special").value_or(true));
  const bool parse_special = opt_boolean(body, "parse_special").value_or(true);
  std::vector<TokenId> ids;
  if (body.contains("messages")) {
    json messages = normalize_messages(body["messages"]);
    const bool gen = opt_boolean(body, "add_generation_prompt").value_or(true);
    ids = engine_->tokenize(engine_->apply_chat_template(messages, nullptr, gen, json::object()), false, true);
  } else {
    auto text = opt_str(body, "prompt");
    if (!text) text = opt_str(body, "content");
    if (!text) bad_param("prompt", "'prompt' (or 'content') is required");
    ids = engine_->tokenize(*text, add_special, parse_special);
  }
  ex->respond(200, "application/json",
              dump(json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", engine_->info().n_ctx}}));
}

void OpenAiService::detokenize(const json& body, std::shared_ptr<Exchange> ex) {
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array()) bad_param("tokens", "'tokens' must be an array of token ids");
  std::vector<TokenId> ids;
  for (const auto& t : *it) {
    if (!t.is_number_integer()) bad_param("tokens", "'tokens' must be an array of token ids");
    ids.push_back(t.get<TokenId>());
  }
  std::string text = engine_->detokenize(ids, false);
  ex->respond(200, "application/json", dump(json{{"prompt", text}, {"content", text}}));
}

}  // namespace ignis::server
