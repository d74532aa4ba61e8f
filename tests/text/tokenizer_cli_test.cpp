// ignis tokenize / detokenize end to end (IGNIS_BIN is set by ctest).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tokenizer_test_util.h"

namespace ignis::text {
namespace {

using namespace testing;

struct Result {
  int rc;
  std::string out;
};

Result run(const std::string& args) {
  const char* bin = std::getenv("IGNIS_BIN");
  Result r{-1, ""};
  if (!bin) return r;
  FILE* p = popen((std::string(bin) + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class TokenizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::getenv("IGNIS_BIN")) GTEST_SKIP() << "IGNIS_BIN not set";
    if (!exists(shared_path("models/stories260K.gguf"))) GTEST_SKIP();
  }
  const std::string model_ = shared_path("models/stories260K.gguf");
};

TEST_F(TokenizeCli, PrintsIdsWithBos) {
  const auto r = run("tokenize -m " + model_ + " 'Once upon a time'");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out, "[1, 403, 407, 261, 378]\n");
}

TEST_F(TokenizeCli, NoAddSpecialAndParseSpecial) {
  EXPECT_EQ(run("tokenize -m " + model_ + " --no-add-special 'Once upon a time'").out, "[403, 407, 261, 378]\n");
  EXPECT_EQ(run("tokenize -m " + model_ + " --no-add-special --parse-special '<s>'").out, "[1]\n");
  EXPECT_NE(run("tokenize -m " + model_ + " --no-add-special '<s>'").out, "[1]\n");
}

TEST_F(TokenizeCli, FileAndFolderModels) {
  const std::string tmp = std::string(::testing::TempDir()) + "/ignis_tok_cli.txt";
  {
    FILE* f = fopen(tmp.c_str(), "wb");
    fputs("Once upon a time", f);
    fclose(f);
  }
  EXPECT_EQ(run("tokenize -m " + model_ + " --file " + tmp).out, "[1, 403, 407, 261, 378]\n");
  const std::string qwen = shared_path("hf-tokenizers/qwen2");
  if (exists(qwen))
    EXPECT_EQ(run("tokenize -m " + qwen + " --parse-special '<|im_start|>Hello world'").out, "[151644, 9707, 1879]\n");
}

TEST_F(TokenizeCli, Detokenize) {
  const auto r = run("detokenize -m " + model_ + " --skip-special '[1, 403, 407, 261, 378]'");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "Once upon a time\n");
}

TEST_F(TokenizeCli, BadInputIsOneLineError) {
  auto r = run("detokenize -m " + model_ + " '[1, 99999]'");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("error: "), std::string::npos);
  EXPECT_NE(r.out.find("99999"), std::string::npos);
  r = run("detokenize -m " + model_ + " 'not json'");
  EXPECT_EQ(r.rc, 1);
  r = run("tokenize -m /nonexistent/model.gguf hi");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("/nonexistent/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace ignis::text
