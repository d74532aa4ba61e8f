// Server metrics in Prometheus text format, with the set vLLM exposes, named `ignis:`.
//
// Counters and histograms are updated by request handlers on any thread (a mutex guards them); gauges
// come from the engine's stats at scrape time. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ignis/engine.h"

namespace ignis::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> buckets) : buckets_(std::move(buckets)), counts_(buckets_.size(), 0) {}
  void observe(double v);
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> buckets_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative)
  uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  Metrics();
  void request_finished(FinishReason reason, double e2e_s, double queue_s);
  void first_token(double ttft_s);
  void inter_token(double itl_s);
  void request_failed();
  // Prometheus exposition text; `stats` from the engine (or nullptr while loading).
  std::string render(const std::string& model_name, const EngineStats* stats) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> success_;  // by finished_reason
  uint64_t failed_ = 0;
  Histogram ttft_, itl_, e2e_, queue_;
};

}  // namespace ignis::server
