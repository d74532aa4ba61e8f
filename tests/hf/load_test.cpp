// Loading Hugging Face folders directly (format/hf_load.h, Model::load on a folder, Engine::load):
// the folder's logits match the committed torch goldens, equal bit for bit those of the GGUF that
// `ignis convert` writes in the checkpoint's dtype, unchanged tensors are used in place from the
// safetensors mapping, and --quant gives the tensors of convert --type f32 + `ignis quantize`.
// Needs the Qwen2 tokenizer files in shared/ and the ignis-mkhf tool.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "format/gguf.h"
#include "format/hf_convert.h"
#include "format/hf_load.h"
#include "format/quantize_recipe.h"
#include "hf_model_util.h"
#include "hf_test_util.h"
#include "ignis/engine.h"
#include "model/model.h"

namespace fs = std::filesystem;
using ignis::test::HfCase;

namespace {

bool have_tokenizer() { return fs::exists(ignis::test::kQwen2Tok + "/vocab.json"); }

// One folder per case for the whole run (the tests below only read it).
const std::string& folder(const HfCase& c) {
  static std::map<std::string, std::string> made;
  auto it = made.find(c.name);
  if (it == made.end())
    it = made.emplace(c.name, ignis::test::make_hf_folder(std::string("load_") + c.name, c.flags)).first;
  return it->second;
}

const HfCase& find_case(const std::string& name) {
  for (const HfCase& c : ignis::test::kHfCases)
    if (c.name == name) return c;
  throw std::runtime_error("no case " + name);
}

// `dir`'s model converted to a GGUF file by `ignis convert --type type`.
std::string converted(const std::string& dir, const std::string& type) {
  static std::map<std::string, std::string> made;  // this run's files, not a previous run's
  const std::string out = dir + "." + type + ".gguf";
  if (!made.count(out)) {
    ignis::hf::convert_hf_to_gguf(dir, out, {type, ""});
    made[out] = out;
  }
  return out;
}

bool same_value(const ignis::gguf::Value& a, const ignis::gguf::Value& b) {
  if (a.type != b.type || a.elem_type != b.elem_type || a.u != b.u || a.i != b.i || a.f != b.f || a.s != b.s ||
      a.arr.size() != b.arr.size())
    return false;
  for (size_t k = 0; k < a.arr.size(); ++k)
    if (!same_value(a.arr[k], b.arr[k])) return false;
  return true;
}

// Same tensors (by name: names, types, shapes and bytes); with `same_order`, in the same order too.
void expect_same_tensors(const ignis::gguf::GgufFile& a, const ignis::gguf::GgufFile& b, bool same_order) {
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t k = 0; k < a.tensors().size(); ++k) {
    const auto& ta = a.tensors()[k];
    if (same_order) {
      EXPECT_EQ(ta.name, b.tensors()[k].name);
    }
    const auto* tb = b.find_tensor(ta.name);
    ASSERT_NE(tb, nullptr) << ta.name;
    EXPECT_EQ(ta.type, tb->type) << ta.name << ": " << ignis::dtype_name(ta.type) << " vs "
                                 << ignis::dtype_name(tb->type);
    EXPECT_EQ(ta.shape, tb->shape) << ta.name;
    ASSERT_EQ(ta.n_bytes, tb->n_bytes) << ta.name;
    EXPECT_EQ(std::memcmp(ta.data, tb->data, ta.n_bytes), 0) << ta.name << " has different bytes";
  }
}

void expect_same_logits(const ignis::model::Model& a, const ignis::model::Model& b) {
  std::vector<int32_t> toks = ignis::test::hf_golden("qwen2")["tokens"].get<std::vector<int32_t>>();
  for (int32_t& t : toks) t %= static_cast<int32_t>(a.hparams().n_vocab);  // the golden's ids fit Qwen2's vocabulary
  const std::vector<float> la = ignis::test::all_logits(a, toks);
  const std::vector<float> lb = ignis::test::all_logits(b, toks);
  ASSERT_EQ(la.size(), lb.size());
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0) << "logits differ";
}

// The file backing the mapping that holds `p` in this process ("" for anonymous memory such as the heap).
std::string mapping_of(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    const size_t dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (addr >= lo && addr < hi) return path;
  }
  return "";
}

class LoadArch : public ::testing::TestWithParam<HfCase> {};

}  // namespace

TEST_P(LoadArch, LogitsMatchTorchReference) {
  if (!have_tokenizer()) GTEST_SKIP() << "needs " << ignis::test::kQwen2Tok;
  const HfCase& c = GetParam();
  auto m = ignis::model::Model::load(folder(c));
  EXPECT_EQ(m->hparams().arch, c.arch);
  EXPECT_EQ(m->file().path(), folder(c));
  ignis::test::Diff d = ignis::test::compare_golden(*m, ignis::test::hf_golden(c.name));
  std::printf("[ %s ] direct %s max relative difference vs torch: %.3g\n", c.name, c.dtype, d.rel);
  // F32 checkpoints compute in f32 throughout. F16/BF16 weights are used as they are, and their dot
  // products take activations rounded to the same 16-bit type (as llama.cpp does), so those rows are
  // as close as convert --type f16/bf16 is (bit-identical: EqualsConvertedGgufOfTheSameType).
  EXPECT_LT(d.rel, std::string(c.dtype) == "f32" ? 1e-4 : 1e-2);
  EXPECT_TRUE(d.argmax_ok);
}

TEST_P(LoadArch, EqualsConvertedGgufOfTheSameType) {
  if (!have_tokenizer()) GTEST_SKIP() << "needs " << ignis::test::kQwen2Tok;
  const HfCase& c = GetParam();
  auto direct = ignis::model::Model::load(folder(c));
  auto conv = ignis::model::Model::load(converted(folder(c), c.dtype));
  const auto& a = direct->file();
  const auto& b = conv->file();
  ASSERT_EQ(a.metadata().size(), b.metadata().size());
  for (size_t k = 0; k < a.metadata().size(); ++k) {
    EXPECT_EQ(a.metadata()[k].first, b.metadata()[k].first);
    EXPECT_TRUE(same_value(a.metadata()[k].second, b.metadata()[k].second)) << a.metadata()[k].first;
  }
  expect_same_tensors(a, b, true);
  expect_same_logits(*direct, *conv);
}

// NOTE: "in place" is checked against the process's own memory map: the data of a tensor that needs
// no change lies in a mapping of one of the folder's .safetensors files; the others (permuted Q/K
// rows of llama/mistral, f32 copies of 16-bit norms and biases, rope_freqs) lie outside any file.
TEST_P(LoadArch, UnchangedTensorsStayInTheMapping) {
  if (!have_tokenizer()) GTEST_SKIP() << "needs " << ignis::test::kQwen2Tok;
  const HfCase& c = GetParam();
  auto m = ignis::model::Model::load(folder(c));
  const bool permuted = std::string(c.arch) == "llama";
  const bool f32 = std::string(c.dtype) == "f32";
  uint64_t mapped = 0, total = 0;
  for (const auto& t : m->file().tensors()) {
    const bool changed = t.name == "rope_freqs.weight" || (t.shape.size() == 1 && !f32) ||
                         (permuted && (t.name.find("attn_q.") != std::string::npos ||
                                       t.name.find("attn_k.") != std::string::npos));
    const std::string where = mapping_of(t.data);
    total += t.n_bytes;
    if (changed) {
      EXPECT_EQ(where.find(".safetensors"), std::string::npos) << t.name << " is in " << where;
    } else {
      EXPECT_EQ(fs::path(where).parent_path(), fs::path(folder(c))) << t.name << " is in '" << where << "'";
      EXPECT_EQ(fs::path(where).extension(), ".safetensors") << t.name;
      mapped += t.n_bytes;
    }
  }
  std::printf("[ %s ] %.1f%% of %.1f MiB of weights used in place\n", c.name, 100.0 * mapped / total,
              total / 1048576.0);
  EXPECT_GT(mapped, total / 2);  // the embedding alone is most of these tiny models
}

INSTANTIATE_TEST_SUITE_P(Hf, LoadArch, ::testing::ValuesIn(ignis::test::kHfCases),
                         [](const auto& info) { return std::string(info.param.name); });

namespace {

// `ignis convert --type f32` then `ignis quantize TYPE` (the code of both commands) on `dir`.
std::string convert_then_quantize(const std::string& dir, const std::string& type) {
  const std::string out = dir + "." + type + ".gguf";
  ignis::ThreadPool pool(2);
  ignis::gguf::quantize_model(converted(dir, "f32"), out, *ignis::gguf::parse_quant_type(type), pool);
  return out;
}

}  // namespace

TEST(HfLoad, QuantQ8_0EqualsConvertThenQuantize) {
  if (!have_tokenizer()) GTEST_SKIP() << "needs " << ignis::test::kQwen2Tok;
  const std::string& dir = folder(find_case("mistral"));  // BF16, permuted Q/K
  auto direct = ignis::model::Model::load(dir, {.quant = "q8_0", .n_threads = 2});
  auto ref = ignis::model::Model::load(convert_then_quantize(dir, "Q8_0"));
  EXPECT_EQ(direct->file().get_int("general.file_type"), 7);
  EXPECT_EQ(direct->file().tensor("blk.0.attn_q.weight").type, ignis::DType::Q8_0);
  EXPECT_EQ(direct->file().tensor("blk.0.attn_norm.weight").type, ignis::DType::F32);
  expect_same_tensors(direct->file(), ref->file(), false);
  expect_same_logits(*direct, *ref);
}

TEST(HfLoad, QuantQ4_K_MFollowsTheRecipeOfQuantize) {
  if (!have_tokenizer()) GTEST_SKIP() << "needs " << ignis::test::kQwen2Tok;
  const std::string& dir = folder(find_case("qwen2"));  // F16, biases, tied embedding
  auto direct = ignis::hf::load_hf_folder(dir, {"Q4_K_M", 2});
  auto ref = ignis::gguf::GgufFile::open(convert_then_quantize(dir, "Q4_K_M"));
  EXPECT_EQ(direct->get_int("general.file_type"), 15);
  // Rows of 64 are no multiple of the K-quants' 256: the recipe's fallbacks (Q4_K -> Q5_0, Q6_K -> Q8_0).
  EXPECT_EQ(direct->tensor("blk.0.attn_q.weight").type, ignis::DType::Q5_0);
  EXPECT_EQ(direct->tensor("token_embd.weight").type, ignis::DType::Q8_0);
  expect_same_tensors(*direct, *ref, false);
}

namespace {

// A Llama folder whose rows (256) fit the K-quants' 256-element blocks, unlike ignis-mkhf's tiny preset:
// n_embd 256, n_ff 256, 2 layers, the Llama 2 SentencePiece vocabulary (32000 rows), tied embeddings,
// F16 weights from a fixed seed. "" when shared/ lacks the tokenizer.
std::string k_quant_folder() {
  static std::string dir;
  const std::string spm = std::string(IGNIS_SHARED_DIR) + "/hf-tokenizers/llama2/tokenizer.model";
  if (!dir.empty() || !fs::exists(spm)) return dir;
  const std::string d = ignis::test::temp_dir("load_kquant");
  fs::copy_file(spm, d + "/tokenizer.model");
  ignis::test::write_text(d + "/config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "vocab_size": 32000, "hidden_size": 256, "intermediate_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "tie_word_embeddings": true, "hidden_act": "silu", "torch_dtype": "float16",
    "bos_token_id": 1, "eos_token_id": 2})");
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {{"model.embed_tokens.weight", {32000, 256}},
                                                                      {"model.norm.weight", {256}}};
  for (int il = 0; il < 2; ++il) {
    const std::string p = "model.layers." + std::to_string(il) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"}) shapes.push_back({p + n + ".weight", {256}});
    for (const char* n : {"self_attn.q_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
      shapes.push_back({p + n + ".weight", {256, 256}});
    for (const char* n : {"self_attn.k_proj", "self_attn.v_proj"}) shapes.push_back({p + n + ".weight", {128, 256}});
  }
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  nlohmann::json header = nlohmann::json::object();
  std::vector<uint8_t> data;
  for (const auto& [name, shape] : shapes) {
    const int64_t n = shape.size() == 1 ? shape[0] : shape[0] * shape[1];
    const size_t begin = data.size();
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = ignis::f32_to_f16(shape.size() == 1 ? 1.0f + normal(rng) : normal(rng));
      data.push_back(static_cast<uint8_t>(h));
      data.push_back(static_cast<uint8_t>(h >> 8));
    }
    header[name] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {begin, data.size()}}};
  }
  ignis::test::write_file(d + "/model.safetensors", ignis::test::st_bytes(header.dump(), data));
  dir = d;
  return dir;
}

}  // namespace

// The K-quants themselves (and Q4_0), on rows they fit: every tensor's type and bytes equal those of
// convert --type f32 + quantize, and the Q4_K_M mix (use_more_bits layers, tied output) is quantize's.
TEST(HfLoad, KQuantsEqualConvertThenQuantize) {
  const std::string dir = k_quant_folder();
  if (dir.empty()) GTEST_SKIP() << "needs shared/hf-tokenizers/llama2/tokenizer.model";
  for (const char* type : {"Q4_0", "Q6_K", "Q4_K", "Q4_K_M"}) {
    SCOPED_TRACE(type);
    auto direct = ignis::model::Model::load(dir, {.quant = type, .n_threads = 2});
    auto ref = ignis::model::Model::load(convert_then_quantize(dir, type));
    expect_same_tensors(direct->file(), ref->file(), false);
    if (std::string(type) == "Q4_K_M") {
      const auto& f = direct->file();
      EXPECT_EQ(f.tensor("blk.0.attn_q.weight").type, ignis::DType::Q4_K);
      EXPECT_EQ(f.tensor("blk.0.attn_v.weight").type, ignis::DType::Q4_K);
      EXPECT_EQ(f.tensor("blk.1.attn_v.weight").type, ignis::DType::Q6_K);
      EXPECT_EQ(f.tensor("blk.1.ffn_down.weight").type, ignis::DType::Q6_K);
      EXPECT_EQ(f.tensor("token_embd.weight").type, ignis::DType::Q6_K);
      expect_same_logits(*direct, *ref);
    }
  }
}

TEST(HfLoad, BadQuantAndGgufQuantGiveOneLineErrors) {
  if (!have_tokenizer()) GTEST_SKIP() << "needs " << ignis::test::kQwen2Tok;
  auto expect = [](const std::function<void()>& f, const std::vector<std::string>& want) {
    try {
      f();
      ADD_FAILURE() << "no error, expected: " << want[0];
    } catch (const ignis::Error& e) {
      const std::string m = e.what();
      for (const auto& w : want) EXPECT_NE(m.find(w), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  };
  const std::string& dir = folder(find_case("qwen3"));
  expect([&] { ignis::hf::load_hf_folder(dir, {"q3_k_xl", 1}); }, {"--quant q3_k_xl: unknown type", "Q4_K_M"});
  const std::string gguf = converted(dir, "f32");
  expect([&] { ignis::model::Model::load(gguf, {.quant = "Q8_0"}); }, {gguf, "--quant Q8_0", "ignis quantize"});
  const std::string empty = ignis::test::temp_dir("load_empty");
  expect([&] { ignis::model::Model::load(empty); }, {empty, "config.json is missing"});
}

// The public API takes a folder too, and generates what it generates on the converted GGUF.
TEST(HfLoad, EngineLoadsAFolder) {
  if (!have_tokenizer()) GTEST_SKIP() << "needs " << ignis::test::kQwen2Tok;
  const std::string& dir = folder(find_case("qwen3"));
  auto gen = [](const std::string& model, const std::string& quant) {
    ignis::EngineOptions o;
    o.model = model;
    o.quant = quant;
    o.n_threads = 2;
    o.n_ctx = 64;
    o.kv_memory_bytes = 8 << 20;
    auto e = ignis::Engine::load(o);
    ignis::SamplingParams sp;
    sp.temperature = 0;
    sp.max_tokens = 8;
    sp.ignore_eos = true;
    auto out = e->generate(std::vector<std::string>{"Hello, world"}, sp);
    return std::make_pair(out.at(0).token_ids, e->info().path);
  };
  auto [direct, path] = gen(dir, "");
  auto [conv, conv_path] = gen(converted(dir, "f32"), "");
  EXPECT_EQ(path, dir);
  EXPECT_EQ(direct.size(), 8u);
  EXPECT_EQ(direct, conv);
  auto [q, q_path] = gen(dir, "Q8_0");
  auto [q_ref, q_ref_path] = gen(convert_then_quantize(dir, "Q8_0"), "");
  EXPECT_EQ(q, q_ref);
}

// GgufFile::from_parts, which the folder loader builds on, validates what open() validates of tensor infos.
TEST(HfLoad, GgufFromPartsValidatesTensors) {
  auto buf = std::make_shared<std::vector<float>>(64, 1.0f);
  auto info = [&](const std::string& name, std::vector<int64_t> shape, size_t n_bytes, const void* data) {
    ignis::gguf::TensorInfo t;
    t.name = name;
    t.type = ignis::DType::F32;
    t.shape = std::move(shape);
    t.n_bytes = n_bytes;
    t.data = data;
    return t;
  };
  ignis::gguf::Value arch;
  arch.type = ignis::gguf::ValueType::STRING;
  arch.s = "llama";
  auto make = [&](std::vector<ignis::gguf::TensorInfo> ts) {
    return ignis::gguf::GgufFile::from_parts("parts", {{"general.architecture", arch}}, std::move(ts), buf);
  };
  auto f = make({info("a", {8, 8}, 256, buf->data()), info("b", {4}, 16, buf->data() + 8)});
  EXPECT_EQ(f->path(), "parts");
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->tensor("b", {4}).data, buf->data() + 8);
  auto expect = [&](std::vector<ignis::gguf::TensorInfo> ts, const std::string& want) {
    try {
      make(std::move(ts));
      ADD_FAILURE() << "no error, expected: " << want;
    } catch (const ignis::Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  expect({info("a", {8}, 32, buf->data()), info("a", {8}, 32, buf->data())}, "parts: duplicate tensor a");
  expect({info("a", {8, 8}, 255, buf->data())}, "parts: tensor a has shape [8, 8] (f32) and 255 bytes, expected 256");
  expect({info("a", {8, 0}, 0, buf->data())}, "parts: tensor a has a dimension 1 of size 0");
  expect({info("a", {1, 1, 1, 1, 1}, 4, buf->data())}, "parts: tensor a has 5 dimensions");
  expect({info("a", {8}, 32, nullptr)}, "parts: tensor a has no data");
  const auto* odd = reinterpret_cast<const uint8_t*>(buf->data()) + 2;
  expect({info("a", {8}, 32, odd)}, "parts: tensor a data is not aligned to its element size 4");
}
