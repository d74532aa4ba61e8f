// Token sampling: the llama.cpp-style filter chain over one row of logits, and log-probabilities.
//
// A Sampler owns its parameters, its penalty history (the last repeat_last_n accepted tokens) and its
// RNG. sample() applies, in llama.cpp's default order:
//   logit bias -> penalties (repeat, frequency, presence) -> top-k -> top-p -> min-p -> temperature
//   -> draw from the softmax,
// and temperature <= 0 short-cuts to greedy argmax (after bias and penalties; ties -> lowest id).
// accept() records a token in the penalty history: feed it the prompt tokens and every generated token.
//
// RNG: std::mt19937_64 seeded with SamplingParams::seed. Its output sequence is fixed by the C++
// standard; the uniform draw in [0, 1) is computed here from the top 53 bits of one 64-bit output
// ((x >> 11) * 2^-53), not with std::uniform_real_distribution (whose algorithm is implementation-
// defined), so the same seed gives the same tokens on every platform and compiler. One draw is made
// per non-greedy sample() call, whatever the number of surviving candidates.
//
// A Sampler is not thread-safe; use one per sequence. The free functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

namespace ignis::sample {

using TokenId = int32_t;

struct SamplingParams {
  float temperature = 0.8f;      // <= 0: greedy argmax
  int32_t top_k = 40;            // <= 0: disabled
  float top_p = 0.95f;           // (0, 1]; 1: disabled
  float min_p = 0.05f;           // [0, 1]; 0: disabled
  float repeat_penalty = 1.0f;   // > 0; 1: disabled. logit > 0 divided by it, logit <= 0 multiplied
  int32_t repeat_last_n = 64;    // history length for all three penalties; 0: penalties disabled
  float presence_penalty = 0.0f;   // subtracted once from each token seen in the history
  float frequency_penalty = 0.0f;  // subtracted count times
  uint64_t seed = 0;
  std::map<TokenId, float> logit_bias;  // added to the raw logit (-INFINITY bans a token)

  // Throws ignis::Error with a one-line message naming the field if a value is out of range or not
  // finite, or a logit_bias id is outside [0, n_vocab).
  void validate(int32_t n_vocab) const;
};

struct Candidate {
  TokenId id;
  float logit;
  float p;  // filled by softmax steps
};

// The filter steps, exposed for tests and for other samplers. Each works in place on `c`.
// Sorting is by logit descending, ties by id ascending, so every result is deterministic.
// Penalties work on the full logit row ([n_vocab], indexed by id); counts: occurrences of each id in
// the history window (ids absent from counts are untouched).
void apply_penalties(std::span<float> logits, const std::unordered_map<TokenId, int>& counts,
                     float repeat_penalty, float frequency_penalty, float presence_penalty);
void apply_top_k(std::vector<Candidate>& c, int32_t k);       // leaves c sorted
void apply_top_p(std::vector<Candidate>& c, float p);         // leaves c sorted
void apply_min_p(std::vector<Candidate>& c, float p);         // keeps logit >= max + log(p)
void apply_temperature(std::vector<Candidate>& c, float t);   // t > 0: logit /= t
// Greedy: index into logits of the largest value (ties -> lowest index). Non-finite NaN values are
// skipped; throws ignis::Error if no value is larger than -inf.
TokenId argmax(std::span<const float> logits);
// argmax(logits + bias) without materialising the biased row (ids outside the row are ignored).
TokenId argmax_biased(std::span<const float> logits, const std::map<TokenId, float>& bias);
// Draws from softmax(c.logit) with the uniform value u in [0, 1): the first candidate (in c's order)
// whose running probability sum reaches u * total. Fills c[i].p.
size_t draw(std::vector<Candidate>& c, double u);

class Sampler {
 public:
  // Validates params (throws ignis::Error) and seeds the RNG.
  Sampler(const SamplingParams& params, int32_t n_vocab);

  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }

  // Picks the next token from one row of raw logits ([n_vocab], f32). Does not call accept().
  // Throws ignis::Error if logits.size() != n_vocab or every logit is -inf/NaN after the bias.
  TokenId sample(std::span<const float> logits);

  // Records a token in the penalty history (a ring of the last repeat_last_n tokens).
  void accept(TokenId id);

  // Forgets the history and re-seeds the RNG with params().seed.
  void reset();

  // The next uniform value in [0, 1) (advances the RNG); exposed for tests.
  double next_uniform();

 private:
  SamplingParams params_;
  int32_t n_vocab_;
  std::mt19937_64 rng_;
  std::deque<TokenId> history_;
  std::unordered_map<TokenId, int> counts_;
  std::vector<Candidate> cand_;  // scratch, reused across calls
  std::vector<float> biased_;    // scratch for greedy with bias/penalties
};

// One generated token's log-probabilities under the raw logits (log-softmax before any filter).
struct TokenLogprob {
  TokenId id;
  float logprob;
};
struct Logprobs {
  float chosen = 0.0f;              // logprob of the chosen token
  std::vector<TokenLogprob> top;    // the n_top most likely tokens, descending (ties -> lower id)
};
// Computes log-softmax over `logits` (exp in float, sums and logs in double) and returns the chosen
// token's value and the top n_top entries. Throws ignis::Error if chosen is out of range.
Logprobs log_softmax_top(std::span<const float> logits, TokenId chosen, int n_top);

}  // namespace ignis::sample
