#include "server/metrics.h"

#include <fmt/format.h>

namespace ignis::server {
namespace {

// vLLM's bucket boundaries, so dashboards built for it read ignis the same way.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                          1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                         0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatencyBuckets = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

std::string num(double v) { return fmt::format("{}", v); }

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

void Histogram::observe(double v) {
  for (size_t i = 0; i < buckets_.size(); ++i)
    if (v <= buckets_[i]) {
      ++counts_[i];
      break;
    }
  ++count_;
  sum_ += v;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  uint64_t cum = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{" + labels + ",le=\"" + num(buckets_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  out += name + "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum{" + labels + "} " + num(sum_) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

Metrics::Metrics() : ttft_(kTtftBuckets), itl_(kItlBuckets), e2e_(kLatencyBuckets), queue_(kLatencyBuckets) {}

void Metrics::request_finished(FinishReason reason, double e2e_s, double queue_s) {
  std::lock_guard<std::mutex> lk(mu_);
  ++success_[to_string(reason)];
  e2e_.observe(e2e_s);
  queue_.observe(queue_s);
}
void Metrics::first_token(double s) {
  std::lock_guard<std::mutex> lk(mu_);
  ttft_.observe(s);
}
void Metrics::inter_token(double s) {
  std::lock_guard<std::mutex> lk(mu_);
  itl_.observe(s);
}
void Metrics::request_failed() {
  std::lock_guard<std::mutex> lk(mu_);
  ++failed_;
}

std::string Metrics::render(const std::string& model_name, const EngineStats* st) const {
  std::lock_guard<std::mutex> lk(mu_);
  std::string out;
  const std::string lb = "model_name=\"" + model_name + "\"";
  EngineStats s = st ? *st : EngineStats{};
  auto gauge = [&](const std::string& n, const char* help, double v) {
    header(out, n, "gauge", help);
    out += n + "{" + lb + "} " + num(v) + "\n";
  };
  auto counter = [&](const std::string& n, const char* help, double v) {
    header(out, n, "counter", help);
    out += n + "{" + lb + "} " + num(v) + "\n";
  };
  gauge("ignis:num_requests_running", "Number of requests in model execution batches.", s.n_running);
  gauge("ignis:num_requests_waiting", "Number of requests waiting to be processed.", s.n_waiting);
  gauge("ignis:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", s.kv_usage);
  counter("ignis:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
          double(s.prefix_queries));
  counter("ignis:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
          double(s.prefix_hits));
  counter("ignis:num_preemptions_total", "Cumulative number of preemptions from the engine.", double(s.n_preemptions));
  counter("ignis:prompt_tokens_total", "Number of prefill tokens processed.", double(s.prompt_tokens));
  counter("ignis:generation_tokens_total", "Number of generation tokens processed.", double(s.generation_tokens));
  header(out, "ignis:request_success_total", "counter", "Count of successfully processed requests.");
  for (const char* reason : {"stop", "length", "cancelled"}) {
    auto it = success_.find(reason);
    out += "ignis:request_success_total{" + lb + ",finished_reason=\"" + reason + "\"} " +
           std::to_string(it == success_.end() ? 0 : it->second) + "\n";
  }
  counter("ignis:request_failure_total", "Count of requests that failed inside the engine.", double(failed_));
  header(out, "ignis:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.");
  ttft_.render(out, "ignis:time_to_first_token_seconds", lb);
  header(out, "ignis:inter_token_latency_seconds", "histogram", "Histogram of inter-token latency in seconds.");
  itl_.render(out, "ignis:inter_token_latency_seconds", lb);
  header(out, "ignis:e2e_request_latency_seconds", "histogram", "Histogram of end to end request latency in seconds.");
  e2e_.render(out, "ignis:e2e_request_latency_seconds", lb);
  header(out, "ignis:request_queue_time_seconds", "histogram",
         "Histogram of time spent in the waiting queue in seconds.");
  queue_.render(out, "ignis:request_queue_time_seconds", lb);
  return out;
}

}  // namespace ignis::server
