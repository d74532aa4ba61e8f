// The OpenAI-compatible HTTP API over an ignis::Engine: /v1/chat/completions, /v1/completions,
// /v1/models, /health, /metrics, /tokenize, /detokenize.
//
// The service answers /health with 503 until set_engine() is called (the model loads in the
// background), checks the API key, parses and validates requests into SamplingParams (a wrong field
// gives 400 naming it), submits one engine request per choice and shapes responses and SSE chunks as
// OpenAI does. A client that disconnects mid-request has its engine requests cancelled. handle() is
// thread-safe; responses are written from the engine thread through the Exchange.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "ignis/engine.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace ignis::server {

struct ServiceOptions {
  std::string api_key;     // empty: no authentication
  std::string model_name;  // the id /v1/models reports and requests may name
};

// An error answered to the client: HTTP status, OpenAI error type/code, message, and the param at fault.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string code;
  std::string param;
};

class OpenAiService {
 public:
  explicit OpenAiService(ServiceOptions opts) : opts_(std::move(opts)) {}
  void set_engine(std::shared_ptr<Engine> engine);
  bool ready() const { return ready_.load(); }
  void set_draining(bool d) { draining_ = d; }
  void handle(const HttpRequest& req, std::shared_ptr<Exchange> ex);
  size_t in_flight() const { return in_flight_.load(); }
  Metrics& metrics() { return metrics_; }

 private:
  void chat_completions(const nlohmann::ordered_json& body, std::shared_ptr<Exchange> ex);
  void completions(const nlohmann::ordered_json& body, std::shared_ptr<Exchange> ex);
  void tokenize(const nlohmann::ordered_json& body, std::shared_ptr<Exchange> ex);
  void detokenize(const nlohmann::ordered_json& body, std::shared_ptr<Exchange> ex);
  void models(std::shared_ptr<Exchange> ex);

  ServiceOptions opts_;
  std::shared_ptr<Engine> engine_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<size_t> in_flight_{0};
  Metrics metrics_;
  friend struct GenerationJob;
};

void send_error(Exchange& ex, const ApiError& e);

}  // namespace ignis::server
