#include "engine/scheduler.h"

#include <algorithm>
#include <span>

namespace ignis::engine {

Scheduler::Scheduler(const SchedulerConfig& cfg, int32_t n_blocks, int32_t block_size, bool prefix_caching)
    : cfg_(cfg), kv_(n_blocks, block_size, prefix_caching) {}

bool Scheduler::add(std::shared_ptr<SchedRequest> req) {
  if (static_cast<int32_t>(waiting_.size()) >= cfg_.max_queue) return false;
  req->status = RequestStatus::Waiting;
  waiting_.push_back(std::move(req));
  return true;
}

std::shared_ptr<SchedRequest> Scheduler::find(RequestId id) const {
  for (const auto& r : running_)
    if (r->id == id) return r;
  for (const auto& r : waiting_)
    if (r->id == id) return r;
  return nullptr;
}

void Scheduler::preempt(const std::shared_ptr<SchedRequest>& r) {
  kv_.free(r->blocks);
  r->n_computed = 0;
  r->status = RequestStatus::Waiting;
  ++r->n_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), r));
  waiting_.push_front(r);
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int32_t budget = cfg_.max_batched_tokens;
  // 1. Running requests, oldest first. Preemption takes the newest running request.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    auto r = running_[i];
    const int32_t known = static_cast<int32_t>(r->tokens.size());
    const int32_t n_new = std::min(known - r->n_computed, budget);
    if (n_new <= 0) {
      ++i;
      continue;
    }
    bool ok = kv_.allocate(r->blocks, r->n_computed, n_new);
    while (!ok) {
      auto victim = running_.back();
      // Drop the victim from this step's batch if it was already scheduled.
      for (auto it = out.seqs.begin(); it != out.seqs.end(); ++it)
        if (it->id == victim->id) {
          budget += it->n_tokens;
          out.n_tokens -= it->n_tokens;
          out.seqs.erase(it);
          break;
        }
      preempt(victim);
      out.preempted.push_back(victim->id);
      if (victim == r) break;
      ok = kv_.allocate(r->blocks, r->n_computed, n_new);
    }
    if (!ok) break;  // r itself was preempted: it was the newest, nothing after it runs
    out.seqs.push_back({r->id, r->n_computed, n_new, r->n_computed + n_new == known});
    out.n_tokens += n_new;
    budget -= n_new;
    ++i;
  }
  // 2. Waiting requests in order, unless something was preempted this step (memory is short).
  // NOTE: blocks that running requests have still to compute (their hashes are known from their
  // tokens) are "in flight": a waiting request that would compute the same blocks waits for them
  // when that saves at least min_shared_wait_tokens (see the header); a short shared head, such as a
  // chat template's first block, is not worth a step of latency.
  std::unordered_set<BlockHash> in_flight;
  const bool defer = kv_.prefix_caching() && cfg_.min_shared_wait_tokens > 0;
  const int32_t bs = kv_.block_size();
  auto add_in_flight = [&](SchedRequest& r) {
    for (size_t b = size_t(r.n_computed / bs); b < r.prefix_hashes.size(); ++b) in_flight.insert(r.prefix_hashes[b]);
  };
  if (defer)
    for (const auto& r : running_) add_in_flight(*r);
  for (size_t w = 0; out.preempted.empty() && budget > 0 && w < waiting_.size() &&
                     static_cast<int32_t>(running_.size()) < cfg_.max_seqs;) {
    auto r = waiting_[w];
    const int32_t known = static_cast<int32_t>(r->tokens.size());
    const bool use_cache = !r->skip_prefix_cache && kv_.prefix_caching();
    PrefixHit hit = use_cache ? kv_.lookup_prefix(std::span<const int32_t>(r->tokens)) : PrefixHit{};
    if (use_cache && defer && shared_in_flight(*r, hit.blocks.size(), in_flight) >= cfg_.min_shared_wait_tokens) {
      ++w;
      continue;
    }
    const int32_t n_new = std::min(known - hit.n_tokens, budget);
    if (!kv_.allocate(r->blocks, hit.n_tokens, n_new, hit)) break;
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(w));
    if (!r->skip_prefix_cache) kv_.count_query(known, hit.n_tokens);
    r->n_computed = hit.n_tokens;
    r->n_cached_prompt = std::min(hit.n_tokens, r->n_prompt);
    r->status = RequestStatus::Running;
    running_.push_back(r);
    if (defer && use_cache) add_in_flight(*r);
    out.seqs.push_back({r->id, r->n_computed, n_new, r->n_computed + n_new == known});
    out.n_tokens += n_new;
    budget -= n_new;
  }
  return out;
}

int32_t Scheduler::shared_in_flight(SchedRequest& r, size_t n_hit_blocks,
                                    const std::unordered_set<BlockHash>& in_flight) const {
  const int32_t known = static_cast<int32_t>(r.tokens.size());
  if (r.n_known_hashed != known) {
    r.prefix_hashes = kv_.prefix_hashes(std::span<const int32_t>(r.tokens));
    r.n_known_hashed = known;
  }
  int32_t n = 0;
  for (size_t b = n_hit_blocks; b < r.prefix_hashes.size() && in_flight.count(r.prefix_hashes[b]); ++b)
    n += kv_.block_size();
  return n;
}

void Scheduler::advance(const SchedulerOutput& out, const std::vector<int32_t>& sampled,
                        std::vector<std::shared_ptr<SchedRequest>>& finished, const std::vector<bool>& stop_flags) {
  for (size_t i = 0; i < out.seqs.size(); ++i) {
    const ScheduledSeq& s = out.seqs[i];
    auto r = find(s.id);
    if (!r || r->status != RequestStatus::Running) continue;  // cancelled during the step
    r->n_computed = s.pos + s.n_tokens;
    kv_.cache_full_blocks(r->blocks, std::span<const int32_t>(r->tokens), r->n_computed);
    if (!s.samples || i >= sampled.size() || sampled[i] < 0) continue;
    r->tokens.push_back(sampled[i]);
    if (stop_flags[i]) {
      finish_request(r, FinishReason::Stop);
      finished.push_back(r);
    } else if (r->n_generated() >= r->max_new_tokens) {
      finish_request(r, FinishReason::Length);
      finished.push_back(r);
    }
  }
}

std::vector<std::shared_ptr<SchedRequest>> Scheduler::update_with_flags(const SchedulerOutput& out,
                                                                        const std::vector<int32_t>& sampled,
                                                                        const std::vector<bool>& stop) {
  std::vector<std::shared_ptr<SchedRequest>> finished;
  advance(out, sampled, finished, stop);
  return finished;
}

void Scheduler::finish_request(const std::shared_ptr<SchedRequest>& r, FinishReason reason) {
  kv_.free(r->blocks);
  r->status = RequestStatus::Finished;
  r->finish = reason;
  auto it = std::find(running_.begin(), running_.end(), r);
  if (it != running_.end()) running_.erase(it);
  auto wt = std::find(waiting_.begin(), waiting_.end(), r);
  if (wt != waiting_.end()) waiting_.erase(wt);
}

void Scheduler::finish(RequestId id, FinishReason reason) {
  if (auto r = find(id)) finish_request(r, reason);
}

}  // namespace ignis::engine
