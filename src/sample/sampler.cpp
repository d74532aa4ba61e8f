// Sampler chain: see sampler.h for the order and the RNG contract.
#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace ignis::sample {

namespace {

// Descending logit, ties by ascending id: a strict weak order that makes every sort deterministic.
bool higher(const Candidate& a, const Candidate& b) {
  if (a.logit != b.logit) return a.logit > b.logit;
  return a.id < b.id;
}

bool is_sorted_desc(const std::vector<Candidate>& c) { return std::is_sorted(c.begin(), c.end(), higher); }

void check_finite(float v, const char* name) {
  if (!std::isfinite(v)) fail("sampling: {} must be a finite number, got {}", name, v);
}

}  // namespace

void SamplingParams::validate(int32_t n_vocab) const {
  check_finite(temperature, "temperature");
  if (temperature < 0.0f) fail("sampling: temperature must be >= 0 (0 = greedy), got {}", temperature);
  if (top_k < 0) fail("sampling: top_k must be >= 0 (0 = disabled), got {}", top_k);
  check_finite(top_p, "top_p");
  if (!(top_p > 0.0f && top_p <= 1.0f)) fail("sampling: top_p must be in (0, 1], got {}", top_p);
  check_finite(min_p, "min_p");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) fail("sampling: min_p must be in [0, 1], got {}", min_p);
  check_finite(repeat_penalty, "repeat_penalty");
  if (repeat_penalty <= 0.0f)
    fail("sampling: repeat_penalty must be > 0 (1 = disabled), got {}", repeat_penalty);
  if (repeat_last_n < 0) fail("sampling: repeat_last_n must be >= 0 (0 = disabled), got {}", repeat_last_n);
  check_finite(presence_penalty, "presence_penalty");
  check_finite(frequency_penalty, "frequency_penalty");
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= n_vocab) fail("sampling: logit_bias token id {} is outside [0, {})", id, n_vocab);
    if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity())
      fail("sampling: logit_bias for token {} must be a number or -inf, got {}", id, bias);
  }
}

// NOTE: the formula is llama.cpp's: the repeat penalty scales a logit towards lower probability
// whatever its sign (divide if > 0, multiply if <= 0), then frequency and presence subtract
// count * frequency + presence (OpenAI's definition).
void apply_penalties(std::span<float> logits, const std::unordered_map<TokenId, int>& counts,
                     float repeat_penalty, float frequency_penalty, float presence_penalty) {
  for (const auto& [id, count] : counts) {
    if (count <= 0 || id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float& l = logits[id];
    if (l <= 0.0f) {
      l *= repeat_penalty;
    } else {
      l /= repeat_penalty;
    }
    l -= static_cast<float>(count) * frequency_penalty + presence_penalty;
  }
}

void apply_top_k(std::vector<Candidate>& c, int32_t k) {
  if (k <= 0) return;
  size_t n = std::min(static_cast<size_t>(k), c.size());
  std::partial_sort(c.begin(), c.begin() + n, c.end(), higher);
  c.resize(n);
}

// NOTE: like llama.cpp, keeps the smallest prefix (by descending probability) whose probability mass
// reaches p, computed at temperature 1 (temperature comes last in the chain). At least one token stays.
void apply_top_p(std::vector<Candidate>& c, float p) {
  if (p >= 1.0f || c.empty()) return;
  float max_l = c[0].logit, min_l = c[0].logit;
  for (const auto& x : c) {
    max_l = std::max(max_l, x.logit);
    min_l = std::min(min_l, x.logit);
  }
  double total = 0.0;
  for (auto& x : c) {
    x.p = std::exp(x.logit - max_l);
    total += x.p;
  }
  // Only the kept prefix of the sorted order is needed. For a large unsorted row (a whole vocabulary,
  // no top-k before), a histogram of the logits finds the bucket where the mass reaches p; the tokens
  // in that bucket and above are exactly the head of the sorted order, so sorting them alone gives the
  // same result as sorting everything. The rest is sorted only if rounding leaves the head short.
  size_t head = c.size();
  if (c.size() > 1024 && max_l > min_l && std::isfinite(min_l) && !is_sorted_desc(c)) {
    constexpr int kBuckets = 4096;
    const double scale = kBuckets / (static_cast<double>(max_l) - min_l);
    auto bucket = [&](float l) { return std::min(kBuckets - 1, static_cast<int>((l - min_l) * scale)); };
    std::vector<double> mass(kBuckets, 0.0);
    for (const auto& x : c) mass[bucket(x.logit)] += x.p;
    int cut = 0;
    double acc = 0.0;
    for (int b = kBuckets - 1; b >= 0; --b) {
      acc += mass[b];
      if (acc >= p * total) {
        cut = b;
        break;
      }
    }
    auto mid = std::partition(c.begin(), c.end(), [&](const Candidate& x) { return bucket(x.logit) >= cut; });
    head = static_cast<size_t>(mid - c.begin());
  }
  std::sort(c.begin(), c.begin() + head, higher);
  double cum = 0.0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i == head) {
      std::sort(c.begin() + head, c.end(), higher);
      head = c.size();
    }
    cum += c[i].p / total;
    if (cum >= p) {
      c.resize(i + 1);
      return;
    }
  }
  if (head < c.size()) std::sort(c.begin() + head, c.end(), higher);
}

void apply_min_p(std::vector<Candidate>& c, float p) {
  if (p <= 0.0f || c.empty()) return;
  float max_l = -std::numeric_limits<float>::infinity();
  for (const auto& x : c) max_l = std::max(max_l, x.logit);
  const float min_l = max_l + std::log(p);  // p_i >= p * p_max  <=>  logit_i >= max + log(p)
  auto end = std::remove_if(c.begin(), c.end(), [&](const Candidate& x) { return x.logit < min_l; });
  c.erase(end, c.end());
}

void apply_temperature(std::vector<Candidate>& c, float t) {
  if (t <= 0.0f) return;
  for (auto& x : c) x.logit /= t;
}

TokenId argmax(std::span<const float> logits) {
  TokenId best = -1;
  float best_l = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > best_l) {  // strict: the lowest id wins ties; NaN never compares greater
      best_l = logits[i];
      best = static_cast<TokenId>(i);
    }
  }
  if (best < 0) fail("sampling: every logit is -inf or NaN, no token can be chosen");
  return best;
}

// NOTE: the same result as adding the biases to a copy of the row and taking argmax(), without the
// copy: a model with a padded vocabulary bans a few hundred ids on every step of every request, and
// copying a 151,936-entry row per token showed up in greedy serving.
TokenId argmax_biased(std::span<const float> logits, const std::map<TokenId, float>& bias) {
  TokenId best = -1;
  float best_l = -std::numeric_limits<float>::infinity();
  size_t i = 0;
  // Scans [i, end): the segment's maximum with independent lanes (NaN never wins a comparison), then its
  // first position; strictly greater than the best so far, so the lowest id keeps winning ties.
  auto scan = [&](size_t end) {
    constexpr size_t kLanes = 8;
    float lane[kLanes];
    for (float& l : lane) l = -std::numeric_limits<float>::infinity();
    size_t j = i;
    for (; j + kLanes <= end; j += kLanes)
      for (size_t k = 0; k < kLanes; ++k) lane[k] = logits[j + k] > lane[k] ? logits[j + k] : lane[k];
    float m = -std::numeric_limits<float>::infinity();
    for (float l : lane) m = l > m ? l : m;
    for (; j < end; ++j) m = logits[j] > m ? logits[j] : m;
    if (m > best_l) {
      size_t at = i;
      while (!(logits[at] == m)) ++at;
      best_l = m;
      best = static_cast<TokenId>(at);
    }
    i = end;
  };
  for (const auto& [id, b] : bias) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    scan(static_cast<size_t>(id));
    const float v = logits[id] + b;
    if (v > best_l) {
      best_l = v;
      best = id;
    }
    i = static_cast<size_t>(id) + 1;
  }
  scan(logits.size());
  if (best < 0) fail("sampling: every logit is -inf or NaN, no token can be chosen");
  return best;
}

size_t draw(std::vector<Candidate>& c, double u) {
  if (c.empty()) fail("sampling: no candidate token left to draw from");
  float max_l = c[0].logit;
  for (const auto& x : c) max_l = std::max(max_l, x.logit);
  double total = 0.0;
  for (auto& x : c) {
    x.p = std::exp(x.logit - max_l);
    total += x.p;
  }
  const double target = total * u;
  double run = 0.0;
  size_t chosen = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    run += c[i].p;
    if (chosen == c.size() && run >= target && c[i].p > 0.0f) chosen = i;
    c[i].p = static_cast<float>(c[i].p / total);
  }
  if (chosen == c.size()) {
    // Rounding left the running sum just short of the target: take the last token with mass.
    chosen = c.size() - 1;
    while (chosen > 0 && c[chosen].p <= 0.0f) --chosen;
  }
  return chosen;
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab) : params_(params), n_vocab_(n_vocab) {
  if (n_vocab <= 0) fail("sampling: vocabulary size must be > 0, got {}", n_vocab);
  params_.validate(n_vocab);
  rng_.seed(params_.seed);
}

double Sampler::next_uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

void Sampler::reset() {
  history_.clear();
  counts_.clear();
  rng_.seed(params_.seed);
}

void Sampler::accept(TokenId id) {
  if (params_.repeat_last_n <= 0) return;
  history_.push_back(id);
  ++counts_[id];
  if (history_.size() > static_cast<size_t>(params_.repeat_last_n)) {
    TokenId old = history_.front();
    history_.pop_front();
    auto it = counts_.find(old);
    if (--it->second == 0) counts_.erase(it);
  }
}

TokenId Sampler::sample(std::span<const float> logits) {
  if (logits.size() != static_cast<size_t>(n_vocab_))
    fail("sampling: got {} logits, expected n_vocab = {}", logits.size(), n_vocab_);
  const SamplingParams& p = params_;
  const bool penalize = p.repeat_last_n > 0 && !counts_.empty() &&
                        (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f);
  std::span<const float> row = logits;
  if (p.temperature <= 0.0f && !penalize) return argmax_biased(logits, p.logit_bias);
  if (penalize || !p.logit_bias.empty()) {
    biased_.assign(logits.begin(), logits.end());
    for (const auto& [id, bias] : p.logit_bias) biased_[id] += bias;
    if (penalize) apply_penalties(biased_, counts_, p.repeat_penalty, p.frequency_penalty, p.presence_penalty);
    row = biased_;
  }
  if (p.temperature <= 0.0f) return argmax(row);

  cand_.clear();
  cand_.reserve(row.size());
  for (size_t i = 0; i < row.size(); ++i) {
    // -inf (banned) and NaN tokens can never be drawn; leaving them out keeps the draw well-defined.
    if (row[i] > -std::numeric_limits<float>::infinity())
      cand_.push_back({static_cast<TokenId>(i), row[i], 0.0f});
  }
  if (cand_.empty()) fail("sampling: every logit is -inf or NaN, no token can be chosen");
  apply_top_k(cand_, p.top_k);
  apply_top_p(cand_, p.top_p);
  apply_min_p(cand_, p.min_p);
  apply_temperature(cand_, p.temperature);
  return cand_[draw(cand_, next_uniform())].id;
}

Logprobs log_softmax_top(std::span<const float> logits, TokenId chosen, int n_top) {
  if (chosen < 0 || static_cast<size_t>(chosen) >= logits.size())
    fail("logprobs: token id {} is outside [0, {})", chosen, logits.size());
  float max_l = -std::numeric_limits<float>::infinity();
  for (float l : logits)
    if (l > max_l) max_l = l;
  // exp in float (each term is in (0, 1]), summed in double: the row is large and this runs per token.
  double sum = 0.0;
  for (float l : logits)
    if (l > -std::numeric_limits<float>::infinity()) sum += std::exp(l - max_l);
  const double lse = static_cast<double>(max_l) + std::log(sum);

  Logprobs out;
  out.chosen = static_cast<float>(logits[chosen] - lse);
  // Top n by a bounded insertion scan: n_top is small (5), the row is large.
  std::vector<Candidate> top;
  const size_t n = static_cast<size_t>(std::max(n_top, 0));
  for (size_t i = 0; i < logits.size() && n > 0; ++i) {
    const float l = logits[i];
    if (!(l > -std::numeric_limits<float>::infinity())) continue;
    Candidate c{static_cast<TokenId>(i), l, 0.0f};
    if (top.size() == n && !higher(c, top.back())) continue;
    auto pos = std::upper_bound(top.begin(), top.end(), c, higher);
    top.insert(pos, c);
    if (top.size() > n) top.pop_back();
  }
  out.top.reserve(top.size());
  for (const auto& c : top) out.top.push_back({c.id, static_cast<float>(c.logit - lse)});
  return out;
}

}  // namespace ignis::sample
