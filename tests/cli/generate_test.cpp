// engine::generate: the loop's stop conditions, streaming and context handling, on a scripted fake
// model and a tiny fake tokenizer (no model file needed): length, end-of-generation token, stop string,
// whole UTF-8 characters, full context, cancellation, prompt-size errors, prompt in the penalty history.
#include "engine/generate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace {

using ignis::text::TokenId;

class FakeCache : public ignis::model::KvCache {
 public:
  explicit FakeCache(int64_t n_ctx) : n_ctx_(n_ctx) {}
  int64_t n_ctx() const override { return n_ctx_; }
  int64_t n_past() const override { return n_past_; }
  void truncate(int64_t n) override { n_past_ = std::min(n_past_, n); }
  int64_t n_layer() const override { return 0; }
  int64_t kv_width() const override { return 0; }
  int64_t page_size() const override { return n_ctx_; }
  ignis::DType kv_type() const override { return ignis::DType::F16; }
  void* k_page(int64_t, int64_t) override { return nullptr; }
  void* v_page(int64_t, int64_t) override { return nullptr; }
  void advance(int64_t n) override { n_past_ += n; }

 private:
  int64_t n_ctx_;
  int64_t n_past_ = 0;
};

// Emits script[k] as the argmax after the k-th generated position; a fixed row instead when given.
class FakeModel : public ignis::model::Model {
 public:
  FakeModel(std::vector<TokenId> script, int64_t n_prompt) : script_(std::move(script)), n_prompt_(n_prompt) {
    hp_.n_vocab = 8;
  }
  std::vector<float> fixed_row;
  mutable int forwards = 0;
  mutable std::vector<int> finished_after;  // forwards done at each finish_repacking call

  const ignis::model::HParams& hparams() const override { return hp_; }
  const ignis::gguf::GgufFile& file() const override { throw ignis::Error("fake model has no file"); }
  std::shared_ptr<const ignis::gguf::GgufFile> file_ptr() const override { return nullptr; }
  using ignis::model::Model::new_cache;
  std::unique_ptr<ignis::model::KvCache> new_cache(int64_t n_ctx, ignis::DType) const override {
    return std::make_unique<FakeCache>(n_ctx);
  }
  void forward(ignis::model::KvCache& cache, std::span<const TokenId> tokens, float* logits, bool,
               ignis::ThreadPool&) const override {
    if (cache.n_past() + static_cast<int64_t>(tokens.size()) > cache.n_ctx()) throw ignis::Error("cache overflow");
    ++forwards;
    cache.advance(static_cast<int64_t>(tokens.size()));
    if (!fixed_row.empty()) {
      std::copy(fixed_row.begin(), fixed_row.end(), logits);
      return;
    }
    const size_t step = static_cast<size_t>(cache.n_past() - n_prompt_);
    std::fill(logits, logits + hp_.n_vocab, 0.0f);
    logits[step < script_.size() ? script_[step] : 0] = 10.0f;
  }
  void forward_batch(std::span<ignis::model::SeqBatch> seqs, ignis::ThreadPool& pool) const override {
    for (auto& s : seqs) forward(*s.cache, s.tokens, s.logits, s.all_logits, pool);
  }
  void finish_repacking(ignis::ThreadPool&) const override { finished_after.push_back(forwards); }
  uint64_t weight_bytes() const override { return 0; }
  uint64_t n_params() const override { return 0; }

 private:
  ignis::model::HParams hp_;
  std::vector<TokenId> script_;
  int64_t n_prompt_;
};

// 0:"a" 1:"b" 2:" " 3,4: the two bytes of "é" 5:"!" 6: end of generation 7:"x"
class FakeTokenizer : public ignis::text::Tokenizer {
 public:
  std::vector<TokenId> encode(std::string_view, bool, bool) const override { return {}; }
  std::string token_to_piece(TokenId id) const override {
    static const char* kPieces[] = {"a", "b", " ", "\xc3", "\xa9", "!", "", "x"};
    return kPieces[id];
  }
  std::string decode(const std::vector<TokenId>& ids, bool) const override {
    std::string s;
    for (TokenId id : ids) s += token_to_piece(id);
    return s;
  }
  int32_t n_vocab() const override { return 8; }
  TokenId bos() const override { return -1; }
  TokenId eos() const override { return 6; }
  bool add_bos() const override { return false; }
  bool add_eos() const override { return false; }
  bool is_eog(TokenId id) const override { return id == 6; }
  bool is_control(TokenId id) const override { return id == 6; }
  std::string token_text(TokenId id) const override { return token_to_piece(id); }
  std::string chat_template() const override { return ""; }
};

struct RunResult {
  ignis::engine::GenerateResult res;
  std::string text;                     // concatenated on_text
  std::vector<std::string> text_parts;  // each on_text call
  std::vector<ignis::engine::TokenEvent> events;
};

ignis::sample::SamplingParams greedy() {
  ignis::sample::SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

RunResult run(FakeModel& m, std::vector<TokenId> prompt, ignis::engine::GenerateOptions opts, int64_t n_ctx = 64,
        ignis::sample::SamplingParams sp = greedy(), int cancel_after = -1) {
  static ignis::ThreadPool pool(1);
  FakeTokenizer tok;
  auto cache = m.new_cache(n_ctx);
  ignis::sample::Sampler sampler(sp, 8);
  RunResult r;
  ignis::engine::GenerateCallbacks cb;
  cb.on_token = [&](const ignis::engine::TokenEvent& ev) {
    r.events.push_back(ev);
    return cancel_after < 0 || static_cast<int>(r.events.size()) < cancel_after;
  };
  cb.on_text = [&](std::string_view s) {
    r.text += s;
    r.text_parts.emplace_back(s);
  };
  r.res = ignis::engine::generate(m, *cache, tok, sampler, pool, prompt, opts, cb);
  return r;
}

ignis::engine::GenerateOptions n_tokens(int n) {
  ignis::engine::GenerateOptions o;
  o.n_predict = n;
  return o;
}

}  // namespace

TEST(Generate, StopsAfterNPredictTokens) {
  FakeModel m({0, 1, 0, 1, 0, 1}, 1);
  RunResult r = run(m, {7}, n_tokens(3));
  EXPECT_EQ(r.text, "aba");
  EXPECT_EQ(r.res.reason, ignis::engine::StopReason::kLength);
  EXPECT_EQ(r.res.n_prompt, 1);
  EXPECT_EQ(r.res.n_generated, 3);
  EXPECT_EQ(m.forwards, 3);  // the prompt batch + 2 single tokens: the last token is never fed
}

TEST(Generate, EndOfGenerationTokenEndsWithoutText) {
  FakeModel m({0, 1, 6, 0}, 2);
  RunResult r = run(m, {7, 7}, n_tokens(-1));
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(r.res.reason, ignis::engine::StopReason::kEog);
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_TRUE(r.events[2].eog);
  EXPECT_EQ(r.events[2].id, 6);
  EXPECT_EQ(r.events[2].text, "");
}

TEST(Generate, StopStringIsCutAndNeverStreamed) {
  FakeModel m({0, 2, 1, 5, 0, 0}, 1);  // "a b!aa"
  ignis::engine::GenerateOptions o = n_tokens(6);
  o.stop = {" b"};
  RunResult r = run(m, {7}, o);
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(r.res.reason, ignis::engine::StopReason::kStopString);
  EXPECT_EQ(r.res.stop_string, " b");
  EXPECT_EQ(r.res.n_generated, 3);
  for (const auto& part : r.text_parts) EXPECT_EQ(part.find(' '), std::string::npos);
}

TEST(Generate, HeldBackTextComesOutAtTheEnd) {
  FakeModel m({0, 2, 0}, 1);  // "a a": the trailing "a" could start "ab", released when generation ends
  ignis::engine::GenerateOptions o = n_tokens(3);
  o.stop = {"ab"};
  RunResult r = run(m, {7}, o);
  EXPECT_EQ(r.text, "a a");
  EXPECT_EQ(r.res.reason, ignis::engine::StopReason::kLength);
}

TEST(Generate, StreamsWholeUtf8Characters) {
  FakeModel m({0, 3, 4, 5}, 1);  // "a", first byte of é, second byte, "!"
  RunResult r = run(m, {7}, n_tokens(4));
  EXPECT_EQ(r.text, "a\xc3\xa9!");
  EXPECT_EQ(r.text_parts, (std::vector<std::string>{"a", "\xc3\xa9", "!"}));
  ASSERT_EQ(r.events.size(), 4u);
  EXPECT_EQ(r.events[1].text, "");
  EXPECT_EQ(r.events[2].text, "\xc3\xa9");
}

TEST(Generate, FullContextEndsGeneration) {
  FakeModel m(std::vector<TokenId>(32, 0), 2);
  RunResult r = run(m, {7, 7}, n_tokens(-1), /*n_ctx=*/6);
  EXPECT_EQ(r.res.reason, ignis::engine::StopReason::kContextFull);
  EXPECT_EQ(r.res.n_generated, 5);  // 4 fed tokens fill positions 2..5, the 5th needs no slot
  EXPECT_EQ(r.text, "aaaaa");
}

TEST(Generate, CallbackCancels) {
  FakeModel m(std::vector<TokenId>(32, 1), 1);
  RunResult r = run(m, {7}, n_tokens(10), 64, greedy(), /*cancel_after=*/2);
  EXPECT_EQ(r.res.reason, ignis::engine::StopReason::kCancelled);
  EXPECT_EQ(r.res.n_generated, 2);
}

TEST(Generate, PromptErrorsNameTheSizes) {
  FakeModel m({0}, 1);
  try {
    run(m, {7, 7, 7, 7, 7}, n_tokens(1), /*n_ctx=*/4);
    FAIL() << "expected an error";
  } catch (const ignis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 tokens"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run(m, {}, n_tokens(1)), ignis::Error);
}

TEST(Generate, PromptTokensEnterThePenaltyHistory) {
  FakeModel m({}, 1);
  m.fixed_row = {2.0f, 1.5f, 0, 0, 0, 0, -10.0f, 0};
  ignis::sample::SamplingParams sp = greedy();
  sp.frequency_penalty = 1.0f;
  RunResult r = run(m, {0}, n_tokens(1), 64, sp);  // token 0 is in the prompt: 2 - 1 < 1.5
  EXPECT_EQ(r.text, "b");
  RunResult q = run(m, {7}, n_tokens(1), 64, sp);
  EXPECT_EQ(q.text, "a");
}

TEST(Generate, LogprobsOnRequest) {
  FakeModel m({1, 0}, 1);
  ignis::engine::GenerateOptions o = n_tokens(2);
  o.n_top_logprobs = 3;
  RunResult r = run(m, {7}, o);
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].logprobs.top.size(), 3u);
  EXPECT_EQ(r.events[0].logprobs.top[0].id, 1);
  EXPECT_FLOAT_EQ(r.events[0].logprobs.chosen, r.events[0].logprobs.top[0].logprob);
  EXPECT_LT(r.events[0].logprobs.chosen, 0.0f);
}

// A generation with 64 or more single-token steps ahead (by n_predict and the context's room) has the
// model finish its weights' copies once, after the prompt and before the first step; a shorter one
// leaves them to the background (generate.cpp, NOTE (the weights' copies)).
TEST(Generate, LongGenerationsFinishTheWeightCopiesBeforeTheirFirstStep) {
  struct Case {
    int n_predict;
    int64_t n_ctx;
    bool finishes;
  } cases[] = {{65, 256, true}, {200, 256, true}, {64, 256, false}, {10, 256, false},
               {-1, 256, true}, {-1, 60, false}, {200, 65, false}, {200, 66, true}, {1, 256, false}};
  for (const Case& c : cases) {
    FakeModel m(std::vector<TokenId>(300, 7), 2);
    const auto r = run(m, {0, 1}, n_tokens(c.n_predict), c.n_ctx);
    if (c.finishes) {
      EXPECT_EQ(m.finished_after, std::vector<int>{1}) << "n_predict " << c.n_predict << " n_ctx " << c.n_ctx;
    } else {
      EXPECT_TRUE(m.finished_after.empty()) << "n_predict " << c.n_predict << " n_ctx " << c.n_ctx;
    }
    EXPECT_GT(r.res.n_generated, 0);
  }
}
