// llama.cpp's tokenizer vectors (Hugging Face encode without special tokens) against the
// vocab-only GGUFs in shared/tokenizer-vectors.
#include <gtest/gtest.h>

#include "format/gguf.h"
#include "text/tokenizer.h"
#include "tokenizer_test_util.h"

namespace ignis::text {
namespace {

using namespace testing;

class GgufVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufVectors, MatchReference) {
  const std::string base = shared_path(std::string("tokenizer-vectors/ggml-vocab-") + GetParam() + ".gguf");
  if (!exists(base)) GTEST_SKIP() << base << " not present";
  auto file = gguf::GgufFile::open(base);
  auto tok = Tokenizer::from_gguf(*file);
  const auto vectors = read_vectors(base);
  ASSERT_FALSE(vectors.empty());
  int failed = 0;
  for (const auto& [text, expected] : vectors) {
    const auto got = tok->encode(text, /*add_special=*/false, /*parse_special=*/false);
    if (got != expected) {
      ++failed;
      ADD_FAILURE() << GetParam() << ": input '" << text << "'\n  expected " << ids_str(expected)
                    << "\n  got      " << ids_str(got);
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << vectors.size() << " vectors differ";
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufVectors,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "starcoder", "deepseek-llm",
                                           "bert-bge"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace ignis::text
