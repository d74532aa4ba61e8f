// The engine through the public API on stories260K (a trained model with a published greedy text).
#include "ignis/engine.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace {

const std::string kModel = std::string(IGNIS_SHARED_DIR) + "/models/stories260K.gguf";

std::string reference_text() {
  std::ifstream f(std::string(IGNIS_SHARED_DIR) + "/models/stories260K.md");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string md = ss.str();
  const std::string marker = "-t 0.0\n";
  size_t a = md.find(marker) + marker.size();
  size_t b = md.find("\n```", a);
  return md.substr(a, b - a);
}

std::unique_ptr<ignis::Engine> load(int32_t max_seqs = 16, uint64_t kv_bytes = 0, int32_t max_queue = 256,
                                    int32_t budget = 512) {
  ignis::EngineOptions o;
  o.model = kModel;
  o.n_threads = 2;
  o.max_seqs = max_seqs;
  o.kv_memory_bytes = kv_bytes;
  o.max_queue = max_queue;
  o.max_batched_tokens = budget;
  o.n_ctx = 512;
  return ignis::Engine::load(o);
}

ignis::SamplingParams greedy(int n) {
  ignis::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = n;
  return p;
}

const std::vector<std::string> kPrompts = {"Once upon a time", "The cat sat", "Tom had a big", "One day, Lily",
                                           "The sun", "Ben and Mia went", "A little bird", "Mom said"};

}  // namespace

TEST(Engine, GreedyMatchesTheReferenceText) {
  auto e = load();
  auto out = e->generate(std::vector<std::string>{"Once upon a time"}, greedy(60));
  ASSERT_EQ(out.size(), 1u);
  const std::string ref = reference_text();
  const std::string got = "Once upon a time" + out[0].text;
  EXPECT_EQ(ref.substr(0, got.size()), got);
  EXPECT_EQ(out[0].finish_reason, ignis::FinishReason::Length);
  EXPECT_EQ(out[0].token_ids.size(), 60u);
}

TEST(Engine, BatchInvariance_AloneBatchedAndFromThePrefixCache) {
  auto e = load();
  std::vector<std::vector<ignis::TokenId>> alone;
  for (const auto& p : kPrompts) alone.push_back(e->generate(std::vector<std::string>{p}, greedy(40))[0].token_ids);
  // All together, with a small token budget so prefills are chunked and mixed with decodes.
  auto e2 = load(16, 0, 256, 7);
  auto together = e2->generate(kPrompts, greedy(40));
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(together[i].token_ids, alone[i]) << kPrompts[i];
  // Again on the same engine: prompts whose full blocks are cached must give the same tokens.
  std::string longp = "Tom and Sam played with a red kite in the big green park near the lake. The wind was strong.";
  auto first = e->generate(std::vector<std::string>{longp}, greedy(30))[0];
  auto second = e->generate(std::vector<std::string>{longp}, greedy(30))[0];
  EXPECT_EQ(first.n_cached_tokens, 0);
  EXPECT_GT(second.n_cached_tokens, 0);
  EXPECT_EQ(first.token_ids, second.token_ids);
}

TEST(Engine, PreemptionUnderMemoryPressureRecomputesAndNeverFails) {
  auto e = load();
  std::vector<std::vector<ignis::TokenId>> alone;
  for (const auto& p : kPrompts) alone.push_back(e->generate(std::vector<std::string>{p}, greedy(100))[0].token_ids);
  // KV for ~ 600 tokens (bytes per token: 5 layers * 2 * 32 f16 * 2 bytes = 640).
  auto small = load(8, 640 * 640);
  auto out = small->generate(kPrompts, greedy(100));
  EXPECT_GT(small->stats().n_preemptions, 0u);
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(out[i].token_ids, alone[i]) << kPrompts[i];
}

void expect_load_error(const ignis::EngineOptions& o, const std::string& words) {
  try {
    ignis::Engine::load(o);
    ADD_FAILURE() << "loaded; expected an error containing " << words;
  } catch (const ignis::Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

// The KV cache type: f32 holds each block's tokens in twice the bytes of f16 (the default), so the same
// memory holds half the tokens; an unknown type is refused by name. On the stories model the two
// caches give the same greedy text (its goldens are f32).
TEST(Engine, KvCacheTypeSetsBytesPerToken) {
  ignis::EngineOptions o;
  o.model = kModel;
  o.n_threads = 2;
  o.n_ctx = 512;
  o.kv_memory_bytes = 640 * 512;  // 512 tokens of f16 (5 layers * 2 * 32 * 2 bytes)
  auto f16 = ignis::Engine::load(o);
  o.kv_type = "f32";
  expect_load_error(o, "holds 256 tokens");  // 512 f32 tokens do not fit in 327,680 bytes
  o.kv_memory_bytes *= 2;
  auto f32 = ignis::Engine::load(o);
  const std::vector<std::string> p = {kPrompts[0]};
  EXPECT_EQ(f16->generate(p, greedy(40))[0].token_ids, f32->generate(p, greedy(40))[0].token_ids);
  o.kv_type = "q8_0";
  expect_load_error(o, "'q8_0'");
}

TEST(Engine, CancelFreesTheBlocks) {
  auto e = load();
  auto p = greedy(400);
  p.ignore_eos = true;
  auto s = e->stream(e->tokenize("Once upon a time"), p);
  auto first = s->next();
  ASSERT_TRUE(first);
  EXPECT_GT(e->stats().kv_usage, 0.0);
  e->cancel(s->id());
  std::optional<ignis::StreamChunk> last;
  while (auto c = s->next()) last = c;
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->finished);
  EXPECT_EQ(last->finish_reason, ignis::FinishReason::Cancelled);
  for (int i = 0; i < 100 && e->stats().kv_usage > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(e->stats().kv_usage, 0.0);
  EXPECT_EQ(e->stats().n_running, 0);
}

TEST(Engine, StopStringsAndStopTokens) {
  auto e = load();
  auto p = greedy(60);
  p.stop = {" Lily"};
  auto out = e->generate(std::vector<std::string>{"Once upon a time"}, p)[0];
  EXPECT_EQ(out.finish_reason, ignis::FinishReason::Stop);
  EXPECT_EQ(out.stop, " Lily");
  const std::string ref = reference_text().substr(std::string("Once upon a time").size());
  EXPECT_EQ(out.text, ref.substr(0, ref.find(" Lily")));
}

TEST(Engine, BadRequestsAreErrorsNotCrashes) {
  auto e = load(1, 0, 1);
  EXPECT_THROW(e->submit({}, greedy(4), nullptr), ignis::Error);
  EXPECT_THROW(e->submit({1, 99999}, greedy(4), nullptr), ignis::Error);
  try {
    e->submit(std::vector<ignis::TokenId>(500, 1), greedy(100), nullptr);
    FAIL() << "expected context_length_exceeded";
  } catch (const ignis::Error& err) {
    EXPECT_NE(std::string(err.what()).find("context_length_exceeded"), std::string::npos);
  }
  auto bad = greedy(4);
  bad.top_p = 0;
  EXPECT_THROW(e->submit({1, 2}, bad, nullptr), ignis::Error);
  bad = greedy(4);
  bad.temperature = -1;
  EXPECT_THROW(e->submit({1, 2}, bad, nullptr), ignis::Error);
}

TEST(Engine, QueueBoundIsExplicit) {
  auto e = load(1, 0, 1);
  auto p = greedy(300);
  p.ignore_eos = true;
  std::vector<ignis::RequestId> ids;
  bool refused = false;
  for (int i = 0; i < 6 && !refused; ++i) {
    try {
      ids.push_back(e->submit({1, 403, 407}, p, nullptr));
    } catch (const ignis::QueueFullError&) {
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
  for (auto id : ids) e->cancel(id);
}

TEST(Engine, SeedReproducibility) {
  auto e = load();
  ignis::SamplingParams p;
  p.temperature = 1.0f;
  p.max_tokens = 30;
  p.seed = 7;
  auto a = e->generate(std::vector<std::string>{"Once upon a time"}, p)[0];
  auto b = e->generate(std::vector<std::string>{"Once upon a time"}, p)[0];
  EXPECT_EQ(a.token_ids, b.token_ids);
  p.seed = 8;
  auto c = e->generate(std::vector<std::string>{"Once upon a time"}, p)[0];
  EXPECT_NE(a.token_ids, c.token_ids);
}

TEST(Engine, ChatUsesTheTemplateAndShutdownIsIdempotent) {
  auto e = load();
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
  // stories260K ships no template: the ChatML fallback renders the message.
  std::string rendered = e->apply_chat_template(msgs);
  EXPECT_NE(rendered.find("Once upon a time"), std::string::npos);
  EXPECT_NE(rendered.find("<|im_start|>user"), std::string::npos);
  auto out = e->chat(msgs, greedy(5));
  EXPECT_EQ(out.token_ids.size(), 5u);
  e->shutdown();
  e->shutdown();
  EXPECT_THROW(e->submit({1, 2}, greedy(2), nullptr), ignis::Error);
}

TEST(Engine, SharedSystemPromptArrivingTogetherIsPrefilledOnceWithUnchangedTokens) {
  std::string head;
  for (int i = 0; i < 10; ++i) head += "Lily and Ben played in the park with a big red ball. ";
  ignis::EngineOptions o;
  o.model = kModel;
  o.n_threads = 2;
  o.n_ctx = 512;
  o.max_batched_tokens = 256;  // room for more than one request in a step
  auto e = ignis::Engine::load(o);
  const std::vector<ignis::TokenId> head_ids = e->tokenize(head, true, false);
  ASSERT_GE(head_ids.size(), 160u);
  std::vector<std::vector<ignis::TokenId>> prompts;
  size_t max_tail = 0;
  for (const auto& p : kPrompts) {
    auto ids = head_ids;
    auto tail = e->tokenize(p, false, false);
    ids.insert(ids.end(), tail.begin(), tail.end());
    max_tail = std::max(max_tail, tail.size());
    prompts.push_back(ids);
  }
  auto together = e->generate(prompts, greedy(20));
  const ignis::EngineStats st = e->stats();
  // The head is computed once; each request computes at most its tail and the head's partial block.
  EXPECT_LE(st.prompt_tokens, head_ids.size() + prompts.size() * (max_tail + 16));
  EXPECT_GE(st.prefix_hits, (prompts.size() - 1) * (head_ids.size() / 16 * 16 - 16));
  // Tokens equal those of each prompt alone on an engine without a prefix cache.
  o.prefix_caching = false;
  auto plain = ignis::Engine::load(o);
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto alone = plain->generate(std::vector<std::vector<ignis::TokenId>>{prompts[i]}, greedy(20))[0];
    EXPECT_EQ(together[i].token_ids, alone.token_ids) << kPrompts[i];
  }
}
