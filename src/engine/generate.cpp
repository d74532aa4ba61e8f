// The single-sequence generation loop: see generate.h.
#include "engine/generate.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "sample/stop.h"

namespace ignis::engine {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// NOTE (the weights' copies): a model loaded on AVX-512 without AMX runs its products on the file's rows
// while PackedStore makes its packed copies in the background (packed.h); those copies' kernels decode
// faster, but the copying threads get little of the cores while the steps keep them busy, and from
// PackedStore::kIdleGrace on the helper thread takes a core from the steps (tokens at 2-3x their time).
// A generation with at least this many single-token steps ahead has the pool make the copies before
// its first one (Model::finish_repacking). `ignis run` with the reference prompt, wall ms, alternated
// 3x on the 2-vCPU Zen 5 (BENCHMARKS.md, thirty-first session), before -> after, n = 80: Qwen2.5-1.5B
// Q4_K_M 3,500-4,289 -> 2,650-2,996, 0.5B F16 3,635-3,885 -> 2,793-3,096, Qwen3-0.6B Q8_0 2,029-2,669 ->
// 1,574-1,776, Llama-3.2-1B Q4_0 2,944-3,430 -> 2,216-2,366; but n = 32: 1.5B 1,672-1,745 -> 1,950-2,465
// (a 1 GB copy costs 0.6-1.2 s here, mostly the kernel zeroing fresh memory).
constexpr int64_t kFinishCopiesSteps = 64;

}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kEog: return "eog";
    case StopReason::kLength: return "length";
    case StopReason::kStopString: return "stop";
    case StopReason::kContextFull: return "context_full";
    case StopReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

// NOTE: the sampled token is only fed to the model when another one is wanted, so n_predict tokens
// cost n_predict - 1 single-token forwards after the prompt batch, and a full cache ends generation
// (reason kContextFull) instead of shifting or truncating the context.
GenerateResult generate(const model::Model& model, model::KvCache& cache, const text::Tokenizer& tok,
                        sample::Sampler& sampler, ThreadPool& pool, std::span<const text::TokenId> prompt,
                        const GenerateOptions& opts, const GenerateCallbacks& cb) {
  if (prompt.empty()) fail("generate: the prompt has no tokens");
  const int64_t room = cache.n_ctx() - cache.n_past();
  if (static_cast<int64_t>(prompt.size()) > room)
    fail("generate: the prompt has {} tokens but the context has room for {} (n_ctx {})", prompt.size(),
         room, cache.n_ctx());
  if (opts.n_predict < -1) fail("generate: n_predict must be >= -1, got {}", opts.n_predict);
  const int64_t n_vocab = model.hparams().n_vocab;
  if (n_vocab != sampler.n_vocab())
    fail("generate: the sampler expects {} logits but the model has n_vocab {}", sampler.n_vocab(), n_vocab);

  GenerateResult res;
  res.n_prompt = static_cast<int64_t>(prompt.size());
  std::vector<float> logits(static_cast<size_t>(n_vocab));  // [n_vocab] f32, last position

  auto t0 = std::chrono::steady_clock::now();
  model.forward(cache, prompt, logits.data(), false, pool);
  res.prompt_ms = ms_since(t0);
  for (text::TokenId id : prompt) sampler.accept(id);

  // The generated text continues the prompt: the decoder sees the prompt first (output dropped) so it
  // does not treat the first generated token as the start of a text (SentencePiece would strip its
  // leading space); flush() drops bytes of a character left incomplete by the prompt.
  text::StreamDecoder decoder(tok);
  for (text::TokenId id : prompt) decoder.push(id);
  decoder.flush();
  sample::StopMatcher stops(opts.stop);
  auto emit = [&](const std::string& s) {
    if (!s.empty() && cb.on_text) cb.on_text(s);
  };

  t0 = std::chrono::steady_clock::now();
  res.reason = StopReason::kLength;
  while (opts.n_predict < 0 || res.n_generated < opts.n_predict) {
    TokenEvent ev;
    ev.id = sampler.sample(logits);
    sampler.accept(ev.id);
    ++res.n_generated;
    if (opts.n_top_logprobs > 0) ev.logprobs = sample::log_softmax_top(logits, ev.id, opts.n_top_logprobs);
    ev.eog = tok.is_eog(ev.id) || std::find(opts.eog_ids.begin(), opts.eog_ids.end(), ev.id) != opts.eog_ids.end();
    if (!ev.eog) ev.text = decoder.push(ev.id);
    const bool go_on = !cb.on_token || cb.on_token(ev);
    if (ev.eog) {
      res.reason = StopReason::kEog;
      break;
    }
    emit(stops.push(ev.text));
    if (stops.stopped()) {
      res.reason = StopReason::kStopString;
      res.stop_string = stops.matched();
      break;
    }
    if (!go_on) {
      res.reason = StopReason::kCancelled;
      break;
    }
    if (opts.n_predict >= 0 && res.n_generated >= opts.n_predict) break;
    if (cache.n_past() >= cache.n_ctx()) {
      res.reason = StopReason::kContextFull;
      break;
    }
    const text::TokenId next = ev.id;
    if (res.n_generated == 1) {
      const int64_t room = cache.n_ctx() - cache.n_past();
      const int64_t steps = opts.n_predict < 0 ? room : std::min<int64_t>(room, opts.n_predict - res.n_generated);
      if (steps >= kFinishCopiesSteps) model.finish_repacking(pool);
    }
    model.forward(cache, std::span<const text::TokenId>(&next, 1), logits.data(), false, pool);
  }
  if (!stops.stopped()) {
    emit(stops.push(decoder.flush()));
    emit(stops.flush());
  }
  res.generation_ms = ms_since(t0);
  return res;
}

}  // namespace ignis::engine
