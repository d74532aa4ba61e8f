#include "engine/llm_engine.h"

#include <sys/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/batch_forward.h"
#include "engine/generation_defaults.h"
#include "engine/paged_kv.h"
#include "engine/scheduler.h"
#include "format/gguf.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "sample/stop.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace ignis {

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::None: break;
  }
  return "";
}

}  // namespace ignis

namespace ignis::engine {
namespace {

using Clock = std::chrono::steady_clock;

// A request's state on the engine thread.
struct Req {
  std::shared_ptr<SchedRequest> sched;
  SamplingParams params;
  std::unique_ptr<sample::Sampler> sampler;
  std::unique_ptr<text::StreamDecoder> decoder;
  std::unique_ptr<sample::StopMatcher> stop;
  Engine::ChunkCallback cb;
  Clock::time_point arrival;
  bool first_token_seen = false;
  bool scheduled = false;
  double queue_s = 0.0;
  std::vector<TokenInfo> prompt_logprobs;  // accumulated over prefill chunks
  bool prompt_logprobs_sent = false;
};

class PullStream final : public Stream {
 public:
  explicit PullStream(RequestId id) : id_(id) {}
  void push(const StreamChunk& c) {
    std::lock_guard<std::mutex> lk(mu_);
    q_.push_back(c);
    cv_.notify_one();
  }
  std::optional<StreamChunk> next() override {
    std::unique_lock<std::mutex> lk(mu_);
    if (done_) return std::nullopt;
    cv_.wait(lk, [&] { return !q_.empty(); });
    StreamChunk c = std::move(q_.front());
    q_.pop_front();
    if (c.finished) done_ = true;
    return c;
  }
  RequestId id() const override { return id_; }
  void set_id(RequestId id) { id_ = id; }

 private:
  RequestId id_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamChunk> q_;
  bool done_ = false;
};

// The public request parameters as the sampler takes them (seed and bans are added per request).
sample::SamplingParams to_sample_params(const SamplingParams& p) {
  sample::SamplingParams sp;
  sp.temperature = p.temperature;
  sp.top_k = p.top_k;
  sp.top_p = p.top_p;
  sp.min_p = p.min_p;
  sp.repeat_penalty = p.repetition_penalty;
  sp.presence_penalty = p.presence_penalty;
  sp.frequency_penalty = p.frequency_penalty;
  sp.logit_bias = p.logit_bias;
  return sp;
}

uint64_t free_memory_bytes() {
  struct sysinfo si {};
  if (sysinfo(&si) != 0) return 0;
  return uint64_t(si.freeram + si.bufferram) * si.mem_unit;
}

class LlmEngine final : public Engine {
 public:
  explicit LlmEngine(const EngineOptions& o);
  ~LlmEngine() override { shutdown(std::chrono::milliseconds(0)); }

  RequestId submit(std::vector<TokenId> prompt, const SamplingParams& params, ChunkCallback cb) override;
  std::unique_ptr<Stream> stream(std::vector<TokenId> prompt, const SamplingParams& params) override;
  void cancel(RequestId id) override;
  std::vector<Completion> generate(const std::vector<std::string>& prompts, const SamplingParams& p) override;
  std::vector<Completion> generate(const std::vector<std::vector<TokenId>>& prompts,
                                   const SamplingParams& p) override;
  Completion chat(const nlohmann::ordered_json& messages, const SamplingParams& p, const nlohmann::ordered_json& tools,
                  const nlohmann::ordered_json& kwargs) override;
  std::vector<TokenId> tokenize(std::string_view text, bool add_special, bool parse_special) const override {
    return tok_->encode(text, add_special, parse_special);
  }
  std::string detokenize(const std::vector<TokenId>& ids, bool skip_special) const override {
    for (TokenId id : ids)
      if (id < 0 || id >= info_.n_vocab) fail("token id {} is outside the vocabulary [0, {})", id, info_.n_vocab);
    return tok_->decode(ids, skip_special);
  }
  std::string apply_chat_template(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                  bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const override;
  const ModelInfo& info() const override { return info_; }
  SamplingParams default_sampling_params() const override { return default_params_; }
  EngineStats stats() const override {
    std::lock_guard<std::mutex> lk(stats_mu_);
    return stats_;
  }
  void shutdown(std::chrono::milliseconds deadline) override;

 private:
  void loop();
  void step();
  void publish_stats();  // engine thread: scheduler and KV state -> stats_
  void emit_final(Req& r, ignis::FinishReason reason, const std::string& error = {});
  void validate(const std::vector<TokenId>& prompt, const SamplingParams& p) const;
  std::vector<Completion> run_blocking(const std::vector<std::vector<TokenId>>& prompts, const SamplingParams& p);

  EngineOptions opts_;
  ModelInfo info_;
  SamplingParams default_params_;      // SamplingParams{} + generation_config.json
  std::vector<bool> extra_eog_;        // by token id: generation_config.json's eos_token_id
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<text::Tokenizer> tok_;
  std::unique_ptr<text::ChatTemplate> template_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<PagedKvStore> store_;
  std::unique_ptr<Scheduler> sched_;

  // Inbox, guarded by mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Req>> inbox_;
  std::vector<RequestId> cancels_;
  bool stopping_ = false;
  Clock::time_point stop_deadline_;
  std::atomic<int32_t> n_queued_{0};  // inbox + scheduler waiting
  std::atomic<RequestId> next_id_{1};
  bool joined_ = false;

  // Engine thread only.
  std::map<RequestId, std::shared_ptr<Req>> active_;
  std::vector<float> step_logits_;  // this step's logit rows, reused across steps
  bool copies_finished_ = false;    // the model's background copies were finished by the pool

  mutable std::mutex stats_mu_;
  EngineStats stats_;
  std::thread thread_;
};

LlmEngine::LlmEngine(const EngineOptions& o) : opts_(o) {
  if (o.model.empty()) fail("no model given");
  if (o.kv_block_size < 1 || o.kv_block_size > 4096) fail("kv block size {} is out of range (1..4096)", o.kv_block_size);
  const DType kv_type = model::parse_kv_type(o.kv_type);
  if (o.max_seqs < 1 || o.max_seqs > 4096) fail("max_seqs {} is out of range (1..4096)", o.max_seqs);
  if (o.max_queue < 0) fail("max_queue {} must be >= 0", o.max_queue);
  if (o.max_batched_tokens < 1) fail("max_batched_tokens {} must be >= 1", o.max_batched_tokens);
  if (o.n_ctx < 0) fail("context size {} must be > 0", o.n_ctx);
  if (o.n_threads < 0) fail("thread count {} must be >= 0", o.n_threads);
  model_ = model::Model::load(o.model, {.quant = o.quant, .n_threads = o.n_threads});
  tok_ = text::Tokenizer::from_gguf(model_->file());
  const auto& hp = model_->hparams();
  std::string tmpl = o.chat_template.empty() ? tok_->chat_template() : o.chat_template;
  if (tmpl.empty()) {
    std::fprintf(stderr, "warning: %s has no chat template; using ChatML\n", o.model.c_str());
    tmpl = text::ChatTemplate::chatml_source();
  }
  template_ = std::make_unique<text::ChatTemplate>(tmpl);
  info_.path = o.model;
  info_.name = hp.name;
  info_.arch = hp.arch;
  info_.n_vocab = hp.n_vocab;
  info_.n_ctx_train = hp.n_ctx_train;
  info_.n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(hp.n_ctx_train > 0 ? hp.n_ctx_train : 4096, 4096);
  info_.n_params = model_->n_params();
  info_.weight_bytes = model_->weight_bytes();
  const GenerationDefaults gen = load_generation_defaults(o.model);
  SamplingValues sv{default_params_.temperature, default_params_.top_p, default_params_.top_k,
                    default_params_.repetition_penalty};
  apply_generation_defaults(gen, {}, &sv);
  default_params_.temperature = sv.temperature;
  default_params_.top_p = sv.top_p;
  default_params_.top_k = sv.top_k;
  default_params_.repetition_penalty = sv.repetition_penalty;
  extra_eog_.assign(size_t(hp.n_vocab), false);
  for (int32_t id : gen.eos_token_ids)
    if (id < hp.n_vocab) extra_eog_[size_t(id)] = true;

  const int64_t kv_width = hp.n_head_kv * hp.head_dim;
  const uint64_t per_block = PagedKvStore::bytes_per_block(hp.n_layer, kv_width, o.kv_block_size, kv_type);
  const int64_t blocks_per_seq = (info_.n_ctx + o.kv_block_size - 1) / o.kv_block_size;
  int64_t n_blocks;
  if (o.kv_memory_bytes > 0) {
    n_blocks = int64_t(o.kv_memory_bytes / per_block);
  } else {
    // NOTE: by default every running sequence can reach the full context, bounded by half the free RAM.
    const int64_t want = blocks_per_seq * o.max_seqs;
    const int64_t room = int64_t(free_memory_bytes() / 2 / per_block);
    n_blocks = std::max<int64_t>(std::min(want, room), blocks_per_seq);
  }
  if (n_blocks < blocks_per_seq)
    fail("KV memory of {} bytes holds {} tokens, less than one sequence of the context size {}; raise --kv-memory or lower -c",
         o.kv_memory_bytes, n_blocks * o.kv_block_size, info_.n_ctx);
  if (n_blocks > INT32_MAX) n_blocks = INT32_MAX;
  store_ = std::make_unique<PagedKvStore>(int32_t(n_blocks), hp.n_layer, kv_width, o.kv_block_size, kv_type);
  SchedulerConfig sc;
  sc.max_batched_tokens = o.max_batched_tokens;
  sc.max_seqs = o.max_seqs;
  sc.max_queue = std::max(o.max_queue, 1) + o.max_seqs;  // the inbox check below is the real bound
  sched_ = std::make_unique<Scheduler>(sc, int32_t(n_blocks), o.kv_block_size, o.prefix_caching);
  stats_.kv_blocks = int32_t(n_blocks);
  pool_ = std::make_unique<ThreadPool>(o.n_threads);
  thread_ = std::thread([this] { loop(); });
}

void LlmEngine::validate(const std::vector<TokenId>& prompt, const SamplingParams& p) const {
  if (prompt.empty()) fail("the prompt is empty");
  for (TokenId t : prompt)
    if (t < 0 || t >= info_.n_vocab) fail("prompt token id {} is outside the vocabulary [0, {})", t, info_.n_vocab);
  if (p.max_tokens < 0) fail("max_tokens must be >= 0, got {}", p.max_tokens);
  if (p.logprobs > 20) fail("logprobs must be <= 20, got {}", p.logprobs);
  if (p.prompt_logprobs > 20) fail("prompt_logprobs must be <= 20, got {}", p.prompt_logprobs);
  for (TokenId t : p.stop_token_ids)
    if (t < 0 || t >= info_.n_vocab) fail("stop_token_ids: {} is outside the vocabulary", t);
  if (int64_t(prompt.size()) + p.max_tokens > info_.n_ctx)
    fail("context_length_exceeded: this model's maximum context length is {} tokens, but {} were requested "
         "({} in the prompt, {} to generate)", info_.n_ctx, prompt.size() + p.max_tokens, prompt.size(), p.max_tokens);
  to_sample_params(p).validate(int32_t(info_.n_vocab));
}

RequestId LlmEngine::submit(std::vector<TokenId> prompt, const SamplingParams& p, ChunkCallback cb) {
  validate(prompt, p);
  auto r = std::make_shared<Req>();
  r->params = p;
  sample::SamplingParams sp = to_sample_params(p);
  sp.seed = p.seed ? *p.seed : std::random_device{}();
  // Rows past the tokenizer's vocabulary pad the output matrix (Qwen2.5: 151936 rows, 151665 tokens):
  // they have no text, so they are never sampled.
  for (int64_t id = tok_->n_vocab(); id < info_.n_vocab; ++id)
    sp.logit_bias[TokenId(id)] = -std::numeric_limits<float>::infinity();
  r->sampler = std::make_unique<sample::Sampler>(sp, int32_t(info_.n_vocab));
  for (TokenId t : prompt) r->sampler->accept(t);
  r->decoder = std::make_unique<text::StreamDecoder>(*tok_);
  r->stop = std::make_unique<sample::StopMatcher>(p.stop);
  r->cb = std::move(cb);
  r->arrival = Clock::now();
  r->sched = std::make_shared<SchedRequest>();
  r->sched->id = next_id_++;
  r->sched->n_prompt = int32_t(prompt.size());
  r->sched->tokens = std::move(prompt);
  r->sched->max_new_tokens = p.max_tokens;
  r->sched->skip_prefix_cache = p.prompt_logprobs >= 0;
  const RequestId id = r->sched->id;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) fail("the engine is shutting down");
    if (n_queued_.load() >= opts_.max_queue)
      throw QueueFullError("the request queue is full (" + std::to_string(opts_.max_queue) + " waiting)");
    ++n_queued_;
    inbox_.push_back(std::move(r));
  }
  cv_.notify_one();
  return id;
}

std::unique_ptr<Stream> LlmEngine::stream(std::vector<TokenId> prompt, const SamplingParams& p) {
  auto s = std::make_shared<PullStream>(0);
  RequestId id = submit(std::move(prompt), p, [s](const StreamChunk& c) { s->push(c); });
  s->set_id(id);
  struct Owner final : Stream {
    std::shared_ptr<PullStream> s;
    std::optional<StreamChunk> next() override { return s->next(); }
    RequestId id() const override { return s->id(); }
  };
  auto o = std::make_unique<Owner>();
  o->s = s;
  return o;
}

void LlmEngine::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    cancels_.push_back(id);
  }
  cv_.notify_one();
}

void LlmEngine::shutdown(std::chrono::milliseconds deadline) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (joined_) return;
    if (!stopping_) {
      stopping_ = true;
      stop_deadline_ = Clock::now() + deadline;
    }
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lk(mu_);
  joined_ = true;
}

void LlmEngine::emit_final(Req& r, ignis::FinishReason reason, const std::string& error) {
  StreamChunk c;
  c.id = r.sched->id;
  if (error.empty() && !r.stop->stopped()) c.text = r.stop->push(r.decoder->flush()) + r.stop->flush();
  c.finished = true;
  c.finish_reason = reason;
  c.stop = r.stop->matched();
  c.error = error;
  c.n_prompt_tokens = r.sched->n_prompt;
  c.n_generated_tokens = r.sched->n_generated();
  c.n_cached_tokens = r.sched->n_cached_prompt;
  c.queue_s = r.queue_s;
  if (r.cb) r.cb(c);
}

void LlmEngine::loop() {
  for (;;) {
    std::vector<std::shared_ptr<Req>> incoming;
    std::vector<RequestId> cancels;
    bool cancel_all = false;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return !inbox_.empty() || !cancels_.empty() || !active_.empty() || stopping_; });
      incoming.swap(inbox_);
      cancels.swap(cancels_);
      if (stopping_ && (active_.empty() && incoming.empty())) return;
      if (stopping_ && Clock::now() >= stop_deadline_) cancel_all = true;
    }
    for (auto& r : incoming) {
      sched_->add(r->sched);
      active_[r->sched->id] = r;
    }
    if (cancel_all)
      for (auto& [id, r] : active_) cancels.push_back(id);
    for (RequestId id : cancels) {
      auto it = active_.find(id);
      if (it == active_.end()) continue;
      sched_->finish(id, FinishReason::Cancelled);
      emit_final(*it->second, ignis::FinishReason::Cancelled);
      active_.erase(it);
    }
    n_queued_ = int32_t(sched_->n_waiting());
    if (!active_.empty()) {
      try {
        step();
      } catch (const std::exception& e) {
        // A failing step fails the requests in it, never the engine.
        for (auto& [id, r] : active_) {
          sched_->finish(id, FinishReason::Cancelled);
          emit_final(*r, ignis::FinishReason::Cancelled, e.what());
        }
        active_.clear();
      }
    }
    n_queued_ = int32_t(sched_->n_waiting());
    publish_stats();
  }
}

void LlmEngine::publish_stats() {
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.n_running = int32_t(sched_->n_running());
  stats_.n_waiting = int32_t(sched_->n_waiting());
  stats_.kv_usage = sched_->kv().pool().usage();
  stats_.prefix_queries = sched_->kv().prefix_queries();
  stats_.prefix_hits = sched_->kv().prefix_hits();
}

void LlmEngine::step() {
  SchedulerOutput out = sched_->schedule();
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.n_preemptions += out.preempted.size();
  }
  if (out.empty()) {
    // Nothing fits although requests wait and none runs: they can never run (validated at submit, so
    // this is a safety net against a hang).
    if (sched_->n_running() == 0 && sched_->n_waiting() > 0) {
      for (auto& [id, r] : active_) {
        sched_->finish(id, FinishReason::Cancelled);
        emit_final(*r, ignis::FinishReason::Cancelled, "the request does not fit in the KV cache");
      }
      active_.clear();
    }
    return;
  }
  const int64_t n_vocab = info_.n_vocab;
  std::vector<std::shared_ptr<Req>> reqs;
  std::vector<std::unique_ptr<SeqKvView>> views;
  std::vector<BatchSeq> batch;
  // Logit rows live in one buffer reused across steps (a fresh zeroed 600 KB row per sequence per step
  // for a 151,936-token vocabulary is measurable); pointers are set once its size is known.
  std::vector<size_t> row_off(out.seqs.size(), SIZE_MAX);
  size_t n_logits = 0;
  for (size_t i = 0; i < out.seqs.size(); ++i) {
    const ScheduledSeq& s = out.seqs[i];
    auto r = active_.at(s.id);
    if (!r->scheduled) {
      r->scheduled = true;
      r->queue_s = std::chrono::duration<double>(Clock::now() - r->arrival).count();
    }
    reqs.push_back(r);
    views.push_back(std::make_unique<SeqKvView>(*store_, r->sched->blocks.table, s.pos));
    BatchSeq b;
    b.cache = views.back().get();
    b.tokens = std::span<const int32_t>(r->sched->tokens).subspan(size_t(s.pos), size_t(s.n_tokens));
    const bool want_prompt_lp = r->params.prompt_logprobs >= 0 && s.pos < r->sched->n_prompt;
    b.all_logits = want_prompt_lp;
    if (s.samples || want_prompt_lp) {
      row_off[i] = n_logits;
      n_logits += size_t((b.all_logits ? s.n_tokens : 1) * n_vocab);
    }
    batch.push_back(b);
  }
  // A rare huge step (prompt logprobs over a long chunk) does not pin its buffer for the server's life.
  constexpr size_t kKeepLogits = size_t{16} << 20;  // floats
  if (step_logits_.size() > kKeepLogits && n_logits <= kKeepLogits) std::vector<float>().swap(step_logits_);
  if (step_logits_.size() < n_logits) step_logits_.resize(n_logits);
  for (size_t i = 0; i < batch.size(); ++i)
    if (row_off[i] != SIZE_MAX) batch[i].logits = step_logits_.data() + row_off[i];
  // The first step that only decodes has the pool finish the weights' background copies (generate.cpp,
  // NOTE (the weights' copies)): a server decodes for the rest of its life, and its prompts before
  // this step ran on the file's rows.
  if (!copies_finished_ && out.n_tokens == static_cast<int32_t>(out.seqs.size())) {
    model_->finish_repacking(*pool_);
    copies_finished_ = true;
  }
  forward_batch(*model_, batch, *pool_);

  std::vector<int32_t> sampled(out.seqs.size(), -1);
  std::vector<bool> stop_flags(out.seqs.size(), false);
  std::vector<TokenInfo> infos(out.seqs.size());
  uint64_t n_prompt_computed = 0, n_gen = 0;
  std::vector<size_t> zero_done;
  for (size_t i = 0; i < out.seqs.size(); ++i) {
    const ScheduledSeq& s = out.seqs[i];
    Req& r = *reqs[i];
    const auto& toks = r.sched->tokens;
    if (s.pos < r.sched->n_prompt) n_prompt_computed += std::min(s.pos + s.n_tokens, r.sched->n_prompt) - s.pos;
    if (batch[i].all_logits) {
      // Prompt logprobs: row j scores token pos + j + 1.
      const int top = std::max(0, r.params.prompt_logprobs);
      if (s.pos == 0 && r.prompt_logprobs.empty()) {
        TokenInfo first;
        first.id = toks[0];
        first.text = tok_->token_to_piece(toks[0]);
        first.logprob = std::nanf("");
        r.prompt_logprobs.push_back(first);
      }
      for (int32_t j = 0; j < s.n_tokens; ++j) {
        const int32_t target = s.pos + j + 1;
        if (target >= r.sched->n_prompt) break;
        auto lp = sample::log_softmax_top(std::span<const float>(batch[i].logits + size_t(j) * n_vocab, n_vocab),
                                          toks[target], top);
        TokenInfo ti;
        ti.id = toks[target];
        ti.text = tok_->token_to_piece(toks[target]);
        ti.logprob = lp.chosen;
        for (auto& t : lp.top) ti.top.push_back({t.id, t.logprob});
        r.prompt_logprobs.push_back(std::move(ti));
      }
    }
    if (!s.samples) continue;
    if (r.params.max_tokens == 0) {  // prompt only (e.g. echo with prompt logprobs)
      zero_done.push_back(i);
      continue;
    }
    const float* row = batch[i].logits + (batch[i].all_logits ? size_t(s.n_tokens - 1) * n_vocab : 0);
    std::span<const float> lrow(row, size_t(n_vocab));
    const TokenId t = r.sampler->sample(lrow);
    r.sampler->accept(t);
    sampled[i] = t;
    ++n_gen;
    bool is_stop = false;
    if (!r.params.ignore_eos && (tok_->is_eog(t) || extra_eog_[size_t(t)])) is_stop = true;
    for (TokenId st : r.params.stop_token_ids)
      if (st == t) is_stop = true;
    stop_flags[i] = is_stop;
    infos[i].id = t;
    infos[i].logprob = std::nanf("");
    if (r.params.logprobs >= 0) {
      auto lp = sample::log_softmax_top(lrow, t, r.params.logprobs);
      infos[i].logprob = lp.chosen;
      for (auto& x : lp.top) infos[i].top.push_back({x.id, x.logprob});
    }
  }
  sched_->update_with_flags(out, sampled, stop_flags);
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.prompt_tokens += n_prompt_computed;
    stats_.generation_tokens += n_gen;
    ++stats_.steps;
  }
  publish_stats();  // before the chunks go out, so a client that sees a chunk sees this step's state

  for (size_t i : zero_done) {
    Req& r = *reqs[i];
    sched_->finish(r.sched->id, FinishReason::Length);
    if (r.params.prompt_logprobs >= 0 && r.cb) {
      StreamChunk c;
      c.id = r.sched->id;
      c.prompt_logprobs = r.prompt_logprobs;
      c.n_prompt_tokens = r.sched->n_prompt;
      c.queue_s = r.queue_s;
      r.cb(c);
    }
    emit_final(r, ignis::FinishReason::Length);
    active_.erase(r.sched->id);
  }
  for (size_t i = 0; i < out.seqs.size(); ++i) {
    if (sampled[i] < 0) continue;
    Req& r = *reqs[i];
    const TokenId t = sampled[i];
    StreamChunk c;
    c.id = r.sched->id;
    const bool finished_by_token = r.sched->status == RequestStatus::Finished && r.sched->finish == FinishReason::Stop;
    std::string piece;
    if (!finished_by_token) piece = r.decoder->push(t);
    infos[i].text = tok_->token_to_piece(t);
    c.text = r.stop->push(piece);
    c.tokens.push_back(std::move(infos[i]));
    c.n_prompt_tokens = r.sched->n_prompt;
    c.n_generated_tokens = r.sched->n_generated();
    c.n_cached_tokens = r.sched->n_cached_prompt;
    c.queue_s = r.queue_s;
    if (r.params.prompt_logprobs >= 0 && !r.prompt_logprobs_sent) {
      c.prompt_logprobs = r.prompt_logprobs;
      r.prompt_logprobs_sent = true;
    }
    ignis::FinishReason reason = ignis::FinishReason::None;
    if (r.sched->status == RequestStatus::Finished) {
      reason = r.sched->finish == FinishReason::Length ? ignis::FinishReason::Length : ignis::FinishReason::Stop;
    } else if (r.stop->stopped()) {
      sched_->finish(r.sched->id, FinishReason::Stop);
      reason = ignis::FinishReason::Stop;
    } else if (int64_t(r.sched->tokens.size()) >= info_.n_ctx) {
      sched_->finish(r.sched->id, FinishReason::Length);
      reason = ignis::FinishReason::Length;
    }
    if (reason != ignis::FinishReason::None) {
      if (!r.stop->stopped() && !finished_by_token) c.text += r.stop->push(r.decoder->flush()) + r.stop->flush();
      else if (finished_by_token) c.text += r.stop->push(r.decoder->flush()) + r.stop->flush();
      c.finished = true;
      c.finish_reason = reason;
      c.stop = r.stop->matched();
    }
    if (r.cb) r.cb(c);
    if (c.finished) active_.erase(r.sched->id);
  }
}

std::vector<Completion> LlmEngine::run_blocking(const std::vector<std::vector<TokenId>>& prompts,
                                                const SamplingParams& p) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0;
  };
  auto sh = std::make_shared<Shared>();
  std::vector<Completion> out(prompts.size());
  std::vector<Clock::time_point> t0(prompts.size(), Clock::now());
  std::vector<RequestId> ids;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Completion* c = &out[i];
    auto start = Clock::now();
    ids.push_back(submit(prompts[i], p, [this, sh, c, start](const StreamChunk& ch) {
      if (c->token_ids.empty() && !ch.tokens.empty())
        c->ttft_s = std::chrono::duration<double>(Clock::now() - start).count();
      c->id = ch.id;
      c->text += ch.text;
      if (!ch.prompt_logprobs.empty()) c->prompt_logprobs = ch.prompt_logprobs;
      for (const auto& t : ch.tokens) {
        c->token_ids.push_back(t.id);
        if (!std::isnan(t.logprob)) c->logprobs.push_back(t);
      }
      c->n_prompt_tokens = ch.n_prompt_tokens;
      c->n_cached_tokens = ch.n_cached_tokens;
      if (ch.finished) {
        c->finish_reason = ch.finish_reason;
        c->stop = ch.stop;
        c->total_s = std::chrono::duration<double>(Clock::now() - start).count();
        if (!ch.error.empty()) c->stop = "error: " + ch.error;
        std::lock_guard<std::mutex> lk(sh->mu);
        ++sh->done;
        sh->cv.notify_all();
      }
    }));
  }
  std::unique_lock<std::mutex> lk(sh->mu);
  sh->cv.wait(lk, [&] { return sh->done == prompts.size(); });
  for (auto& c : out)
    if (c.stop.rfind("error: ", 0) == 0) fail("{}", c.stop.substr(7));
  return out;
}

std::vector<Completion> LlmEngine::generate(const std::vector<std::string>& prompts, const SamplingParams& p) {
  std::vector<std::vector<TokenId>> ids;
  for (const auto& s : prompts) ids.push_back(tok_->encode(s, true, false));
  return run_blocking(ids, p);
}

std::vector<Completion> LlmEngine::generate(const std::vector<std::vector<TokenId>>& prompts,
                                            const SamplingParams& p) {
  return run_blocking(prompts, p);
}

std::string LlmEngine::apply_chat_template(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                           bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const {
  if (!messages.is_array()) fail("messages must be an array");
  text::ChatTemplateInputs in;
  in.messages = messages;
  in.tools = tools;
  in.add_generation_prompt = add_generation_prompt;
  if (tok_->bos() >= 0) in.bos_token = tok_->token_text(tok_->bos());
  if (tok_->eos() >= 0) in.eos_token = tok_->token_text(tok_->eos());
  if (kwargs.is_object()) in.extra = kwargs;
  return template_->render(in);
}

Completion LlmEngine::chat(const nlohmann::ordered_json& messages, const SamplingParams& p, const nlohmann::ordered_json& tools,
                           const nlohmann::ordered_json& kwargs) {
  const std::string prompt = apply_chat_template(messages, tools, true, kwargs);
  // NOTE: the rendered template already carries BOS where the model wants it (as transformers does).
  std::vector<TokenId> ids = tok_->encode(prompt, false, true);
  return run_blocking({ids}, p).front();
}

}  // namespace

std::unique_ptr<ignis::Engine> make_engine(const ignis::EngineOptions& opts) {
  return std::make_unique<LlmEngine>(opts);
}

}  // namespace ignis::engine

namespace ignis {

std::unique_ptr<Engine> Engine::load(const EngineOptions& opts) { return engine::make_engine(opts); }

}  // namespace ignis
