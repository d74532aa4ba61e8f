// Choosing the .gguf of a repo for -hf REPO[:QUANT] (pure functions, no server).
#include <gtest/gtest.h>

#include "core/error.h"
#include "hub/cache.h"
#include "hub/quant_select.h"

using namespace ignis::hub;
using Files = std::vector<std::string>;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ignis::Error& e) {
    return e.what();
  }
  return "(no error)";
}

const Files kQwen = {".gitattributes", "LICENSE", "README.md",
                     "qwen2.5-1.5b-instruct-fp16.gguf", "qwen2.5-1.5b-instruct-q4_k_m.gguf",
                     "qwen2.5-1.5b-instruct-q4_k_s.gguf", "qwen2.5-1.5b-instruct-q8_0.gguf",
                     "qwen2.5-1.5b-instruct-iq4_xs.gguf", "mmproj-q4_k_m.gguf"};

}  // namespace

TEST(HfSpec, SplitsRepoAndQuant) {
  auto s = parse_hf_spec("Qwen/Qwen2.5-1.5B-Instruct-GGUF:q8_0");
  EXPECT_EQ(s.repo, "Qwen/Qwen2.5-1.5B-Instruct-GGUF");
  EXPECT_EQ(s.quant, "q8_0");
  EXPECT_EQ(parse_hf_spec("a/b").quant, "");
}

TEST(HfSpec, RejectsMalformedIds) {
  for (const char* bad : {"noslash", "a/b/c", "../x", "a/..", "a/b c", "/b", "a/", "a/b:", "a/b:x/y", "a/.git"})
    EXPECT_THROW(parse_hf_spec(bad), ignis::Error) << bad;
}

TEST(RepoFile, RejectsEscapingPaths) {
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a\\b", "dir/"})
    EXPECT_THROW(check_repo_file(bad), ignis::Error) << bad;
  EXPECT_NO_THROW(check_repo_file("sub/dir/model-00001-of-00002.safetensors"));
}

TEST(SelectGguf, DefaultIsQ4KM) {
  EXPECT_EQ(select_gguf("r/q", kQwen, ""), Files{"qwen2.5-1.5b-instruct-q4_k_m.gguf"});
}

TEST(SelectGguf, CaseInsensitive) {
  EXPECT_EQ(select_gguf("r/q", kQwen, "Q8_0"), Files{"qwen2.5-1.5b-instruct-q8_0.gguf"});
  EXPECT_EQ(select_gguf("r/q", kQwen, "Fp16"), Files{"qwen2.5-1.5b-instruct-fp16.gguf"});
}

TEST(SelectGguf, WholeTokenBeatsSubstring) {
  // "Q4_XS" is a substring of "IQ4_XS" only; "Q4_K" is a prefix of both Q4_K_M and Q4_K_S.
  EXPECT_EQ(select_gguf("r/q", kQwen, "iq4_xs"), Files{"qwen2.5-1.5b-instruct-iq4_xs.gguf"});
  Files f = {"m-Q4_K.gguf", "m-Q4_K_M.gguf"};
  EXPECT_EQ(select_gguf("r/q", f, "q4_k"), Files{"m-Q4_K.gguf"});
  EXPECT_EQ(select_gguf("r/q", {"m-Q4_K_M.gguf"}, "q4_k"), Files{"m-Q4_K_M.gguf"});  // substring still counts
}

TEST(SelectGguf, NeverPicksMmproj) {
  EXPECT_EQ(select_gguf("r/q", {"mmproj-Q8_0.gguf", "m-Q8_0.gguf"}, "Q8_0"), Files{"m-Q8_0.gguf"});
  EXPECT_THROW(select_gguf("r/q", {"mmproj-Q8_0.gguf"}, "Q8_0"), ignis::Error);
}

TEST(SelectGguf, SplitModelReturnsAllPartsInOrder) {
  Files f = {"Q8_0/m-Q8_0-00003-of-00003.gguf", "Q8_0/m-Q8_0-00001-of-00003.gguf",
             "Q8_0/m-Q8_0-00002-of-00003.gguf", "m-Q4_K_M.gguf"};
  EXPECT_EQ(select_gguf("r/q", f, "q8_0"), (Files{"Q8_0/m-Q8_0-00001-of-00003.gguf", "Q8_0/m-Q8_0-00002-of-00003.gguf",
                                                  "Q8_0/m-Q8_0-00003-of-00003.gguf"}));
}

TEST(SelectGguf, SingleFileBeatsSplit) {
  Files f = {"m-Q8_0-00001-of-00002.gguf", "m-Q8_0-00002-of-00002.gguf", "m-Q8_0.gguf"};
  EXPECT_EQ(select_gguf("r/q", f, "Q8_0"), Files{"m-Q8_0.gguf"});
}

TEST(SelectGguf, IncompleteSplitIsAnError) {
  Files f = {"m-Q8_0-00001-of-00003.gguf", "m-Q8_0-00003-of-00003.gguf"};
  EXPECT_NE(error_of([&] { select_gguf("r/q", f, "Q8_0"); }).find("missing parts"), std::string::npos);
}

TEST(SelectGguf, UnknownQuantListsChoices) {
  std::string e = error_of([&] { select_gguf("r/q", kQwen, "Q3_K_L"); });
  EXPECT_NE(e.find("'Q3_K_L'"), std::string::npos) << e;
  EXPECT_NE(e.find("available: FP16, IQ4_XS, Q4_K_M, Q4_K_S, Q8_0"), std::string::npos) << e;
}

TEST(SelectGguf, DefaultFallsBackToTheOnlyModel) {
  EXPECT_EQ(select_gguf("r/q", {"README.md", "m-Q8_0.gguf"}, ""), Files{"m-Q8_0.gguf"});
  // ... but never when the quant was asked for, or when there is a choice.
  EXPECT_THROW(select_gguf("r/q", {"m-Q8_0.gguf"}, "Q4_K_M"), ignis::Error);
  EXPECT_THROW(select_gguf("r/q", {"m-Q8_0.gguf", "m-F16.gguf"}, ""), ignis::Error);
}

TEST(SelectGguf, RepoWithoutGgufSaysSo) {
  std::string e = error_of([] { select_gguf("r/q", {"config.json", "model.safetensors"}, ""); });
  EXPECT_NE(e.find("r/q: the repo has no .gguf files (it has: config.json, model.safetensors)"), std::string::npos)
      << e;
}
