#include "engine/scheduler.h"

#include <gtest/gtest.h>

using namespace ignis::engine;

namespace {

std::shared_ptr<SchedRequest> make(RequestId id, int32_t n_prompt, int32_t max_new, int32_t first_token = 1000) {
  auto r = std::make_shared<SchedRequest>();
  r->id = id;
  for (int32_t i = 0; i < n_prompt; ++i) r->tokens.push_back(first_token + i);
  r->n_prompt = n_prompt;
  r->max_new_tokens = max_new;
  return r;
}

// One step: schedule, then "sample" token 7 for every sequence that samples.
SchedulerOutput step(Scheduler& s, std::vector<std::shared_ptr<SchedRequest>>* finished = nullptr) {
  SchedulerOutput out = s.schedule();
  std::vector<int32_t> sampled;
  for (const auto& q : out.seqs) sampled.push_back(q.samples ? 7 : -1);
  auto fin = s.update(out, sampled, [](int32_t) { return false; });
  if (finished) *finished = fin;
  return out;
}

std::string describe(const SchedulerOutput& out) {
  std::string s;
  for (const auto& q : out.seqs)
    s += "r" + std::to_string(q.id) + "@" + std::to_string(q.pos) + "+" + std::to_string(q.n_tokens) +
         (q.samples ? "*" : "") + " ";
  for (auto p : out.preempted) s += "preempt:r" + std::to_string(p) + " ";
  return s;
}

}  // namespace

TEST(Scheduler, LongPromptIsPrefilledInChunksMixedWithDecodes) {
  SchedulerConfig cfg;
  cfg.max_batched_tokens = 8;
  Scheduler s(cfg, 64, 4);
  s.add(make(1, 3, 4));
  EXPECT_EQ(describe(step(s)), "r1@0+3* ");
  s.add(make(2, 20, 2, 2000));
  EXPECT_EQ(describe(step(s)), "r1@3+1* r2@0+7 ");
  EXPECT_EQ(describe(step(s)), "r1@4+1* r2@7+7 ");
  EXPECT_EQ(describe(step(s)), "r1@5+1* r2@14+6* ");
  std::vector<std::shared_ptr<SchedRequest>> fin;
  EXPECT_EQ(describe(step(s, &fin)), "r2@20+1* ");
  ASSERT_TRUE(s.idle());
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0]->id, 2);
  EXPECT_EQ(fin[0]->finish, FinishReason::Length);
  EXPECT_EQ(fin[0]->tokens.size(), 22u);
  EXPECT_EQ(s.kv().pool().n_free(), 64);
}

TEST(Scheduler, MaxSeqsBoundsTheRunningSet) {
  SchedulerConfig cfg;
  cfg.max_seqs = 2;
  Scheduler s(cfg, 64, 4);
  for (int i = 1; i <= 3; ++i) s.add(make(i, 2, 1, 100 * i));
  EXPECT_EQ(describe(step(s)), "r1@0+2* r2@0+2* ");
  EXPECT_EQ(s.n_waiting(), 0u + 1u);
  EXPECT_EQ(describe(step(s)), "r3@0+2* ");
  EXPECT_TRUE(s.idle());
}

TEST(Scheduler, QueueBoundRefusesOverload) {
  SchedulerConfig cfg;
  cfg.max_queue = 2;
  Scheduler s(cfg, 16, 4);
  EXPECT_TRUE(s.add(make(1, 2, 1)));
  EXPECT_TRUE(s.add(make(2, 2, 1)));
  EXPECT_FALSE(s.add(make(3, 2, 1)));
  EXPECT_EQ(s.n_waiting(), 2u);
}

TEST(Scheduler, NewestRunningRequestIsPreemptedAndRecomputedLater) {
  SchedulerConfig cfg;
  cfg.max_batched_tokens = 64;
  Scheduler s(cfg, 4, 4, /*prefix_caching=*/false);  // 16 tokens of KV in all
  s.add(make(1, 7, 6, 100));
  s.add(make(2, 7, 6, 200));
  EXPECT_EQ(describe(step(s)), "r1@0+7* r2@0+7* ");  // 2 blocks each: pool full
  EXPECT_EQ(describe(step(s)), "r1@7+1* r2@7+1* ");  // positions 7 still fit in block 1
  // Position 8 needs a third block for each: r2 (newest) is preempted, r1 continues.
  EXPECT_EQ(describe(step(s)), "r1@8+1* preempt:r2 ");
  auto r2 = s.find(2);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, RequestStatus::Waiting);
  EXPECT_EQ(r2->n_computed, 0);
  EXPECT_EQ(r2->n_preemptions, 1);
  EXPECT_EQ(r2->tokens.size(), 9u);  // its generated tokens are kept and recomputed
  // r2 needs 3 blocks to come back; only 1 is free until r1 finishes (6 tokens generated).
  EXPECT_EQ(describe(step(s)), "r1@9+1* ");
  EXPECT_EQ(describe(step(s)), "r1@10+1* ");
  EXPECT_EQ(describe(step(s)), "r1@11+1* ");
  EXPECT_EQ(describe(step(s)), "r2@0+9* ");
}

TEST(Scheduler, RepeatedSystemPromptIsServedFromThePrefixCache) {
  SchedulerConfig cfg;
  Scheduler s(cfg, 32, 4);
  auto a = make(1, 10, 1);  // tokens 1000..1009
  s.add(a);
  EXPECT_EQ(describe(step(s)), "r1@0+10* ");
  EXPECT_TRUE(s.idle());
  auto b = make(2, 12, 1);  // same first 10 tokens, then 1010, 1011
  s.add(b);
  // The two full blocks (8 tokens) are hits; computation starts at position 8.
  EXPECT_EQ(describe(step(s)), "r2@8+4* ");
  EXPECT_EQ(b->n_cached_prompt, 8);
  EXPECT_EQ(s.kv().prefix_hits(), 8u);
}

TEST(Scheduler, CancelledRequestFreesItsBlocksAtOnce) {
  SchedulerConfig cfg;
  Scheduler s(cfg, 8, 4, false);
  s.add(make(1, 9, 100));
  step(s);
  EXPECT_EQ(s.kv().pool().n_free(), 5);
  s.finish(1, FinishReason::Cancelled);
  EXPECT_EQ(s.kv().pool().n_free(), 8);
  EXPECT_TRUE(s.idle());
}

TEST(Scheduler, StopTokenFinishesWithReasonStop) {
  SchedulerConfig cfg;
  Scheduler s(cfg, 8, 4);
  s.add(make(1, 3, 100));
  auto out = s.schedule();
  auto fin = s.update(out, {2}, [](int32_t t) { return t == 2; });
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0]->finish, FinishReason::Stop);
  EXPECT_EQ(fin[0]->tokens.back(), 2);
}

namespace {

// A request whose prompt is `shared` tokens of a common head (2000, 2001, ...) then `own` tokens of its
// own (first_own, first_own + 1, ...).
std::shared_ptr<SchedRequest> make_shared_head(RequestId id, int32_t shared, int32_t own, int32_t first_own,
                                               int32_t max_new = 4) {
  auto r = std::make_shared<SchedRequest>();
  r->id = id;
  for (int32_t i = 0; i < shared; ++i) r->tokens.push_back(2000 + i);
  for (int32_t i = 0; i < own; ++i) r->tokens.push_back(first_own + i);
  r->n_prompt = shared + own;
  r->max_new_tokens = max_new;
  return r;
}

}  // namespace

TEST(Scheduler, SharedHeadArrivingTogetherIsPrefilledOnce) {
  SchedulerConfig cfg;
  cfg.max_batched_tokens = 32;
  cfg.min_shared_wait_tokens = 8;
  Scheduler s(cfg, 64, 4);
  s.add(make_shared_head(1, 12, 2, 100));  // 14 tokens: blocks 0..2 are the shared head
  s.add(make_shared_head(2, 12, 4, 200));  // 16 tokens: the same three blocks, then its own
  // r2's three head blocks are being computed by r1: it waits instead of computing them too.
  EXPECT_EQ(describe(step(s)), "r1@0+14* ");
  EXPECT_EQ(s.n_waiting(), 1u);
  // Now they are cached: r2 starts after them.
  EXPECT_EQ(describe(step(s)), "r1@14+1* r2@12+4* ");
  EXPECT_EQ(s.kv().prefix_queries(), 30u);  // counted once per admitted request
  EXPECT_EQ(s.kv().prefix_hits(), 12u);
}

TEST(Scheduler, SharedHeadInChunksWaitsUntilTheWholeHeadIsCached) {
  SchedulerConfig cfg;
  cfg.max_batched_tokens = 8;
  cfg.min_shared_wait_tokens = 8;
  Scheduler s(cfg, 64, 4);
  s.add(make_shared_head(1, 16, 2, 100));  // 18 tokens: head blocks 0..3
  s.add(make_shared_head(2, 16, 3, 200));
  EXPECT_EQ(describe(step(s)), "r1@0+8 ");
  // Blocks 0, 1 are cached now, but 2, 3 (8 tokens) are still in flight in r1.
  EXPECT_EQ(describe(step(s)), "r1@8+8 ");
  EXPECT_EQ(describe(step(s)), "r1@16+2* r2@16+3* ");
  auto r2 = s.find(2);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->n_cached_prompt, 16);
}

TEST(Scheduler, RequestBehindADeferredOneIsAdmitted) {
  SchedulerConfig cfg;
  cfg.max_batched_tokens = 32;
  cfg.min_shared_wait_tokens = 8;
  Scheduler s(cfg, 64, 4);
  s.add(make_shared_head(1, 12, 2, 100));
  s.add(make_shared_head(2, 12, 4, 200));  // waits for r1's head
  s.add(make(3, 5, 4, 5000));              // unrelated: runs at once
  EXPECT_EQ(describe(step(s)), "r1@0+14* r3@0+5* ");
  EXPECT_EQ(describe(step(s)), "r1@14+1* r3@5+1* r2@12+4* ");
}

TEST(Scheduler, ShortSharedHeadIsNotWorthWaitingFor) {
  SchedulerConfig cfg;
  cfg.max_batched_tokens = 32;
  cfg.min_shared_wait_tokens = 8;
  Scheduler s(cfg, 64, 4);
  s.add(make_shared_head(1, 4, 3, 100));  // one shared block (4 tokens) < 8
  s.add(make_shared_head(2, 4, 3, 200));
  EXPECT_EQ(describe(step(s)), "r1@0+7* r2@0+7* ");
}

TEST(Scheduler, DeferralCanBeDisabled) {
  SchedulerConfig cfg;
  cfg.max_batched_tokens = 32;
  cfg.min_shared_wait_tokens = 0;
  Scheduler s(cfg, 64, 4);
  s.add(make_shared_head(1, 12, 2, 100));
  s.add(make_shared_head(2, 12, 4, 200));
  EXPECT_EQ(describe(step(s)), "r1@0+14* r2@0+16* ");
}

TEST(Scheduler, PromptLogprobRequestsNeverWait) {
  SchedulerConfig cfg;
  cfg.max_batched_tokens = 32;
  cfg.min_shared_wait_tokens = 8;
  Scheduler s(cfg, 64, 4);
  s.add(make_shared_head(1, 12, 2, 100));
  auto r2 = make_shared_head(2, 12, 4, 200);
  r2->skip_prefix_cache = true;
  s.add(r2);
  EXPECT_EQ(describe(step(s)), "r1@0+14* r2@0+16* ");
}

TEST(Scheduler, PrefixQueryIsCountedOnceWhenTheRequestIsAdmitted) {
  SchedulerConfig cfg;
  Scheduler s(cfg, 4, 4);
  s.add(make(1, 12, 4, 100));  // 3 blocks now, 4 when done
  s.add(make(2, 5, 1, 200));   // needs 2 blocks: waits until r1 finishes
  EXPECT_EQ(describe(step(s)), "r1@0+12* ");
  EXPECT_EQ(describe(step(s)), "r1@12+1* ");
  EXPECT_EQ(describe(step(s)), "r1@13+1* ");
  EXPECT_EQ(describe(step(s)), "r1@14+1* ");
  EXPECT_EQ(describe(step(s)), "r2@0+5* ");
  // Four looks at r2 while the pool was full count nothing: 12 + 5 tokens queried.
  EXPECT_EQ(s.kv().prefix_queries(), 17u);
}
