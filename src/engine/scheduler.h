// The scheduler: which requests run in the next engine step and how many tokens each computes.
//
// NOTE: there are no prefill or decode phases (vLLM's design). Each request has known tokens (prompt plus
// generated) and computed tokens (their K/V is in the cache); every step hands out a token budget so
// that computed catches up with known: running requests first (oldest first), then waiting ones in
// arrival order. A long prompt is therefore prefilled in chunks, mixed with other requests' single-token
// decode steps. When the KV pool runs out, the newest running request is preempted: its blocks are
// freed and it goes back to the front of the waiting queue, to be recomputed later (never failed).
// A waiting request whose next uncached prompt blocks (at least min_shared_wait_tokens of them) are
// being computed right now by a running request waits for them instead of computing them again, so a
// long system prompt shared by requests that arrive together is prefilled once; requests behind it
// may be admitted meanwhile.
// Not thread-safe: one engine thread owns the scheduler.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/kv_cache_manager.h"

namespace ignis::engine {

using RequestId = int64_t;

enum class RequestStatus { Waiting, Running, Finished };
enum class FinishReason { None, Stop, Length, Cancelled };

struct SchedRequest {
  RequestId id = 0;
  std::vector<int32_t> tokens;  // prompt followed by generated tokens (the known tokens)
  int32_t n_prompt = 0;
  int32_t n_computed = 0;       // tokens whose K/V is in the cache
  int32_t max_new_tokens = 0;   // generation stops when this many tokens were generated
  RequestStatus status = RequestStatus::Waiting;
  FinishReason finish = FinishReason::None;
  SeqBlocks blocks;
  int32_t n_cached_prompt = 0;  // prompt tokens served from the prefix cache at the last admission
  int32_t n_preemptions = 0;
  bool skip_prefix_cache = false;  // e.g. prompt logprobs wanted: every prompt position is computed
  // Scheduler-private: hashes of the full blocks of tokens[0, n_known_hashed - 1), computed when the
  // request is first considered for admission (see KvCacheManager::prefix_hashes).
  std::vector<BlockHash> prefix_hashes;
  int32_t n_known_hashed = -1;

  int32_t n_generated() const { return static_cast<int32_t>(tokens.size()) - n_prompt; }
};

struct SchedulerConfig {
  int32_t max_batched_tokens = 512;  // token budget per step
  int32_t max_seqs = 16;             // requests running at once
  int32_t max_queue = 256;           // waiting requests admitted before add() refuses
  // A waiting request defers admission while at least this many of its next prompt tokens (whole
  // blocks) are being computed by a running request; 0 disables deferral.
  int32_t min_shared_wait_tokens = 128;
};

struct ScheduledSeq {
  RequestId id = 0;
  int32_t pos = 0;          // position of the first token computed this step (= n_computed before)
  int32_t n_tokens = 0;     // tokens computed this step
  bool samples = false;     // the step reaches the last known token: its logits yield a new token
};

struct SchedulerOutput {
  std::vector<ScheduledSeq> seqs;      // in batch order
  std::vector<RequestId> preempted;    // requests preempted while building this step
  int32_t n_tokens = 0;                // total tokens this step
  bool empty() const { return seqs.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& cfg, int32_t n_blocks, int32_t block_size, bool prefix_caching = true);

  // Queues a request (status Waiting). Returns false, and keeps nothing, when the queue is full.
  bool add(std::shared_ptr<SchedRequest> req);
  SchedulerOutput schedule();
  // After the step ran: advances computed tokens, appends sampled tokens (one per seq with samples=true,
  // in the same order as out.seqs; -1 for none), and finishes requests that reached max_new_tokens or
  // whose sampled token is in `stop` (is_stop(token) = true). Finished requests' blocks are freed.
  template <typename IsStop>
  std::vector<std::shared_ptr<SchedRequest>> update(const SchedulerOutput& out, const std::vector<int32_t>& sampled,
                                                    IsStop is_stop);
  // Same, with the stop decision made by the caller: stop[i] for out.seqs[i].
  std::vector<std::shared_ptr<SchedRequest>> update_with_flags(const SchedulerOutput& out,
                                                               const std::vector<int32_t>& sampled,
                                                               const std::vector<bool>& stop);
  // Ends a request wherever it is (cancellation, client gone); its blocks are free on return.
  void finish(RequestId id, FinishReason reason);

  size_t n_waiting() const { return waiting_.size(); }
  size_t n_running() const { return running_.size(); }
  bool idle() const { return waiting_.empty() && running_.empty(); }
  std::shared_ptr<SchedRequest> find(RequestId id) const;
  KvCacheManager& kv() { return kv_; }
  const KvCacheManager& kv() const { return kv_; }
  const SchedulerConfig& config() const { return cfg_; }

 private:
  void preempt(const std::shared_ptr<SchedRequest>& r);
  // Tokens at the start of r's uncached blocks (after `n_hit_blocks` cached ones) that running
  // requests are computing now (blocks listed in `in_flight`).
  int32_t shared_in_flight(SchedRequest& r, size_t n_hit_blocks,
                           const std::unordered_set<BlockHash>& in_flight) const;
  void finish_request(const std::shared_ptr<SchedRequest>& r, FinishReason reason);
  void advance(const SchedulerOutput& out, const std::vector<int32_t>& sampled,
               std::vector<std::shared_ptr<SchedRequest>>& finished, const std::vector<bool>& stop_flags);

  SchedulerConfig cfg_;
  KvCacheManager kv_;
  std::deque<std::shared_ptr<SchedRequest>> waiting_;
  std::vector<std::shared_ptr<SchedRequest>> running_;  // admission order, oldest first
};

template <typename IsStop>
std::vector<std::shared_ptr<SchedRequest>> Scheduler::update(const SchedulerOutput& out,
                                                             const std::vector<int32_t>& sampled, IsStop is_stop) {
  std::vector<bool> stop_flags(sampled.size(), false);
  for (size_t i = 0; i < sampled.size(); ++i) stop_flags[i] = sampled[i] >= 0 && is_stop(sampled[i]);
  std::vector<std::shared_ptr<SchedRequest>> finished;
  advance(out, sampled, finished, stop_flags);
  return finished;
}

}  // namespace ignis::engine
