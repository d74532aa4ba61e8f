// Broken model files and bad forward() input give one-line ignis::Error messages that name the file
// and the tensor or key (and never crash).
#include <gtest/gtest.h>

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "format/gguf.h"
#include "model/model.h"
#include "model_test_util.h"

namespace ignis::model::test {
namespace {

using Edit = std::function<void(gguf::GgufWriter&)>;

// Writes stories260K with some keys/tensors left out and `edit` applied, then returns the error of
// loading it ("" when it loads).
std::string load_error(const std::string& name, const std::set<std::string>& drop_keys,
                       const std::set<std::string>& drop_tensors, const Edit& edit = nullptr) {
  auto src = gguf::GgufFile::open(stories_path());
  gguf::GgufWriter w = copy_gguf(*src, drop_keys, [&](const gguf::TensorInfo& t) {
    return drop_tensors.count(t.name) == 0;
  });
  if (edit) edit(w);
  const std::string path = temp_path(name + ".gguf");
  w.write(path);
  try {
    Model::load(path);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "message does not start with the file: " << msg;
    return msg;
  }
  return "";
}

const gguf::TensorInfo& stories_tensor(const std::string& name) {
  static auto f = gguf::GgufFile::open(stories_path());
  return *f->find_tensor(name);
}

TEST(BadFile, ValidCopyLoads) { EXPECT_EQ(load_error("valid", {}, {}), ""); }

TEST(BadFile, MissingTensor) {
  const std::string msg = load_error("missing_tensor", {}, {"blk.2.ffn_up.weight"});
  EXPECT_NE(msg.find("tensor blk.2.ffn_up.weight is missing"), std::string::npos) << msg;
}

TEST(BadFile, MissingOutputNorm) {
  const std::string msg = load_error("missing_output_norm", {}, {"output_norm.weight"});
  EXPECT_NE(msg.find("tensor output_norm.weight is missing"), std::string::npos) << msg;
}

TEST(BadFile, WrongShape) {
  const std::string name = "blk.0.attn_k.weight";  // [64, 32]: 4 KV heads of 8
  const std::string msg = load_error("wrong_shape", {}, {name}, [&](gguf::GgufWriter& w) {
    const gguf::TensorInfo& t = stories_tensor(name);
    w.add_tensor(name, t.type, {32, 64}, t.data, t.n_bytes);
  });
  EXPECT_NE(msg.find("tensor blk.0.attn_k.weight has shape [32, 64], expected [64, 32]"), std::string::npos)
      << msg;
}

TEST(BadFile, NormWithWrongType) {
  const std::string name = "blk.1.attn_norm.weight";
  const std::string msg = load_error("norm_f16", {}, {name}, [&](gguf::GgufWriter& w) {
    const gguf::TensorInfo& t = stories_tensor(name);
    std::vector<uint8_t> f16(row_bytes(DType::F16, 64));
    dtype_traits(DType::F16)->from_float(static_cast<const float*>(t.data), f16.data(), 64);
    w.add_tensor(name, DType::F16, {64}, f16.data(), f16.size());
  });
  EXPECT_NE(msg.find("tensor blk.1.attn_norm.weight has type f16, expected f32"), std::string::npos) << msg;
}

TEST(BadFile, MatrixWithIntegerType) {
  const std::string name = "blk.3.ffn_down.weight";  // [172, 64] f32 -> same bytes as i32
  const std::string msg = load_error("matrix_i32", {}, {name}, [&](gguf::GgufWriter& w) {
    const gguf::TensorInfo& t = stories_tensor(name);
    w.add_tensor(name, DType::I32, t.shape, t.data, t.n_bytes);
  });
  EXPECT_NE(msg.find("tensor blk.3.ffn_down.weight has type i32"), std::string::npos) << msg;
}

TEST(BadFile, MissingKey) {
  const std::string msg = load_error("missing_key", {"llama.embedding_length"}, {});
  EXPECT_NE(msg.find("metadata key llama.embedding_length is missing"), std::string::npos) << msg;
}

TEST(BadFile, MissingRmsEps) {
  const std::string msg = load_error("missing_eps", {"llama.attention.layer_norm_rms_epsilon"}, {});
  EXPECT_NE(msg.find("metadata key llama.attention.layer_norm_rms_epsilon is missing"), std::string::npos) << msg;
}

TEST(BadFile, KeyWithWrongType) {
  const std::string msg = load_error("key_type", {"llama.block_count"}, {},
                                     [](gguf::GgufWriter& w) { w.set_string("llama.block_count", "five"); });
  EXPECT_NE(msg.find("metadata key llama.block_count has type"), std::string::npos) << msg;
}

TEST(BadFile, MoreLayersThanTensors) {
  const std::string msg =
      load_error("six_layers", {"llama.block_count"}, {}, [](gguf::GgufWriter& w) { w.set_u32("llama.block_count", 6); });
  EXPECT_NE(msg.find("tensor blk.5.attn_norm.weight is missing"), std::string::npos) << msg;
}

TEST(BadFile, EmbeddingLengthDisagreesWithTensors) {
  const std::string msg = load_error("n_embd", {"llama.embedding_length", "llama.rope.dimension_count"}, {},
                                     [](gguf::GgufWriter& w) { w.set_u32("llama.embedding_length", 128); });
  EXPECT_NE(msg.find("tensor token_embd.weight has shape [64, 512], expected [128, 512]"), std::string::npos)
      << msg;
}

TEST(BadFile, KvHeadsDoNotDivideHeads) {
  const std::string msg = load_error("n_head_kv", {"llama.attention.head_count_kv"}, {},
                                     [](gguf::GgufWriter& w) { w.set_u32("llama.attention.head_count_kv", 3); });
  EXPECT_NE(msg.find("llama.attention.head_count = 8 is not a multiple of llama.attention.head_count_kv = 3"),
            std::string::npos)
      << msg;
}

TEST(BadFile, ZeroHeads) {
  const std::string msg = load_error("n_head0", {"llama.attention.head_count"}, {},
                                     [](gguf::GgufWriter& w) { w.set_u32("llama.attention.head_count", 0); });
  EXPECT_NE(msg.find("metadata key llama.attention.head_count = 0 is out of range"), std::string::npos) << msg;
}

TEST(BadFile, UnsupportedRopeScaling) {
  const std::string msg = load_error("yarn", {}, {}, [](gguf::GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "yarn");
  });
  EXPECT_NE(msg.find("metadata key llama.rope.scaling.type = 'yarn' is not supported"), std::string::npos) << msg;
}

TEST(BadFile, UnknownArchitecture) {
  const std::string msg = load_error("arch", {"general.architecture"}, {},
                                     [](gguf::GgufWriter& w) { w.set_string("general.architecture", "gpt2"); });
  EXPECT_NE(msg.find("architecture 'gpt2' is not supported"), std::string::npos) << msg;
}

TEST(BadFile, MissingArchitecture) {
  const std::string msg = load_error("no_arch", {"general.architecture"}, {});
  EXPECT_NE(msg.find("metadata key general.architecture is missing"), std::string::npos) << msg;
}

TEST(BadFile, NotAFileOrTruncated) {
  EXPECT_THROW(Model::load(temp_path("does_not_exist.gguf")), Error);
  const std::string bytes = read_text(stories_path());
  const std::string path = temp_path("truncated.gguf");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  try {
    Model::load(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override { model_ = Model::load(stories_path()); }
  std::unique_ptr<Model> model_;
  ThreadPool pool_{1};
};

TEST_F(BadInput, TokenOutOfRange) {
  auto cache = model_->new_cache(16);
  const std::vector<int32_t> tokens = {1, 512};
  EXPECT_THROW(model_->forward(*cache, tokens, nullptr, false, pool_), Error);
  const std::vector<int32_t> negative = {-1};
  EXPECT_THROW(model_->forward(*cache, negative, nullptr, false, pool_), Error);
  EXPECT_EQ(cache->n_past(), 0);  // nothing was run
}

TEST_F(BadInput, TokensDoNotFitInCache) {
  auto cache = model_->new_cache(4);
  const std::vector<int32_t> three = {1, 2, 3};
  model_->forward(*cache, three, nullptr, false, pool_);
  EXPECT_EQ(cache->n_past(), 3);
  try {
    model_->forward(*cache, three, nullptr, false, pool_);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit in the context of 4 tokens"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cache->n_past(), 3);
}

TEST_F(BadInput, EmptyTokens) {
  auto cache = model_->new_cache(4);
  EXPECT_THROW(model_->forward(*cache, std::span<const int32_t>(), nullptr, false, pool_), Error);
}

TEST_F(BadInput, AbsurdCacheSize) {
  EXPECT_THROW(model_->new_cache(0), Error);
  EXPECT_THROW(model_->new_cache(-5), Error);
  EXPECT_THROW(model_->new_cache(int64_t{1} << 40), Error);
}

TEST_F(BadInput, CacheOfAnotherModel) {
  auto other = Model::load(shared_path("models/llama-2-tiny-random.gguf"));
  auto cache = other->new_cache(8);
  const std::vector<int32_t> tokens = {1};
  EXPECT_THROW(model_->forward(*cache, tokens, nullptr, false, pool_), Error);
}

}  // namespace
}  // namespace ignis::model::test
