// generation_config.json defaults (src/engine/generation_defaults.h): parsing, validation, the rule that
// explicit values win, and the server's request parsing on top of the engine's defaults.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/error.h"
#include "engine/generation_defaults.h"
#include "server/openai_params.h"

namespace fs = std::filesystem;
using namespace ignis::engine;

namespace {

std::string folder_with(const std::string& name, const std::string& gen_config) {
  fs::path dir = fs::path(IGNIS_BINARY_DIR) / "tmp-gen-defaults" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (!gen_config.empty()) std::ofstream(dir / "generation_config.json") << gen_config;
  return dir.string();
}

std::string error_of(const std::string& gen_config) {
  try {
    load_generation_defaults(folder_with("bad", gen_config));
  } catch (const ignis::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// Llama 3.1 Instruct's file as published.
TEST(GenerationDefaults, ParsesSamplingValuesAndEosIds) {
  auto d = load_generation_defaults(folder_with(
      "llama31", R"({"bos_token_id": 128000, "do_sample": true, "eos_token_id": [128001, 128008, 128009],
                     "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.42.3"})"));
  EXPECT_EQ(fs::path(d.path).filename(), "generation_config.json");
  EXPECT_EQ(d.temperature, 0.6f);
  EXPECT_EQ(d.top_p, 0.9f);
  EXPECT_FALSE(d.top_k);
  EXPECT_FALSE(d.repetition_penalty);
  EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  // Qwen2.5's: no do_sample key (not read as false), all four values, a single eos id as a list.
  d = load_generation_defaults(folder_with(
      "qwen25", R"({"bos_token_id": 151643, "pad_token_id": 151643, "eos_token_id": [151645, 151643],
                    "repetition_penalty": 1.05, "temperature": 0.7, "top_p": 0.8, "top_k": 20})"));
  EXPECT_EQ(d.temperature, 0.7f);
  EXPECT_EQ(d.top_p, 0.8f);
  EXPECT_EQ(d.top_k, 20);
  EXPECT_EQ(d.repetition_penalty, 1.05f);
  EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  d = load_generation_defaults(folder_with("int_eos", R"({"eos_token_id": 2})"));
  EXPECT_EQ(d.eos_token_ids, std::vector<int32_t>{2});
  EXPECT_FALSE(d.has_sampling());
}

TEST(GenerationDefaults, DoSampleFalseIsGreedy) {
  auto d = load_generation_defaults(folder_with("greedy", R"({"do_sample": false, "temperature": 0.6, "top_p": 0.9})"));
  EXPECT_EQ(d.temperature, 0.0f);
  EXPECT_FALSE(d.top_p);  // unused when greedy
  SamplingValues v;
  EXPECT_EQ(apply_generation_defaults(d, {}, &v), "temperature=0");
  EXPECT_EQ(v.temperature, 0.0f);
  EXPECT_EQ(v.top_p, 1.0f);
}

TEST(GenerationDefaults, ExplicitValuesWin) {
  GenerationDefaults d;
  d.temperature = 0.7f;
  d.top_p = 0.8f;
  d.top_k = 20;
  d.repetition_penalty = 1.05f;
  SamplingValues v{0.8f, 0.95f, 40, 1.0f};
  EXPECT_EQ(apply_generation_defaults(d, {}, &v), "temperature=0.7 top_p=0.8 top_k=20 repetition_penalty=1.05");
  EXPECT_EQ(v.temperature, 0.7f);
  EXPECT_EQ(v.top_p, 0.8f);
  EXPECT_EQ(v.top_k, 20);
  EXPECT_EQ(v.repetition_penalty, 1.05f);
  SamplingValues w{0.0f, 0.95f, 40, 1.0f};
  SamplingFieldsSet set;
  set.temperature = true;
  set.top_k = true;
  EXPECT_EQ(apply_generation_defaults(d, set, &w), "top_p=0.8 repetition_penalty=1.05");
  EXPECT_EQ(w.temperature, 0.0f);  // given (even at a value that equals no default)
  EXPECT_EQ(w.top_k, 40);
  EXPECT_EQ(w.top_p, 0.8f);
  SamplingValues u{0.8f, 0.95f, 40, 1.0f};
  EXPECT_EQ(apply_generation_defaults(GenerationDefaults{}, {}, &u), "");
  EXPECT_EQ(u.temperature, 0.8f);
}

TEST(GenerationDefaults, OnlyFoldersHaveThem) {
  EXPECT_TRUE(load_generation_defaults(folder_with("none", "")).path.empty());
  const std::string dir = folder_with("file", R"({"temperature": 0.5})");
  EXPECT_TRUE(load_generation_defaults(dir + "/generation_config.json").path.empty());  // a file path: not a folder
  EXPECT_TRUE(load_generation_defaults(dir + "/missing.gguf").path.empty());
}

TEST(GenerationDefaults, BadFilesGiveOneLineErrors) {
  EXPECT_NE(error_of("{").find("generation_config.json: invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("generation_config.json: not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"temperature": "hot"})").find("generation_config.json: key temperature is not a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"top_p": 0})").find("generation_config.json: key top_p = 0 is out of range ((0, 1])"),
            std::string::npos) << error_of(R"({"top_p": 0})");
  EXPECT_NE(error_of(R"({"top_p": 1.5})").find("key top_p = 1.5 is out of range"), std::string::npos);
  EXPECT_NE(error_of(R"({"temperature": -1})").find("key temperature = -1 is out of range"), std::string::npos);
  EXPECT_NE(error_of(R"({"repetition_penalty": 0})").find("key repetition_penalty = 0 is out of range"), std::string::npos);
  EXPECT_NE(error_of(R"({"top_k": 2.5})").find("key top_k = 2.5 is not an integer"), std::string::npos);
  EXPECT_NE(error_of(R"({"do_sample": "no"})").find("key do_sample is not a boolean"), std::string::npos);
  EXPECT_NE(error_of(R"({"eos_token_id": [2, "x"]})").find("key eos_token_id holds \"x\", not a token id"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"eos_token_id": -1})").find("key eos_token_id holds -1, not a token id"), std::string::npos);
  EXPECT_EQ(error_of(R"({"temperature": null, "max_new_tokens": 100, "pad_token_id": 0})"), "(no error)");
}

// The OpenAI routes start from the engine's defaults: absent fields keep them, present fields win.
TEST(GenerationDefaults, ServerRequestFieldsOverTheModelDefaults) {
  ignis::SamplingParams base;
  base.temperature = 0.7f;
  base.top_p = 0.8f;
  base.top_k = 20;
  base.repetition_penalty = 1.05f;
  auto f = ignis::server::parse_common(nlohmann::ordered_json::parse(R"({"top_p": 0.5, "max_tokens": 7})"), base);
  EXPECT_EQ(f.params.temperature, 0.7f);
  EXPECT_EQ(f.params.top_p, 0.5f);
  EXPECT_EQ(f.params.top_k, 20);
  EXPECT_EQ(f.params.repetition_penalty, 1.05f);
  EXPECT_EQ(f.params.max_tokens, 7);
  f = ignis::server::parse_common(nlohmann::ordered_json::parse(R"({"temperature": 1.0, "top_k": -1})"), base);
  EXPECT_EQ(f.params.temperature, 1.0f);
  EXPECT_EQ(f.params.top_k, 0);
  f = ignis::server::parse_common(nlohmann::ordered_json::parse("{}"));  // no defaults: vLLM's
  EXPECT_EQ(f.params.temperature, 1.0f);
  EXPECT_EQ(f.params.top_p, 1.0f);
}

// --- The engine on a Hugging Face folder (random weights from ignis-mkhf, Qwen2 tokenizer) ---------

#include "ignis/engine.h"

namespace {

// A tiny random Qwen2 folder, or "" when the tool or the tokenizer is missing.
std::string mkhf_folder(const std::string& name) {
  const std::string mkhf = std::string(IGNIS_BINARY_DIR) + "/bin/ignis-mkhf";
  const std::string tok = std::string(IGNIS_SHARED_DIR) + "/hf-tokenizers/qwen2";
  if (!fs::exists(mkhf) || !fs::exists(tok + "/vocab.json")) return "";
  const std::string dir = folder_with(name, "");
  const std::string cmd = mkhf + " --arch qwen2 --dtype f32 --tokenizer '" + tok + "' -o '" + dir + "' > /dev/null";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  return dir;
}

std::unique_ptr<ignis::Engine> load_engine(const std::string& dir) {
  ignis::EngineOptions o;
  o.model = dir;
  o.n_ctx = 128;
  o.max_seqs = 2;
  o.n_threads = 2;
  return ignis::Engine::load(o);
}

}  // namespace

// Without generation_config.json the engine's defaults are SamplingParams{}; with one, do_sample=false
// makes default_sampling_params() greedy, its eos id ends generation, and explicit values still win.
TEST(GenerationDefaultsEngine, FolderDefaultsApplyWhenUnsetAndExplicitValuesWin) {
  const std::string dir = mkhf_folder("engine_folder");
  if (dir.empty()) GTEST_SKIP() << "needs the ignis-mkhf tool and shared/hf-tokenizers/qwen2";
  ignis::SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 6;
  greedy.ignore_eos = true;
  std::vector<ignis::TokenId> reference;
  {
    auto e = load_engine(dir);
    EXPECT_EQ(e->default_sampling_params().temperature, 1.0f);
    reference = e->generate(std::vector<std::string>{"Hello"}, greedy)[0].token_ids;
  }
  ASSERT_EQ(reference.size(), 6u);
  // The third greedy token becomes an end-of-generation token.
  std::ofstream(fs::path(dir) / "generation_config.json")
      << R"({"do_sample": false, "temperature": 0.9, "top_k": 5, "eos_token_id": [)" << reference[2] << "]}";
  auto e = load_engine(dir);
  ignis::SamplingParams d = e->default_sampling_params();
  EXPECT_EQ(d.temperature, 0.0f);
  EXPECT_EQ(d.top_k, 0);  // do_sample=false: the file's top_k is not used
  d.max_tokens = 6;
  auto c = e->generate(std::vector<std::string>{"Hello"}, d)[0];  // greedy from the defaults alone
  EXPECT_EQ(c.finish_reason, ignis::FinishReason::Stop);
  ASSERT_EQ(c.token_ids.size(), 3u);
  EXPECT_EQ(std::vector<ignis::TokenId>(c.token_ids.begin(), c.token_ids.begin() + 2),
            std::vector<ignis::TokenId>(reference.begin(), reference.begin() + 2));
  d.ignore_eos = true;  // explicit: the eos id no longer ends it
  c = e->generate(std::vector<std::string>{"Hello"}, d)[0];
  EXPECT_EQ(c.token_ids, reference);
  EXPECT_EQ(c.finish_reason, ignis::FinishReason::Length);
  e.reset();
  fs::remove_all(dir);  // 40 MB of random weights
}
