// Round trips (decode(encode(x)) == x for valid UTF-8; invalid input repaired as Python's
// errors="replace" would), streaming detokenization, and errors for bad input.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "format/gguf.h"
#include "text/pre_types.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "tokenizer_test_util.h"

namespace ignis::text {
namespace {

using namespace testing;

// Random strings mixing ASCII, whitespace, control characters, Latin-1, CJK, emoji (with ZWJ
// and variation selectors) and combining marks.
std::string random_text(std::mt19937& rng, size_t n_chars) {
  static const uint32_t kPool[] = {'a', 'Z', '0', '9', ' ', ' ', ' ', '\t', '\n', '\r', 0x01, 0x7F, '\'',
                                   '.', '!', '<', '|', 0xE9, 0xFC, 0x416, 0x5D0, 0x627, 0x4E2D, 0x6587,
                                   0x3042, 0xAC00, 0x1F999, 0x1F680, 0x200D, 0xFE0F, 0x301, 0xFFFD};
  // U+2581 is left out: SentencePiece decodes it as a space (the reference does the same).
  std::string s;
  for (size_t i = 0; i < n_chars; ++i) {
    if (rng() % 4 == 0) s += char('a' + rng() % 26);
    else utf8_append(s, kPool[rng() % std::size(kPool)]);
  }
  return s;
}

struct Vocab {
  const char* name;
  std::string path;
  bool nfc = false;  // the tokenizer normalizes to NFC (as the reference does), so text comes back NFC
};

std::vector<Vocab> vocabs() {
  return {{"llama-spm", shared_path("tokenizer-vectors/ggml-vocab-llama-spm.gguf")},
          {"gpt-2", shared_path("tokenizer-vectors/ggml-vocab-gpt-2.gguf")},
          {"deepseek-llm", shared_path("tokenizer-vectors/ggml-vocab-deepseek-llm.gguf")},
          {"qwen2-hf", shared_path("hf-tokenizers/qwen2"), true},
          {"llama2-model", shared_path("hf-tokenizers/llama2/tokenizer.model")},
          {"baichuan", shared_path("tokenizer-vectors/ggml-vocab-baichuan.gguf")},
          {"gpt-neox", shared_path("tokenizer-vectors/ggml-vocab-gpt-neox.gguf")},
          {"bert-bge-lowercase", ""}};
}

TEST(TokenizerRoundTrip, RandomStringsDecodeToThemselves) {
  int checked = 0;
  for (const auto& v : vocabs()) {
    if (v.path.empty() || !exists(v.path)) continue;
    ++checked;
    auto tok = Tokenizer::from_path(v.path);
    std::mt19937 rng(1234);
    for (int i = 0; i < 150; ++i) {
      const std::string raw = random_text(rng, 1 + rng() % 40);
      const std::string s = v.nfc ? nfc(raw) : raw;
      const auto ids = tok->encode(raw, false, false);
      ASSERT_EQ(tok->decode(ids), s) << v.name << " case " << i;
      // With BOS added and special tokens skipped the text is the same.
      ASSERT_EQ(tok->decode(tok->encode(raw, true, false), true), s) << v.name << " case " << i;
    }
  }
  if (!checked) GTEST_SKIP();
}

TEST(TokenizerRoundTrip, InvalidUtf8IsRepairedLikePython) {
  const std::string p = shared_path("tokenizer-vectors/ggml-vocab-gpt-2.gguf");
  if (!exists(p)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(p);
  // b"a\xff b\xe2\x82 c\xf0\x9f\x98".decode("utf-8", "replace") == "a\ufffd b\ufffd c\ufffd"
  const std::string bad = "a\xff b\xe2\x82 c\xf0\x9f\x98";
  EXPECT_EQ(tok->decode(tok->encode(bad, false, false)), "a\xEF\xBF\xBD b\xEF\xBF\xBD c\xEF\xBF\xBD");
  // Byte tokens that do not form a character decode to U+FFFD.
  const auto ids = tok->encode("\xC3\xA9", false, false);  // e-acute: two byte tokens in GPT-2
  ASSERT_EQ(ids.size(), 1u);
}

TEST(TokenizerRoundTrip, StreamDecoderNeverSplitsCharacters) {
  for (const auto& v : vocabs()) {
    if (v.path.empty() || !exists(v.path)) continue;
    auto tok = Tokenizer::from_path(v.path);
    std::mt19937 rng(99);
    for (int i = 0; i < 60; ++i) {
      const std::string s = random_text(rng, 1 + rng() % 30);
      const auto ids = tok->encode(s, true, false);
      StreamDecoder sd(*tok);
      std::string streamed;
      for (TokenId id : ids) {
        const std::string part = sd.push(id);
        ASSERT_TRUE(utf8_valid(part)) << v.name;
        streamed += part;
      }
      streamed += sd.flush();
      ASSERT_EQ(streamed, tok->decode(ids, true)) << v.name << " case " << i;
    }
  }
}

TEST(TokenizerRoundTrip, StreamDecoderHoldsBackPartialCharacter) {
  const std::string p = shared_path("tokenizer-vectors/ggml-vocab-llama-spm.gguf");
  if (!exists(p)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(p);
  // The llama in U+1F999 has no piece: SPM emits its four UTF-8 bytes as byte tokens.
  const auto ids = tok->encode("\xF0\x9F\xA6\x99", false, false);
  ASSERT_EQ(ids.size(), 5u);  // "▁" + 4 byte tokens
  StreamDecoder sd(*tok);
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string part = sd.push(ids[i]);
    if (i + 1 < ids.size()) {
      EXPECT_EQ(part, "") << i;
    }
    out += part;
  }
  EXPECT_EQ(out, "\xF0\x9F\xA6\x99");
  // An unfinished character at the end becomes U+FFFD on flush.
  StreamDecoder cut(*tok);
  EXPECT_EQ(cut.push(ids[1]), "");
  EXPECT_EQ(cut.push(ids[2]), "");
  EXPECT_EQ(cut.flush(), "\xEF\xBF\xBD");
}

TEST(TokenizerSpecial, ParsedOnlyWhenAsked) {
  const std::string p = shared_path("models/stories260K.gguf");
  if (!exists(p)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(p);
  EXPECT_EQ(tok->encode("Once upon a time", true, false), (std::vector<TokenId>{1, 403, 407, 261, 378}));
  const auto literal = tok->encode("<s>", false, false);
  EXPECT_NE(literal, std::vector<TokenId>{1});
  EXPECT_EQ(tok->encode("<s>", false, true), std::vector<TokenId>{1});
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_TRUE(tok->is_control(1));
  EXPECT_EQ(tok->decode({1, 403, 407}, true), "Once upon");
}

// A copy of a GGUF's metadata with `key` dropped; the caller sets its own value.
gguf::GgufWriter copy_without(const gguf::GgufFile& src, const std::string& key) {
  gguf::GgufWriter w;
  for (const auto& [k, v] : src.metadata()) {
    if (k == key) continue;
    if (v.type == gguf::ValueType::ARRAY) w.set_array(k, v);
    else if (v.type == gguf::ValueType::STRING) w.set_string(k, v.s);
    else if (v.type == gguf::ValueType::BOOL) w.set_bool(k, v.u != 0);
    else if (v.is_integer()) w.set_i64(k, v.i);
    else w.set_f64(k, v.f);
  }
  return w;
}

TEST(TokenizerGgufFlags, SpacePrefixAndBosFollowMetadata) {
  const std::string p = shared_path("tokenizer-vectors/ggml-vocab-llama-spm.gguf");
  if (!exists(p)) GTEST_SKIP();
  auto src = gguf::GgufFile::open(p);
  auto base = Tokenizer::from_gguf(*src);
  EXPECT_EQ(base->encode("Hello", true, false), (std::vector<TokenId>{1, 15043}));  // "<s>", "▁Hello"
  gguf::GgufWriter w = copy_without(*src, "tokenizer.ggml.add_space_prefix");
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_bool("tokenizer.ggml.add_eos_token", true);
  const auto bytes = w.to_bytes();
  auto f = gguf::GgufFile::from_memory(bytes.data(), bytes.size(), "flags.gguf");
  auto tok = Tokenizer::from_gguf(*f);
  EXPECT_EQ(tok->encode("Hello", true, false), (std::vector<TokenId>{10994, 2}));  // "Hello", "</s>"
  EXPECT_EQ(tok->decode({10994}), "Hello");
}

TEST(TokenizerErrors, UnknownPreTokenizerIsNamed) {
  const std::string p = shared_path("tokenizer-vectors/ggml-vocab-gpt-2.gguf");
  if (!exists(p)) GTEST_SKIP();
  auto src = gguf::GgufFile::open(p);
  gguf::GgufWriter w = copy_without(*src, "tokenizer.ggml.pre");
  w.set_string("tokenizer.ggml.pre", "no-such-pre");
  const auto bytes = w.to_bytes();
  auto f = gguf::GgufFile::from_memory(bytes.data(), bytes.size(), "x.gguf");
  try {
    Tokenizer::from_gguf(*f);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-pre"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x.gguf"), std::string::npos) << e.what();
  }
}

// Every pre-tokenizer name compiles and splits text without losing any of it.
TEST(TokenizerPreTypes, AllNamesCompileAndKeepText) {
  const std::string text = "Hello, World! It's 2024: 12345 apples\n\n  \t\u4e2d\u6587 caf\u00e9 \U0001F999 'RE";
  const auto names = gguf_pre_tokenizer_names();
  EXPECT_GE(names.size(), 60u);
  for (const auto& name : names) {
    TokenizerConfig cfg;
    ASSERT_NO_THROW(set_gguf_pre_tokenizer(name, "test", &cfg)) << name;
    Words w;
    cfg.pretokenizer.apply(text, true, &w);
    std::string joined;
    for (const Span& sp : w.spans) joined += w.text.substr(sp.begin, sp.size());
    EXPECT_EQ(joined, text) << name;
  }
}

TEST(TokenizerErrors, BadIdsAndFiles) {
  const std::string p = shared_path("models/stories260K.gguf");
  if (!exists(p)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(p);
  EXPECT_THROW(tok->decode({5000}), Error);
  EXPECT_THROW(tok->token_to_piece(-1), Error);
  EXPECT_THROW(Tokenizer::from_path("/nonexistent/tokenizer.json"), Error);
  const std::string tmp = std::string(::testing::TempDir()) + "/bad_tokenizer.json";
  std::ofstream(tmp) << "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a\"]}}";
  EXPECT_THROW(Tokenizer::from_path(tmp), Error);
  std::ofstream(tmp) << "{not json";
  EXPECT_THROW(Tokenizer::from_path(tmp), Error);
}

}  // namespace
}  // namespace ignis::text
