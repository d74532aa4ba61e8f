// ignis quantize vs llama-quantize, through goldens committed in tests/data/quantize by
// scripts/ref/quantize_check.sh goldens:
//   - plan-*.tsv: the type llama-quantize --dry-run chose for every tensor of a Qwen2.5-0.5B-shaped F16
//     model (all 12 type names) and of the committed tiny-llama (untied output); plan_quantization must
//     choose the same;
//   - hash-*.tsv: sha256 of every tensor in llama-quantize's output for committed inputs (F32, F16, BF16
//     and a Q6_K file requantized); quantize_model's output must have the same tensors, in the same
//     order, with the same types and the same bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "format/gguf.h"
#include "format/quantize_recipe.h"
#include "hub/sha256.h"

namespace ignis::gguf {
namespace {

namespace fs = std::filesystem;
const std::string kData = IGNIS_TEST_DATA;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

std::vector<fs::path> goldens(const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kData + "/quantize"))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// "plan-qwen2.5-0.5b-Q4_K_M.tsv" -> "Q4_K_M"
std::string type_of(const fs::path& p) {
  std::string stem = p.stem().string();
  size_t q = stem.rfind("-Q");
  return stem.substr(q + 1);
}

TEST(QuantizeTypes, NamesAndAliases) {
  EXPECT_EQ(parse_quant_type("Q4_K"), FileType::Q4_K_M);
  EXPECT_EQ(parse_quant_type("q5_k"), FileType::Q5_K_M);
  EXPECT_EQ(parse_quant_type("Q4_K_M"), FileType::Q4_K_M);
  EXPECT_EQ(parse_quant_type("q8_0"), FileType::Q8_0);
  EXPECT_EQ(static_cast<uint32_t>(*parse_quant_type("Q6_K")), 18u);
  EXPECT_EQ(static_cast<uint32_t>(*parse_quant_type("Q5_1")), 9u);
  EXPECT_FALSE(parse_quant_type("Q3_K_M").has_value());
  EXPECT_FALSE(parse_quant_type("F16").has_value());
  EXPECT_FALSE(parse_quant_type("").has_value());
  EXPECT_EQ(file_type_default(FileType::Q4_K_M), DType::Q4_K);
  EXPECT_STREQ(file_type_name(FileType::Q4_K_M), "Q4_K_M");
  EXPECT_NE(quant_type_names().find("Q5_K_M"), std::string::npos);
}

TEST(QuantizePlan, UnsupportedArchitecture) {
  ModelDesc md{"gemma", 2, 4, 4};
  EXPECT_THROW(plan_quantization(md, {{"output.weight", DType::F16, {256, 512}}}, FileType::Q4_0), Error);
}

TEST(QuantizePlan, MatchesLlamaQuantize) {
  auto files = goldens("plan-");
  ASSERT_GE(files.size(), 16u) << "goldens missing in " << kData << "/quantize";
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::ifstream f(path);
    std::string line;
    ASSERT_TRUE(std::getline(f, line));
    ModelDesc md;
    for (const auto& kv : split(line.substr(2), ' ')) {
      auto eq = kv.find('=');
      std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "arch") md.arch = v;
      if (k == "n_layer") md.n_layer = std::stoll(v);
      if (k == "n_head") md.n_head = std::stoll(v);
      if (k == "n_head_kv") md.n_head_kv = std::stoll(v);
    }
    std::vector<TensorDesc> descs;
    std::vector<std::string> want;
    while (std::getline(f, line)) {
      auto c = split(line, '\t');
      ASSERT_EQ(c.size(), 4u) << line;
      TensorDesc d{c[0], *dtype_from_name(c[1]), {}};
      for (const auto& n : split(c[2], ',')) d.shape.push_back(std::stoll(n));
      descs.push_back(d);
      want.push_back(c[3]);
    }
    auto ft = parse_quant_type(type_of(path));
    ASSERT_TRUE(ft.has_value());
    std::vector<DType> got = plan_quantization(md, descs, *ft);
    int n_quantized = 0;
    for (size_t i = 0; i < descs.size(); ++i) {
      EXPECT_EQ(dtype_name(got[i]), want[i]) << descs[i].name;
      n_quantized += dtype_traits(got[i])->is_quantized;
    }
    EXPECT_GT(n_quantized, 0);
    // The golden lists tensors in llama.cpp's weight order (the dry run prints them in that order).
    auto order = llama_weight_order(descs);
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
  }
}

// The plan's use_more_bits layers for a 24-layer Q4_K_M model are llama.cpp's: 0-2, 21-23 and every
// third layer in between (3 + 2, 3 + 5, ...).
TEST(QuantizePlan, UseMoreBitsLayersOnK256Rows) {
  ModelDesc md{"llama", 24, 8, 8};
  std::vector<TensorDesc> descs;
  for (int l = 0; l < 24; ++l) descs.push_back({"blk." + std::to_string(l) + ".ffn_down.weight", DType::F16, {512, 256}});
  auto got = plan_quantization(md, descs, FileType::Q4_K_M);
  for (int l = 0; l < 24; ++l) {
    bool more = l < 3 || l >= 21 || (l - 3) % 3 == 2;
    EXPECT_EQ(got[l], more ? DType::Q6_K : DType::Q4_K) << l;
  }
}

class QuantizeBytes : public ::testing::Test {
 protected:
  fs::path tmp_ = fs::temp_directory_path() / ("ignis-quantize-test-" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(tmp_); }
  void TearDown() override { fs::remove_all(tmp_); }
};

TEST_F(QuantizeBytes, MatchesLlamaQuantizeOutput) {
  auto files = goldens("hash-");
  ASSERT_GE(files.size(), 10u);
  ThreadPool pool(2);
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::string stem = path.stem().string();                     // hash-tiny-qwen2-f32-Q4_0
    std::string input = stem.substr(5, stem.rfind("-Q") - 5);    // tiny-qwen2-f32
    auto ft = parse_quant_type(type_of(path));
    ASSERT_TRUE(ft.has_value());
    const std::string out = (tmp_ / (stem + ".gguf")).string();
    quantize_model(kData + "/models/" + input + ".gguf", out, *ft, pool);
    auto g = GgufFile::open(out);
    EXPECT_EQ(g->get_int("general.file_type"), static_cast<int64_t>(*ft));
    EXPECT_EQ(g->get_int("general.quantization_version"), 2);
    std::ifstream f(path);
    std::string line;
    size_t i = 0;
    while (std::getline(f, line)) {
      auto c = split(line, '\t');
      ASSERT_EQ(c.size(), 3u);
      ASSERT_LT(i, g->tensors().size());
      const TensorInfo& t = g->tensors()[i++];
      EXPECT_EQ(t.name, c[0]);
      EXPECT_EQ(dtype_name(t.type), c[1]) << t.name;
      hub::Sha256 h;
      h.update(t.data, t.n_bytes);
      EXPECT_EQ(h.hex_digest(), c[2]) << t.name << " (" << dtype_name(t.type) << ") bytes differ from llama-quantize's";
    }
    EXPECT_EQ(i, g->tensors().size());
    // Metadata besides the two keys quantize sets is copied.
    auto in = GgufFile::open(kData + "/models/" + input + ".gguf");
    for (const auto& [k, v] : in->metadata()) {
      if (k == "general.file_type" || k == "general.quantization_version") continue;
      const Value* o = g->find(k);
      ASSERT_NE(o, nullptr) << k;
      EXPECT_EQ(o->type, v.type) << k;
    }
  }
}

TEST_F(QuantizeBytes, Errors) {
  ThreadPool pool(1);
  const std::string in = kData + "/models/tiny-qwen2-f16.gguf";
  EXPECT_THROW(quantize_model(in, in, FileType::Q8_0, pool), Error);
  try {
    quantize_model((tmp_ / "missing.gguf").string(), (tmp_ / "o.gguf").string(), FileType::Q8_0, pool);
    FAIL() << "no error for a missing input";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.gguf"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp_ / "o.gguf"));
}

}  // namespace
}  // namespace ignis::gguf
