// ignis perplexity: llama-perplexity's perplexity and KL-divergence measurements.
//
// NOTE on the method (llama.cpp tools/perplexity/perplexity.cpp, perplexity() and kl_divergence()):
//   - the whole text is tokenized once with the tokenizer's BOS (add_special, no special parsing);
//     it is cut into n_chunk = n_tokens / c non-overlapping chunks of c tokens (at least 2 chunks'
//     worth of tokens are required, as llama-perplexity does);
//   - each chunk is evaluated from an empty cache with its first token replaced by BOS (when the
//     model adds BOS); the logits at positions first = c/2 .. c-2 score the next token, so each chunk
//     contributes c - 1 - c/2 negative log-likelihoods (log-softmax with expf and a double sum);
//   - stdout gets "[1]x,[2]y,..." (running perplexity after each chunk), a newline, and the last line
//     "Final estimate: PPL = %.4f +/- %.5f" (the error is ppl * sqrt(var(nll) / (count - 1)));
//   - --kl-divergence-base FILE without --kl-divergence also saves the base model's log-probabilities
//     in llama-perplexity's file format: "_logits_", int32 n_ctx, int32 n_vocab, int32 n_chunk,
//     int32 tokens[n_chunk * n_ctx], then for every scored position a row of nv = 2*((n_vocab+1)/2)+4
//     uint16: two floats (scale, min_log_prob) and n_vocab log-probabilities quantized to 16 bits over
//     [max(min logit, max logit - 16), max logit];
//   - with --kl-divergence, tokens and n_ctx come from that file (no -f needed), the model is evaluated
//     the same way and compared with the base row by row: mean KL divergence, PPL(Q) vs PPL(base),
//     RMS of the probability difference of the right token, and how often the top token agrees
//     ("Same top p"). Unlike llama-perplexity, the summary statistics are printed even under 100
//     scored tokens.
// Files are validated against their size before anything is allocated.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "format/gguf.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "text/tokenizer.h"

namespace ignis::cli {
namespace {

struct PplOptions {
  std::string model;
  std::string file;
  int64_t ctx = 512;
  int64_t batch = 512;
  int64_t chunks = -1;
  int threads = 0;
  std::string kl_base;
  bool kl_divergence = false;
  std::string cache_type = "f16";
};

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

int64_t padded_row(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }

// ggml's round-to-nearest via the 1.5 * 2^23 trick (as llama-perplexity quantizes log-probs).
int nearest_int(float fval) {
  float val = fval + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

// -log p(tok) with llama-perplexity's arithmetic.
double nll_of(const float* logits, int64_t n_vocab, int32_t tok) {
  float max_logit = logits[0];
  for (int64_t i = 1; i < n_vocab; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum_exp = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
  return -(logits[tok] - max_logit - std::log(sum_exp));
}

// Same, also writing the row's quantized log-probabilities (nv uint16) for a base file.
double nll_and_log_probs(const float* logits, int64_t n_vocab, int32_t tok, uint16_t* out) {
  float max_logit = logits[0], min_logit = logits[0];
  for (int64_t i = 1; i < n_vocab; ++i) {
    max_logit = std::max(max_logit, logits[i]);
    min_logit = std::min(min_logit, logits[i]);
  }
  min_logit = std::max(min_logit, max_logit - 16);
  double sum_exp = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.f;
  std::memcpy(out, &scale, 4);
  std::memcpy(out + 2, &min_log_prob, 4);
  uint16_t* lp = out + 4;
  std::fill(lp, lp + (padded_row(n_vocab) - 4), uint16_t{0});
  if (scale != 0) {
    const float inv_scale = 1 / scale;
    for (int64_t i = 0; i < n_vocab; ++i)
      lp[i] = logits[i] > min_logit ? static_cast<uint16_t>(nearest_int(inv_scale * (logits[i] - min_logit))) : 0;
  }
  return max_logit + log_sum_exp - logits[tok];
}

struct KldSums {
  double nll = 0, nll2 = 0, nll_base = 0, nll_base2 = 0, nll_nll_base = 0;
  double kld = 0, kld2 = 0, p_diff = 0, p_diff2 = 0, p_diff4 = 0;
  float max_p_diff = 0;
  size_t same_top = 0, count = 0;
  void add(const KldSums& o) {
    nll += o.nll, nll2 += o.nll2, nll_base += o.nll_base, nll_base2 += o.nll_base2;
    nll_nll_base += o.nll_nll_base, kld += o.kld, kld2 += o.kld2, p_diff += o.p_diff;
    p_diff2 += o.p_diff2, p_diff4 += o.p_diff4, max_p_diff = std::max(max_p_diff, o.max_p_diff);
    same_top += o.same_top, count += o.count;
  }
};

// One scored position against its base row (llama-perplexity's arithmetic); returns (kld, p_diff).
std::pair<double, float> kld_row(const float* logits, int64_t n_vocab, const uint16_t* base, int32_t tok,
                                 KldSums& s) {
  float max_logit = logits[0];
  int64_t imax = 0;
  for (int64_t i = 1; i < n_vocab; ++i)
    if (logits[i] > max_logit) max_logit = logits[i], imax = i;
  double sum_exp = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  float scale, min_log_prob;
  std::memcpy(&scale, base, 4);
  std::memcpy(&min_log_prob, base + 2, 4);
  const uint16_t* lp = base + 4;
  const float nll = max_logit + log_sum_exp - logits[tok];
  s.nll += nll, s.nll2 += nll * nll;
  const float nll_base = -(scale * lp[tok] + min_log_prob);
  s.nll_base += nll_base, s.nll_base2 += nll_base * nll_base, s.nll_nll_base += nll * nll_base;
  max_logit += log_sum_exp;
  double sum = 0;
  int64_t imax_base = -1;
  float p_log_base_max = 0;
  for (int64_t i = 0; i < n_vocab; ++i) {
    const float p_log_base = scale * lp[i] + min_log_prob;
    if (i == 0 || p_log_base > p_log_base_max) p_log_base_max = p_log_base, imax_base = i;
    if (p_log_base > -16.f) sum += expf(p_log_base) * (p_log_base - logits[i] + max_logit);
  }
  s.kld += sum, s.kld2 += sum * sum;
  ++s.count;
  if (imax == imax_base) ++s.same_top;
  const float p_diff = expf(-nll) - expf(-nll_base);
  s.p_diff += p_diff;
  const double d2 = double(p_diff) * p_diff;
  s.p_diff2 += d2, s.p_diff4 += d2 * d2;
  s.max_p_diff = std::max(s.max_p_diff, std::fabs(p_diff));
  return {sum, p_diff};
}

std::pair<double, double> mean_and_uncertainty(double sum, double sum2, size_t count) {
  if (count < 1) return {0., 0.};
  double f = sum / count;
  double df = sum2 / count - f * f;
  df = df > 0 && count > 10 ? std::sqrt(df / (count - 1)) : 0.;
  return {f, df};
}

double covariance(double suma, double sumb, double sumab, size_t count) {
  if (count < 10) return 0.0;
  return (sumab / count - (suma / count) * (sumb / count)) / (count - 1);
}

float percentile(const std::vector<float>& v, float fraction) {
  if (fraction <= 0) return v.front();
  if (fraction >= 1) return v.back();
  float p = fraction * (v.size() - 1);
  size_t ip = size_t(p);
  p -= ip;
  return (1 - p) * v[ip] + p * v[std::min(ip + 1, v.size() - 1)];
}

std::string read_whole_file(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("perplexity: cannot open {} {}", what, path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail("perplexity: cannot read {} {}", what, path);
  return s;
}

// Evaluates one chunk (its first token already replaced by BOS where needed) in batches; calls
// on_rows(pos0, n, logits) for the logits rows of positions pos0 .. pos0+n-1 that are >= first.
template <typename F>
void eval_chunk(const model::Model& m, model::KvCache& cache, const int32_t* toks, int64_t n_ctx, int64_t n_batch,
                std::vector<float>& buf, ThreadPool& pool, F&& on_rows) {
  const int64_t first = n_ctx / 2;
  cache.truncate(0);
  for (int64_t b = 0; b < n_ctx; b += n_batch) {
    const int64_t n = std::min(n_batch, n_ctx - b);
    const bool want = b + n > first;
    m.forward(cache, std::span<const int32_t>(toks + b, static_cast<size_t>(n)), want ? buf.data() : nullptr, want,
              pool);
    if (!want) continue;
    const int64_t p0 = std::max(b, first);
    on_rows(p0, b + n - p0, buf.data() + static_cast<size_t>(p0 - b) * m.hparams().n_vocab);
  }
}

void check_ctx(int64_t c) {
  if (c < 16 || c % 2 != 0 || c > (1 << 20))
    fail("perplexity: -c {} is invalid (the context must be even and between 16 and {})", c, 1 << 20);
}

// What every mode shares: the model, its tokenizer, and how chunks are evaluated.
struct Evaluator {
  const model::Model& m;
  const text::Tokenizer& tok;
  ThreadPool& pool;
  int64_t n_vocab = 0;
  int64_t nv = 0;  // base-file row length in uint16
  bool add_bos = false;
  DType kv_type = DType::F16;
};

// A base file opened for --kl-divergence: header checked against the file size, tokens read.
struct BaseFile {
  std::ifstream in;
  int64_t n_ctx = 0, n_chunk = 0;
  std::vector<int32_t> tokens;  // [n_chunk * n_ctx]
};

void open_base(const std::string& path, const Evaluator& ev, BaseFile& b) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) fail("perplexity: cannot open --kl-divergence-base {}", path);
  b.in.open(path, std::ios::binary);
  if (!b.in) fail("perplexity: cannot open --kl-divergence-base {}", path);
  char magic[8];
  int32_t hdr[3];
  if (!b.in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0)
    fail("perplexity: {} is not a log-probability file (no _logits_ header)", path);
  if (!b.in.read(reinterpret_cast<char*>(hdr), sizeof hdr)) fail("perplexity: {} is truncated (header)", path);
  b.n_ctx = hdr[0];
  b.n_chunk = hdr[2];
  if (b.n_ctx < 16 || b.n_ctx % 2 != 0 || b.n_ctx > (1 << 20)) fail("perplexity: {}: n_ctx {} is invalid", path, b.n_ctx);
  if (hdr[1] != ev.n_vocab)
    fail("perplexity: {} was made with a vocabulary of {} tokens, the model has {}", path, hdr[1], ev.n_vocab);
  const uint64_t rows_per_chunk = static_cast<uint64_t>(b.n_ctx - 1 - b.n_ctx / 2);
  const uint64_t per_chunk = static_cast<uint64_t>(b.n_ctx) * 4 + rows_per_chunk * ev.nv * 2;
  const uint64_t expected = b.n_chunk < 1 ? 0 : 20 + static_cast<uint64_t>(b.n_chunk) * per_chunk;
  if (b.n_chunk < 1 || expected != size)
    fail("perplexity: {} has {} bytes, expected {} for {} chunks of {} tokens and {} vocabulary entries", path, size,
         expected, b.n_chunk, b.n_ctx, ev.n_vocab);
  b.tokens.resize(static_cast<size_t>(b.n_chunk * b.n_ctx));
  b.in.read(reinterpret_cast<char*>(b.tokens.data()), static_cast<std::streamsize>(b.tokens.size() * 4));
  for (int32_t t : b.tokens)
    if (t < 0 || t >= ev.n_vocab) fail("perplexity: {} holds token id {} outside the vocabulary", path, t);
}

// Perplexity over `tokens` (optionally saving base log-probabilities); prints llama-perplexity's lines.
int run_perplexity(const PplOptions& o, const Evaluator& ev, const std::vector<int32_t>& tokens, int64_t n_ctx,
                   int64_t n_chunk) {
  std::ofstream base_out;
  if (!o.kl_base.empty()) {
    base_out.open(o.kl_base, std::ios::binary | std::ios::trunc);
    if (!base_out) fail("perplexity: cannot write --kl-divergence-base {}", o.kl_base);
    const int32_t hdr[3] = {static_cast<int32_t>(n_ctx), static_cast<int32_t>(ev.n_vocab),
                            static_cast<int32_t>(n_chunk)};
    base_out.write(kMagic, 8);
    base_out.write(reinterpret_cast<const char*>(hdr), sizeof hdr);
    base_out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(n_chunk * n_ctx * 4));
  }
  const int64_t n_batch = std::min(o.batch, n_ctx);
  std::unique_ptr<model::KvCache> cache = ev.m.new_cache(n_ctx, ev.kv_type);
  std::vector<float> buf(static_cast<size_t>(n_batch * ev.n_vocab));  // [n_batch, n_vocab] f32
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  const int nth = ev.pool.n_threads();
  double nll = 0, nll2 = 0;
  size_t count = 0;
  std::vector<uint16_t> rows;
  for (int64_t c = 0; c < n_chunk; ++c) {
    std::copy_n(tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
    if (ev.add_bos) chunk[0] = ev.tok.bos();
    eval_chunk(ev.m, *cache, chunk.data(), n_ctx, n_batch, buf, ev.pool, [&](int64_t p0, int64_t n, const float* lg) {
      // Position p predicts the original token p + 1; position n_ctx - 1 predicts nothing.
      const int64_t n_scored = std::min(n, n_ctx - 1 - p0);
      if (n_scored <= 0) return;
      std::vector<double> s1(nth, 0.0), s2(nth, 0.0);
      if (base_out.is_open()) rows.assign(static_cast<size_t>(n_scored * ev.nv), 0);
      ev.pool.run([&](int ith, int nt) {
        int64_t r0, r1;
        ThreadPool::split(n_scored, ith, nt, 1, &r0, &r1);
        for (int64_t r = r0; r < r1; ++r) {
          const int32_t next = tokens[static_cast<size_t>(c * n_ctx + p0 + r + 1)];
          const float* row = lg + static_cast<size_t>(r) * ev.n_vocab;
          const double v = base_out.is_open() ? nll_and_log_probs(row, ev.n_vocab, next, rows.data() + r * ev.nv)
                                              : nll_of(row, ev.n_vocab, next);
          s1[ith] += v, s2[ith] += v * v;
        }
      });
      for (int i = 0; i < nth; ++i) nll += s1[i], nll2 += s2[i];
      count += static_cast<size_t>(n_scored);
      if (base_out.is_open())
        base_out.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size() * 2));
    });
    std::printf("[%lld]%.4lf,", static_cast<long long>(c + 1), std::exp(nll / count));
    std::fflush(stdout);
  }
  std::printf("\n");
  if (base_out.is_open()) {
    base_out.close();
    if (!base_out) fail("perplexity: writing {} failed", o.kl_base);
    std::fprintf(stderr, "perplexity: saved base log-probabilities to %s\n", o.kl_base.c_str());
  }
  nll /= count;
  nll2 /= count;
  const double ppl = std::exp(nll);
  nll2 -= nll * nll;
  if (!(nll2 > 0)) fail("perplexity: the variance of log(prob) is not positive ({} scored tokens)", count);
  nll2 = std::sqrt(nll2 / (count - 1));
  std::printf("Final estimate: PPL = %.4lf +/- %.5lf\n", ppl, nll2 * ppl);
  return 0;
}

// One row of llama-perplexity's --kl-divergence table (running values after chunk c).
void print_kld_chunk(int64_t c, const KldSums& t) {
  auto log_ppl = mean_and_uncertainty(t.nll, t.nll2, t.count);
  auto log_ppl_base = mean_and_uncertainty(t.nll_base, t.nll_base2, t.count);
  const double cov = covariance(t.nll, t.nll_base, t.nll_nll_base, t.count);
  const double ratio_unc =
      std::sqrt(log_ppl.second * log_ppl.second + log_ppl_base.second * log_ppl_base.second - 2.0 * cov);
  auto kl = mean_and_uncertainty(t.kld, t.kld2, t.count);
  auto mse = mean_and_uncertainty(t.p_diff2, t.p_diff4, t.count);
  const double rms = std::sqrt(mse.first);
  const double top = 1.0 * t.same_top / t.count;
  std::printf("%4lld    %9.4lf \xc2\xb1 %9.4lf    %10.5lf \xc2\xb1 %10.5lf    %10.5lf \xc2\xb1 %10.5lf    %6.3lf \xc2\xb1 "
              "%6.3lf %%    %6.3lf \xc2\xb1 %6.3lf %%\n",
              static_cast<long long>(c + 1), std::exp(log_ppl.first), std::exp(log_ppl.first) * log_ppl.second,
              log_ppl.first - log_ppl_base.first, ratio_unc, kl.first, kl.second, 100.0 * rms,
              rms > 0 ? 100.0 * 0.5 / rms * mse.second : 0.0, 100.0 * top,
              t.count > 1 ? 100.0 * std::sqrt(top * (1 - top) / (t.count - 1)) : 0.0);
  std::fflush(stdout);
}

// The summary llama-perplexity prints after --kl-divergence (a subset of its percentiles).
void print_kld_summary(const KldSums& t, std::vector<float> kld_values, std::vector<float> p_diff_values) {
  std::sort(kld_values.begin(), kld_values.end());
  std::sort(p_diff_values.begin(), p_diff_values.end());
  auto log_ppl = mean_and_uncertainty(t.nll, t.nll2, t.count);
  auto log_ppl_base = mean_and_uncertainty(t.nll_base, t.nll_base2, t.count);
  const double ppl = std::exp(log_ppl.first), ppl_base = std::exp(log_ppl_base.first);
  const double cov = covariance(t.nll, t.nll_base, t.nll_nll_base, t.count);
  std::printf("====== Perplexity statistics ======\n");
  std::printf("Mean PPL(Q)                   : %10.6lf \xc2\xb1 %10.6lf\n", ppl, ppl * log_ppl.second);
  std::printf("Mean PPL(base)                : %10.6lf \xc2\xb1 %10.6lf\n", ppl_base, ppl_base * log_ppl_base.second);
  const double ratio = log_ppl.first - log_ppl_base.first;
  const double ratio_unc =
      std::sqrt(log_ppl.second * log_ppl.second + log_ppl_base.second * log_ppl_base.second - 2.0 * cov);
  std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6lf \xc2\xb1 %10.6lf\n", ratio, ratio_unc);
  std::printf("Mean PPL(Q)/PPL(base)         : %10.6lf \xc2\xb1 %10.6lf\n", std::exp(ratio), std::exp(ratio) * ratio_unc);
  std::printf("\n====== KL divergence statistics ======\n");
  auto kl = mean_and_uncertainty(t.kld, t.kld2, t.count);
  std::printf("Mean    KLD: %10.6lf \xc2\xb1 %10.6lf\n", kl.first, kl.second);
  std::printf("Maximum KLD: %10.6f\n", kld_values.back());
  std::printf("99.0%%   KLD: %10.6f\n", percentile(kld_values, 0.990f));
  std::printf("Median  KLD: %10.6f\n", percentile(kld_values, 0.5f));
  std::printf("Minimum KLD: %10.6f\n", kld_values.front());
  std::printf("\n====== Token probability statistics ======\n");
  auto pd = mean_and_uncertainty(t.p_diff, t.p_diff2, t.count);
  std::printf("Mean    \xce\x94p: %6.3lf \xc2\xb1 %5.3lf %%\n", 100.0 * pd.first, 100.0 * pd.second);
  std::printf("Maximum \xce\x94p: %6.3lf%%\n", 100.0 * p_diff_values.back());
  std::printf("Minimum \xce\x94p: %6.3lf%%\n", 100.0 * p_diff_values.front());
  auto mse = mean_and_uncertainty(t.p_diff2, t.p_diff4, t.count);
  const double rms = std::sqrt(mse.first);
  std::printf("RMS \xce\x94p    : %6.3lf \xc2\xb1 %5.3lf %%\n", 100.0 * rms, rms > 0 ? 100.0 * 0.5 / rms * mse.second : 0.0);
  const double top = 1.0 * t.same_top / t.count;
  std::printf("Same top p: %6.3lf \xc2\xb1 %5.3lf %%\n", 100.0 * top,
              t.count > 1 ? 100.0 * std::sqrt(top * (1.0 - top) / (t.count - 1)) : 0.0);
}

// The model against a base file, chunk by chunk.
int run_kl_divergence(const PplOptions& o, const Evaluator& ev, BaseFile& b, int64_t n_chunk) {
  const int64_t n_ctx = b.n_ctx, first = n_ctx / 2, n_batch = std::min(o.batch, n_ctx);
  std::unique_ptr<model::KvCache> cache = ev.m.new_cache(n_ctx, ev.kv_type);
  std::vector<float> buf(static_cast<size_t>(n_batch * ev.n_vocab));  // [n_batch, n_vocab] f32
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  std::vector<uint16_t> base_rows(static_cast<size_t>((n_ctx - 1 - first) * ev.nv));
  std::vector<float> kld_values, p_diff_values;
  const int nth = ev.pool.n_threads();
  KldSums total;
  std::printf("chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              "
              "\xce\x94p RMS            Same top p\n");
  for (int64_t c = 0; c < n_chunk; ++c) {
    if (!b.in.read(reinterpret_cast<char*>(base_rows.data()), static_cast<std::streamsize>(base_rows.size() * 2)))
      fail("perplexity: {} is truncated (chunk {})", o.kl_base, c + 1);
    std::copy_n(b.tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
    if (ev.add_bos) chunk[0] = ev.tok.bos();
    eval_chunk(ev.m, *cache, chunk.data(), n_ctx, n_batch, buf, ev.pool, [&](int64_t p0, int64_t n, const float* lg) {
      const int64_t n_scored = std::min(n, n_ctx - 1 - p0);
      if (n_scored <= 0) return;
      std::vector<KldSums> part(nth);
      std::vector<float> kv(static_cast<size_t>(n_scored)), pv(static_cast<size_t>(n_scored));
      ev.pool.run([&](int ith, int nt) {
        int64_t r0, r1;
        ThreadPool::split(n_scored, ith, nt, 1, &r0, &r1);
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t p = p0 + r;
          const int32_t next = b.tokens[static_cast<size_t>(c * n_ctx + p + 1)];
          auto [k, d] = kld_row(lg + static_cast<size_t>(r) * ev.n_vocab, ev.n_vocab,
                                base_rows.data() + (p - first) * ev.nv, next, part[ith]);
          kv[r] = static_cast<float>(k), pv[r] = d;
        }
      });
      for (auto& s : part) total.add(s);
      kld_values.insert(kld_values.end(), kv.begin(), kv.end());
      p_diff_values.insert(p_diff_values.end(), pv.begin(), pv.end());
    });
    print_kld_chunk(c, total);
  }
  std::printf("\n");
  print_kld_summary(total, std::move(kld_values), std::move(p_diff_values));
  return 0;
}

int perplexity_main(const PplOptions& o) {
  if (o.model.empty()) fail("perplexity: no model given (-m FILE)");
  if (o.batch < 1 || o.batch > (1 << 20)) fail("perplexity: -b {} is out of range (1..{})", o.batch, 1 << 20);
  if (o.kl_divergence && o.kl_base.empty())
    fail("perplexity: --kl-divergence needs --kl-divergence-base FILE (written by a run without --kl-divergence)");
  if (!o.kl_divergence) {
    check_ctx(o.ctx);
    if (o.file.empty()) fail("perplexity: no text given (-f FILE)");
  }
  const DType kv_type = model::parse_kv_type(o.cache_type);
  std::unique_ptr<model::Model> m = model::Model::load(o.model);
  std::unique_ptr<text::Tokenizer> tok = text::Tokenizer::from_gguf(m->file());
  if (tok->add_eos())
    fail("perplexity: {}: the tokenizer appends EOS to every text, which perplexity chunks cannot use "
         "(llama-perplexity refuses such models too)", o.model);
  ThreadPool pool(o.threads);
  // Every chunk is a prefill, so the background copies' kernels (packed.h) should serve the first.
  m->finish_repacking(pool);
  Evaluator ev{*m, *tok, pool, m->hparams().n_vocab, padded_row(m->hparams().n_vocab),
               tok->add_bos() && tok->bos() >= 0, kv_type};

  BaseFile base;
  std::vector<int32_t> tokens;
  int64_t n_ctx = o.ctx, n_chunk = 0;
  if (o.kl_divergence) {
    open_base(o.kl_base, ev, base);
    n_ctx = base.n_ctx;
    n_chunk = o.chunks >= 0 ? std::min(base.n_chunk, o.chunks) : base.n_chunk;
    if (!o.file.empty())
      std::fprintf(stderr, "perplexity: note: --kl-divergence evaluates the tokens saved in %s; -f is not used\n",
                   o.kl_base.c_str());
  } else {
    const std::string text = read_whole_file(o.file, "text file");
    tokens = tok->encode(text, /*add_special=*/true, /*parse_special=*/false);
    if (static_cast<int64_t>(tokens.size()) < 2 * n_ctx)
      fail("perplexity: {} tokenizes to {} tokens; -c {} needs at least {} (2 * c)", o.file, tokens.size(), n_ctx,
           2 * n_ctx);
    n_chunk = static_cast<int64_t>(tokens.size()) / n_ctx;
    if (o.chunks >= 0) n_chunk = std::min(n_chunk, o.chunks);
  }
  if (n_chunk < 1) fail("perplexity: --chunks {} leaves nothing to evaluate", o.chunks);
  if (m->hparams().n_ctx_train > 0 && n_ctx > m->hparams().n_ctx_train)
    std::fprintf(stderr, "perplexity: warning: -c %lld is larger than the model's training context %lld\n",
                 static_cast<long long>(n_ctx), static_cast<long long>(m->hparams().n_ctx_train));
  std::fprintf(stderr, "perplexity: %lld chunks of %lld tokens (scored from position %lld), %d threads\n",
               static_cast<long long>(n_chunk), static_cast<long long>(n_ctx), static_cast<long long>(n_ctx / 2),
               pool.n_threads());
  return o.kl_divergence ? run_kl_divergence(o, ev, base, n_chunk) : run_perplexity(o, ev, tokens, n_ctx, n_chunk);
}

Action setup_perplexity(CLI::App& app) {
  auto o = std::make_shared<PplOptions>();
  app.add_option("-m,--model", o->model, "model file (GGUF)")->type_name("FILE");
  app.add_option("-f,--file", o->file, "text file to evaluate")->type_name("FILE");
  app.add_option("-c,--ctx-size", o->ctx, "tokens per chunk (even, >= 16)")->type_name("INT")->capture_default_str();
  app.add_option("-b,--batch-size", o->batch, "tokens per forward pass")->type_name("INT")->capture_default_str();
  app.add_option("--chunks", o->chunks, "evaluate at most this many chunks (default: all)")->type_name("INT");
  app.add_option("-t,--threads", o->threads, "threads (default: all hardware threads)")->type_name("INT");
  app.add_option("--cache-type", o->cache_type, "KV cache type, K and V: f16 (llama.cpp's default) or f32")
      ->check(CLI::IsMember({"f16", "f32"}))->type_name("TYPE")->capture_default_str();
  app.add_option("--kl-divergence-base", o->kl_base,
                 "base log-probabilities file: written by a run without --kl-divergence, read with it "
                 "(llama-perplexity's format)")
      ->type_name("FILE");
  app.add_flag("--kl-divergence", o->kl_divergence,
               "compare the model with --kl-divergence-base (KL divergence, top-token agreement)");
  return [o] {
    if (o->threads < 0 || o->threads > 1024) fail("perplexity: -t {} is out of range (0..1024)", o->threads);
    return perplexity_main(*o);
  };
}

Command reg{"perplexity", "Perplexity and KL divergence over a text file (llama-perplexity's method)",
            setup_perplexity};

}  // namespace
}  // namespace ignis::cli
