// SentencePiece .model files (Llama 2, Mistral v1..v7) against python3-sentencepiece goldens
// (scripts/ref/sentencepiece_golden.py -> tests/data/text/sentencepiece_golden.json).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"
#include "tokenizer_test_util.h"

namespace ignis::text {
namespace {

using namespace testing;

TEST(SentencePieceGolden, EncodeAndDecodeMatchReference) {
  const auto golden = nlohmann::json::parse(slurp(std::string(IGNIS_TEST_DATA) + "/text/sentencepiece_golden.json"));
  int checked_models = 0;
  for (const auto& m : golden["models"]) {
    const std::string path = shared_path(m["model"].get<std::string>());
    if (!exists(path)) continue;
    ++checked_models;
    auto tok = Tokenizer::from_path(path);
    int failed = 0;
    for (const auto& c : m["cases"]) {
      const std::string text = c["text"].get<std::string>();
      const auto expected = c["ids"].get<std::vector<int>>();
      const auto got = tok->encode(text, false, false);
      if (got != expected) {
        ++failed;
        ADD_FAILURE() << m["model"] << ": '" << text << "'\n  expected " << ids_str(expected) << "\n  got      "
                      << ids_str(got);
      }
      EXPECT_EQ(tok->decode(expected, true), c["decoded"].get<std::string>()) << m["model"] << ": " << text;
    }
    EXPECT_EQ(failed, 0) << m["model"];
  }
  if (checked_models == 0) GTEST_SKIP() << "shared/hf-tokenizers not present";
}

TEST(SentencePieceGolden, AddsBosByDefault) {
  const std::string path = shared_path("hf-tokenizers/llama2/tokenizer.model");
  if (!exists(path)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(path);
  EXPECT_EQ(tok->encode("Hello", true, false), (std::vector<TokenId>{1, 15043}));
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_TRUE(tok->is_eog(2));
}

}  // namespace
}  // namespace ignis::text
