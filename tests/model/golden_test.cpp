// Architecture correctness against references: the f32 random-weight models of tests/data/models
// (tiny-llama, tiny-qwen2, tiny-qwen3: one per architecture path) run through Model::forward and are
// compared with the committed goldens of llama.cpp and of an independent float64 PyTorch
// implementation (format: tests/data/goldens/README.md). f32 weights leave only rounding differences,
// so the tolerances here are tight; quantized files are covered by the tools test of the goldens.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "model_test_util.h"

namespace ignis::model::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> f32_goldens() {
  std::vector<std::string> names;
  const fs::path dir = fs::path(IGNIS_TEST_DATA) / "goldens";
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    const json g = json::parse(in);
    if (g.value("type", "") == "f32") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class Golden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::ifstream in(fs::path(IGNIS_TEST_DATA) / "goldens" / (GetParam() + ".json"));
    golden_ = json::parse(in);
    model_ = Model::load((fs::path(IGNIS_TEST_DATA) / "models" / golden_["model"].get<std::string>()).string());
    ASSERT_EQ(model_->hparams().n_vocab, golden_["n_vocab"].get<int64_t>());
  }

  // Teacher-forced logits of ignis vs one reference: max |diff| per row within `rel` of the row's
  // range (plus the goldens' 4-decimal rounding).
  void check_tf(const std::string& ref, float rel) {
    if (!golden_.contains(ref)) GTEST_SKIP() << ref << " has no tf_logits for " << GetParam();
    const std::vector<int32_t> tokens = golden_["tf_tokens"].get<std::vector<int32_t>>();
    const auto& want = golden_[ref]["tf_logits"];
    ASSERT_EQ(want.size(), tokens.size());
    const int64_t n_vocab = model_->hparams().n_vocab;
    ThreadPool pool(2);
    auto cache = model_->new_cache(static_cast<int64_t>(tokens.size()), DType::F32);  // the references keep K/V in f32
    std::vector<float> got(tokens.size() * n_vocab);
    model_->forward(*cache, tokens, got.data(), true, pool);
    float worst = 0;
    for (size_t p = 0; p < tokens.size(); ++p) {
      const std::vector<float> row = want[p].get<std::vector<float>>();
      const auto [lo, hi] = std::minmax_element(row.begin(), row.end());
      float diff = 0;
      for (int64_t i = 0; i < n_vocab; ++i) diff = std::max(diff, std::fabs(got[p * n_vocab + i] - row[i]));
      worst = std::max(worst, diff / (*hi - *lo));
      EXPECT_LE(diff, rel * (*hi - *lo) + 1e-4f) << ref << " position " << p;
    }
    RecordProperty(ref + "_max_rel_diff", std::to_string(worst));
    std::printf("[ %s vs %s ] teacher-forced max |diff| / logit range = %.3g\n", GetParam().c_str(), ref.c_str(),
                worst);
  }

  // Greedy continuation of the prompt (fed as one batch): exactly the reference's tokens.
  void check_greedy(const std::string& ref) {
    if (!golden_.contains(ref)) GTEST_SKIP() << ref << " has no greedy run for " << GetParam();
    const std::vector<int32_t> prompt = golden_["prompt"].get<std::vector<int32_t>>();
    const std::vector<int32_t> want = golden_[ref]["greedy"].get<std::vector<int32_t>>();
    const int64_t n_predict = golden_["n_predict"].get<int64_t>();
    ThreadPool pool(1);
    const std::vector<int32_t> got = greedy(*model_, prompt, static_cast<int64_t>(prompt.size()) + n_predict - 1, pool);
    EXPECT_EQ(got, want) << ref;
  }

  json golden_;
  std::unique_ptr<Model> model_;
};

TEST_P(Golden, TeacherForcedLogitsMatchTorchFloat64) { check_tf("torch", 2e-5f); }
TEST_P(Golden, TeacherForcedLogitsMatchLlamaCpp) { check_tf("llama_cpp", 1e-4f); }
TEST_P(Golden, GreedyMatchesTorch) { check_greedy("torch"); }
TEST_P(Golden, GreedyMatchesLlamaCpp) { check_greedy("llama_cpp"); }

INSTANTIATE_TEST_SUITE_P(F32, Golden, ::testing::ValuesIn(f32_goldens()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// The committed goldens cover every architecture file (so the suite above cannot pass by being empty).
TEST(GoldenSet, CoversEveryArchitecture) {
  const std::vector<std::string> names = f32_goldens();
  for (const char* want : {"tiny-llama-f32", "tiny-qwen2-f32", "tiny-qwen3-f32"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

}  // namespace
}  // namespace ignis::model::test
