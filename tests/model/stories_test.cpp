// End-to-end: karpathy's trained stories260K reproduces its published greedy output byte for byte.
#include <gtest/gtest.h>

#include "format/gguf.h"
#include "model/model.h"
#include "model_test_util.h"

namespace ignis::model::test {
namespace {

// The text karpathy's run.c printed with -t 0.0 (stories260K.md): from the line after the command
// to the closing fence, without run.c's final newline.
std::string published_greedy_text() {
  const std::string md = read_text(shared_path("models/stories260K.md"));
  const std::string cmd = "-t 0.0\n";
  const size_t begin = md.find(cmd);
  EXPECT_NE(begin, std::string::npos);
  const size_t start = begin + cmd.size();
  const size_t end = md.find("\n```", start);
  EXPECT_NE(end, std::string::npos);
  return md.substr(start, end - start);
}

class Stories : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(stories_path()).release();
    vocab_ = new std::vector<std::string>(model_->file().get_string_array("tokenizer.ggml.tokens"));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete vocab_;
  }
  static Model* model_;
  static std::vector<std::string>* vocab_;
};
Model* Stories::model_ = nullptr;
std::vector<std::string>* Stories::vocab_ = nullptr;

TEST_F(Stories, HyperparametersFromMetadata) {
  const HParams& hp = model_->hparams();
  EXPECT_EQ(hp.arch, "llama");
  EXPECT_EQ(hp.n_vocab, 512);
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_layer, 5);
  EXPECT_EQ(hp.n_head, 8);
  EXPECT_EQ(hp.n_head_kv, 4);
  EXPECT_EQ(hp.head_dim, 8);
  EXPECT_EQ(hp.n_ff, 172);
  EXPECT_EQ(hp.n_rot, 8);
  EXPECT_FALSE(hp.rope_neox);
  EXPECT_FALSE(hp.tied_output);  // the file has its own output.weight
  EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
  EXPECT_EQ(model_->n_params(), 64u * 512 * 2 + 64 + 5 * (64 * 2 + 64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 172));
}

// 256 greedy steps from BOS, as run.c -t 0.0 (which stops early only on BOS).
TEST_F(Stories, GreedyFromBosMatchesPublishedOutput) {
  ThreadPool pool(1);
  const std::vector<int32_t> out = greedy(*model_, {1}, 256, pool, /*stop=*/1);
  EXPECT_EQ(out.size(), 256u);
  EXPECT_EQ(decode_spm(*vocab_, out), published_greedy_text());
}

// The prompt "Once upon a time" = [1, 403, 407, 261, 378] run as one batch continues with the same
// text: the batched prompt path agrees with token-by-token decoding from BOS.
TEST_F(Stories, GreedyFromPromptBatchMatchesPublishedOutput) {
  ThreadPool pool(1);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const std::vector<int32_t> out = greedy(*model_, prompt, 256, pool, /*stop=*/1);
  std::vector<int32_t> all(prompt.begin() + 1, prompt.end());  // drop BOS
  all.insert(all.end(), out.begin(), out.end());
  ASSERT_EQ(all.size(), 256u);  // the same 256 tokens after BOS
  EXPECT_EQ(decode_spm(*vocab_, all), published_greedy_text());
}

}  // namespace
}  // namespace ignis::model::test
