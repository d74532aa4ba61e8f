// ignis-mkmodel (tools/mkmodel.cpp): the files it writes have the metadata and tensor shapes llama.cpp
// expects, are reproducible bit for bit (the committed f32 test models are exactly its output), and bad
// arguments give a one-line error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../temp_dir.h"
#include "core/dtype.h"
#include "format/gguf.h"
#include "hub/sha256.h"

namespace ignis::test {
namespace {

namespace fs = std::filesystem;

std::string mkmodel() { return std::string(IGNIS_BINARY_DIR) + "/bin/ignis-mkmodel"; }
// A path in this process's own folder (../temp_dir.h).
std::string tmp(const std::string& name) {
  static const ignis::test::ProcessTempDir dir("mkmodel_");
  return (dir.path / name).string();
}

// Runs ignis-mkmodel with `args`; returns the exit status, stderr in *err.
int run(const std::string& args, std::string* err = nullptr) {
  const std::string log = tmp("stderr.txt");
  const std::string cmd = mkmodel() + " " + args + " 2>" + log + " >/dev/null";
  const int rc = std::system(cmd.c_str());
  if (err) {
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    *err = ss.str();
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class MkModel : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs::exists(mkmodel())) << mkmodel() << " is not built"; }
};

TEST_F(MkModel, Qwen2MetadataAndShapes) {
  const std::string out = tmp("qwen2.gguf");
  ASSERT_EQ(run("--preset tiny-qwen2 -o " + out), 0);
  auto f = gguf::GgufFile::open(out);
  EXPECT_EQ(f->get_string("general.architecture"), "qwen2");
  EXPECT_EQ(f->get_int("qwen2.embedding_length"), 128);
  EXPECT_EQ(f->get_int("qwen2.block_count"), 2);
  EXPECT_EQ(f->get_int("qwen2.attention.head_count"), 4);
  EXPECT_EQ(f->get_int("qwen2.attention.head_count_kv"), 2);
  EXPECT_EQ(f->get_int("qwen2.feed_forward_length"), 256);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("qwen2.rope.freq_base")), 1e6f);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "gpt2");
  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[' '], "\xC4\xA0");  // GPT-2's byte symbol for a space: U+0120
  EXPECT_EQ(tokens['a'], "a");
  EXPECT_EQ(tokens[511], "<|im_end|>");
  EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id"), 511);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied
  f->tensor("token_embd.weight", {128, 512});
  f->tensor("blk.1.attn_q.weight", {128, 128});
  f->tensor("blk.1.attn_k.weight", {128, 64});
  f->tensor("blk.1.attn_k.bias", {64});
  f->tensor("blk.1.attn_output.weight", {128, 128});
  f->tensor("blk.1.ffn_down.weight", {256, 128});
  EXPECT_EQ(f->tensor("blk.0.ffn_up.weight").type, DType::F32);
}

TEST_F(MkModel, Qwen3HeadDimAndNorms) {
  const std::string out = tmp("qwen3.gguf");
  ASSERT_EQ(run("--preset tiny-qwen3 --type f16 -o " + out), 0);
  auto f = gguf::GgufFile::open(out);
  EXPECT_EQ(f->get_int("qwen3.attention.key_length"), 64);
  f->tensor("blk.0.attn_q.weight", {128, 256});  // 4 heads x 64 != n_embd
  f->tensor("blk.0.attn_output.weight", {256, 128});
  f->tensor("blk.0.attn_q_norm.weight", {64});
  EXPECT_EQ(f->tensor("blk.0.attn_q.weight").type, DType::F16);
  EXPECT_EQ(f->tensor("blk.0.attn_q_norm.weight").type, DType::F32);  // norms stay f32
}

TEST_F(MkModel, LlamaUntiedHasOutput) {
  const std::string out = tmp("llama.gguf");
  ASSERT_EQ(run("--preset tiny-llama -o " + out), 0);
  auto f = gguf::GgufFile::open(out);
  f->tensor("output.weight", {128, 512});
  EXPECT_TRUE(f->get_bool("tokenizer.ggml.add_bos_token"));
}

// The committed f32 test models are exactly what the tool writes with the recipe their golden records.
TEST_F(MkModel, ReproducesCommittedModels) {
  for (const std::string name : {"tiny-llama-f32", "tiny-qwen2-f32", "tiny-qwen3-f32"}) {
    std::ifstream in(std::string(IGNIS_TEST_DATA) + "/goldens/" + name + ".json");
    ASSERT_TRUE(in) << name;
    nlohmann::json g;
    in >> g;
    std::string recipe = g["made_by"][0].get<std::string>();
    ASSERT_EQ(recipe.rfind("ignis-mkmodel ", 0), 0u) << recipe;
    const std::string out = tmp(name + ".gguf");
    ASSERT_EQ(run(recipe.substr(std::string("ignis-mkmodel ").size()) + " -o " + out), 0) << recipe;
    EXPECT_EQ(hub::sha256_file(out), g["model_sha256"].get<std::string>()) << name << ": " << recipe;
  }
}

TEST_F(MkModel, SeedChangesWeights) {
  ASSERT_EQ(run("--preset tiny-llama --seed 1 -o " + tmp("s1.gguf")), 0);
  ASSERT_EQ(run("--preset tiny-llama --seed 2 -o " + tmp("s2.gguf")), 0);
  auto a = gguf::GgufFile::open(tmp("s1.gguf")), b = gguf::GgufFile::open(tmp("s2.gguf"));
  const auto& ta = a->tensor("blk.0.attn_q.weight");
  const auto& tb = b->tensor("blk.0.attn_q.weight");
  EXPECT_NE(std::memcmp(ta.data, tb.data, ta.n_bytes), 0);
}

// --type q8_0 stores matrices quantized; dequantized they are close to the f32 file's weights.
TEST_F(MkModel, QuantizedOutputDequantizesToTheSameWeights) {
  ASSERT_EQ(run("--preset tiny-qwen2 -o " + tmp("f32.gguf")), 0);
  ASSERT_EQ(run("--preset tiny-qwen2 --type q8_0 -o " + tmp("q8.gguf")), 0);
  auto a = gguf::GgufFile::open(tmp("f32.gguf")), b = gguf::GgufFile::open(tmp("q8.gguf"));
  const auto& tf = a->tensor("blk.0.ffn_gate.weight");
  const auto& tq = b->tensor("blk.0.ffn_gate.weight");
  ASSERT_EQ(tq.type, DType::Q8_0);
  const int64_t n = tf.n_elements();
  std::vector<float> deq(n);
  dtype_traits(DType::Q8_0)->to_float(tq.data, deq.data(), n);
  const float* ref = static_cast<const float*>(tf.data);
  double max_err = 0, max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    max_err = std::max(max_err, std::fabs(double(deq[i]) - ref[i]));
    max_abs = std::max(max_abs, std::fabs(double(ref[i])));
  }
  EXPECT_GT(max_abs, 0.1);
  EXPECT_LT(max_err, max_abs / 127.0 * 0.6);  // half a q8_0 step of the largest block scale, plus rounding
  EXPECT_EQ(b->tensor("blk.0.attn_norm.weight").type, DType::F32);
}

TEST_F(MkModel, BadArgumentsGiveOneLineErrors) {
  std::string err;
  EXPECT_EQ(run("--preset nope -o " + tmp("x.gguf"), &err), 1);
  EXPECT_NE(err.find("--preset nope: unknown preset"), std::string::npos) << err;
  EXPECT_EQ(run("--preset tiny-qwen2 --type q9_9 -o " + tmp("x.gguf"), &err), 1);
  EXPECT_NE(err.find("--type q9_9: unknown type"), std::string::npos) << err;
  EXPECT_EQ(run("--arch qwen2 --n-embd 64 --n-layer 1 --n-head 5 --n-head-kv 2 --n-ff 64 --n-vocab 300 -o " +
                    tmp("x.gguf"), &err), 1);
  EXPECT_NE(err.find("--n-head 5 is not a multiple of --n-head-kv 2"), std::string::npos) << err;
  EXPECT_EQ(run("--arch gpt9 --n-embd 64 --n-layer 1 --n-head 4 --n-ff 64 --n-vocab 300 -o " + tmp("x.gguf"), &err), 1);
  EXPECT_NE(err.find("--arch gpt9: unknown architecture"), std::string::npos) << err;
  EXPECT_EQ(run("--preset qwen2.5-0.5b --n-vocab 100000000 -o " + tmp("x.gguf"), &err), 1);
  EXPECT_NE(err.find("--n-vocab 100000000: must be in"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
}  // namespace ignis::test
