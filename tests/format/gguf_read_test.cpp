// Reading real GGUF files, checked against summaries made by llama.cpp's gguf-py
// (tests/data/format/gen_gguf_goldens.py) and a fixture written by gguf-py's writer
// (tests/data/format/gen_gguf_fixture.py).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "gguf_bytes.h"

namespace ignis::gguf {
namespace {

const std::string kShared = IGNIS_SHARED_DIR;
const std::string kData = std::string(IGNIS_TEST_DATA) + "/format";

// ../shared is not committed: tests on its files skip where it is absent.
#define SKIP_WITHOUT(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << (path) << " not found"

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

uint64_t fnv1a64(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}

// The same hash gen_gguf_goldens.py computes: elements' raw little-endian bytes, strings + '\0'.
std::string hash_array(const Value& v) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const Value& e : v.arr) {
    switch (e.type) {
      case ValueType::STRING: h = fnv1a64(h, e.s.data(), e.s.size()); h = fnv1a64(h, "", 1); break;
      case ValueType::FLOAT32: { float x = static_cast<float>(e.f); h = fnv1a64(h, &x, 4); break; }
      case ValueType::FLOAT64: h = fnv1a64(h, &e.f, 8); break;
      case ValueType::INT32: { int32_t x = static_cast<int32_t>(e.i); h = fnv1a64(h, &x, 4); break; }
      case ValueType::UINT32: { uint32_t x = static_cast<uint32_t>(e.u); h = fnv1a64(h, &x, 4); break; }
      default: ADD_FAILURE() << "element type " << value_type_name(e.type) << " not covered";
    }
  }
  return fmt::format("{:016x}", h);
}

std::string hex(const void* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", static_cast<const uint8_t*>(p)[i]);
  return s;
}

// Compares every key and tensor of `f` with the reference summary.
void expect_matches_golden(const GgufFile& f, const std::string& golden_path) {
  std::ifstream in(golden_path);
  ASSERT_TRUE(in) << golden_path;
  const auto g = nlohmann::json::parse(in);
  EXPECT_EQ(f.version(), g["version"].get<uint32_t>());
  EXPECT_EQ(f.alignment(), g["alignment"].get<uint32_t>());
  ASSERT_EQ(f.metadata().size(), g["kv"].size());
  for (size_t k = 0; k < g["kv"].size(); ++k) {
    const auto& gk = g["kv"][k];
    const auto& [key, v] = f.metadata()[k];
    SCOPED_TRACE(key);
    EXPECT_EQ(key, gk["key"].get<std::string>());  // file order is kept
    EXPECT_EQ(value_type_name(v.type), gk["type"].get<std::string>());
    if (v.type == ValueType::ARRAY) {
      EXPECT_EQ(value_type_name(v.elem_type), gk["elem_type"].get<std::string>());
      EXPECT_EQ(v.arr.size(), gk["len"].get<size_t>());
      EXPECT_EQ(hash_array(v), gk["fnv"].get<std::string>());
    } else if (v.type == ValueType::STRING) {
      EXPECT_EQ(v.s, gk["value"].get<std::string>());
    } else if (v.type == ValueType::FLOAT32 || v.type == ValueType::FLOAT64) {
      EXPECT_EQ(v.f, gk["value"].get<double>());
    } else if (v.type == ValueType::BOOL) {
      EXPECT_EQ(v.u != 0, gk["value"].get<bool>());
    } else if (v.type == ValueType::INT8 || v.type == ValueType::INT16 || v.type == ValueType::INT32 ||
               v.type == ValueType::INT64) {
      EXPECT_EQ(v.i, gk["value"].get<int64_t>());
    } else {
      EXPECT_EQ(v.u, gk["value"].get<uint64_t>());
    }
  }
  ASSERT_EQ(f.tensors().size(), g["tensors"].size());
  const auto* base = static_cast<const uint8_t*>(f.tensors().empty() ? nullptr : f.tensors()[0].data) -
                     (f.tensors().empty() ? 0 : f.tensors()[0].offset);
  for (size_t t = 0; t < g["tensors"].size(); ++t) {
    const auto& gt = g["tensors"][t];
    const TensorInfo& ti = f.tensors()[t];
    SCOPED_TRACE(ti.name);
    EXPECT_EQ(ti.name, gt["name"].get<std::string>());
    EXPECT_EQ(static_cast<uint32_t>(ti.type), gt["type_id"].get<uint32_t>());
    EXPECT_EQ(ti.shape, gt["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(ti.offset, gt["offset"].get<uint64_t>());
    EXPECT_EQ(ti.n_bytes, gt["n_bytes"].get<size_t>());
    EXPECT_EQ(static_cast<const uint8_t*>(ti.data), base + ti.offset);
    EXPECT_EQ(hex(ti.data, 8), gt["head"].get<std::string>());
    EXPECT_EQ(hex(static_cast<const uint8_t*>(ti.data) + ti.n_bytes - 8, 8), gt["tail"].get<std::string>());
    EXPECT_EQ(f.find_tensor(ti.name), &ti);
  }
}

TEST(GgufRead, Stories260KMatchesReference) {
  SKIP_WITHOUT(kShared + "/models/stories260K.gguf");
  auto f = GgufFile::open(kShared + "/models/stories260K.gguf");
  expect_matches_golden(*f, kData + "/stories260K.gguf.json");
}

TEST(GgufRead, Stories260KKnownValues) {
  SKIP_WITHOUT(kShared + "/models/stories260K.gguf");
  auto f = GgufFile::open(kShared + "/models/stories260K.gguf");
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.context_length"), 2048);
  EXPECT_EQ(f->get_int("llama.block_count"), 5);
  EXPECT_EQ(f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f->get_int("tokenizer.ggml.padding_token_id"), 4294967295);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(f->get_float("llama.block_count"), 5.0);  // integers read as floats
  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(f->get_float_array("tokenizer.ggml.scores").size(), 512u);
  EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type")[0], 2);
  EXPECT_EQ(f->tensors().size(), 48u);
  const TensorInfo& emb = f->tensor("token_embd.weight", {64, 512});
  EXPECT_EQ(emb.type, DType::F32);
  EXPECT_EQ(emb.n_elements(), 64 * 512);
  EXPECT_EQ(emb.n_bytes, 64u * 512 * 4);
  EXPECT_EQ(f->tensor("blk.4.ffn_down.weight").shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(f->opt_int("llama.no_such_key"), std::nullopt);
  EXPECT_EQ(f->opt_string("general.architecture"), "llama");
}

TEST(GgufRead, LlamaTinyRandomMatchesReference) {
  SKIP_WITHOUT(kShared + "/models/llama-2-tiny-random.gguf");
  auto f = GgufFile::open(kShared + "/models/llama-2-tiny-random.gguf");
  expect_matches_golden(*f, kData + "/llama-2-tiny-random.gguf.json");
  EXPECT_EQ(f->find_tensor("token_embd.weight")->type, DType::F16);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").size(), 32000u);
}

TEST(GgufRead, VocabOnlyFilesMatchReference) {
  SKIP_WITHOUT(kShared + "/tokenizer-vectors/ggml-vocab-phi-3.gguf");
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"}) {
    SCOPED_TRACE(name);
    auto f = GgufFile::open(kShared + "/tokenizer-vectors/" + name);
    expect_matches_golden(*f, kData + "/" + name + ".json");
    EXPECT_TRUE(f->tensors().empty());
  }
  auto phi = GgufFile::open(kShared + "/tokenizer-vectors/ggml-vocab-phi-3.gguf");
  EXPECT_NE(phi->get_string("tokenizer.chat_template").find("<|assistant|>"), std::string::npos);
}

TEST(GgufRead, OpenAndFromMemoryAgree) {
  const std::string path = kData + "/gguf_py_fixture.gguf";
  auto a = GgufFile::open(path);
  const auto bytes = read_bytes(path);
  auto b = GgufFile::from_memory(bytes.data(), bytes.size(), "mem.gguf");
  EXPECT_EQ(b->path(), "mem.gguf");
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (size_t t = 0; t < a->tensors().size(); ++t) {
    const TensorInfo& x = a->tensors()[t];
    const TensorInfo& y = b->tensors()[t];
    EXPECT_EQ(x.name, y.name);
    const auto* yp = static_cast<const uint8_t*>(y.data);
    EXPECT_FALSE(yp >= bytes.data() && yp < bytes.data() + bytes.size()) << "from_memory must copy";
    EXPECT_EQ(std::memcmp(x.data, y.data, x.n_bytes), 0);
  }
}

// Long top-level arrays (a vocabulary) are checked at open and read on first use: their size without
// reading them, their elements through the typed getters (straight from the bytes), find and metadata(),
// the same as short arrays read at open and the same before and after they are kept; a bad element
// still fails at open.
TEST(GgufRead, LongArraysReadOnFirstUseAndCheckedAtOpen) {
  std::vector<std::string> toks;
  std::vector<int32_t> types;
  std::vector<float> scores;
  for (int i = 0; i < 5000; ++i) {
    toks.push_back(i % 7 ? "t" + std::to_string(i) : std::string(40 + i % 5, 'x'));  // some past SSO
    types.push_back(i % 3 - 1);
    scores.push_back(-0.25f * static_cast<float>(i));
  }
  GgufWriter w;
  w.set_string_array("tokenizer.ggml.tokens", toks);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_string_array("short", {"a", "b"});
  Value flags;
  flags.type = ValueType::ARRAY;
  flags.elem_type = ValueType::BOOL;
  for (int i = 0; i < 4096; ++i) {
    Value b;
    b.type = ValueType::BOOL;
    b.u = b.i = i % 2;
    flags.arr.push_back(b);
  }
  w.set_array("flags", flags);
  w.set_u32("after", 7);
  w.set_f32_array("scores", scores);
  auto bytes = w.to_bytes();
  auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "lazy.gguf");
  EXPECT_EQ(f->array_size("tokenizer.ggml.tokens"), 5000u);
  EXPECT_EQ(f->array_size("short"), 2u);
  EXPECT_EQ(f->array_size("after"), 0u);
  EXPECT_EQ(f->array_size("missing"), 0u);
  EXPECT_TRUE(f->has("tokenizer.ggml.tokens"));
  EXPECT_EQ(f->get_int("after"), 7);
  auto expect_getters = [&] {
    EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens"), toks);
    std::vector<std::string> seen;  // for_each_string: the same elements, one at a time
    f->for_each_string("tokenizer.ggml.tokens", [&](std::string_view s) { seen.emplace_back(s); });
    EXPECT_EQ(seen, toks);
    EXPECT_THROW(f->for_each_string("scores", [](std::string_view) {}), Error);
    EXPECT_THROW(f->for_each_string("missing", [](std::string_view) {}), Error);
    const std::vector<int64_t> got_types = f->get_int_array("tokenizer.ggml.token_type");
    ASSERT_EQ(got_types.size(), types.size());
    for (size_t i = 0; i < types.size(); ++i) EXPECT_EQ(got_types[i], types[i]) << i;
    EXPECT_EQ(f->get_float_array("scores"), scores);
    EXPECT_EQ(f->get_float_array("tokenizer.ggml.token_type")[4], 0.0f);  // integers as numbers
    try {
      f->get_int_array("tokenizer.ggml.tokens");
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("metadata key tokenizer.ggml.tokens has type array of string, expected "
                                           "array of integers"),
                std::string::npos)
          << e.what();
    }
  };
  expect_getters();                           // unread: from the file bytes
  EXPECT_EQ(f->array_size("scores"), 5000u);  // still unread
  const Value& fl = f->metadata()[3].second;  // metadata() reads every array
  ASSERT_EQ(fl.arr.size(), 4096u);
  EXPECT_EQ(fl.arr[4095].u, 1u);
  EXPECT_EQ(f->metadata()[0].second.arr.size(), 5000u);
  expect_getters();  // from the kept Values

  // A bool of 2 at the end of the long array, and a string running past the end: errors at open.
  std::vector<uint8_t> bad = bytes;
  bool patched = false;
  for (size_t i = bad.size(); i-- > 0;) {  // the last bool written (value 1) before key "after"
    if (bad[i] == 1 && i + 9 < bad.size() && std::memcmp(&bad[i + 1 + 8], "after", 5) == 0) {
      bad[i] = 2;
      patched = true;
      break;
    }
  }
  ASSERT_TRUE(patched);
  try {
    GgufFile::from_memory(bad.data(), bad.size(), "bad.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid bool value 2"), std::string::npos) << e.what();
  }
  GgufWriter w2;
  w2.set_string_array("tokenizer.ggml.tokens", toks);
  auto cut = w2.to_bytes();
  cut.resize(cut.size() - 20);
  EXPECT_THROW(GgufFile::from_memory(cut.data(), cut.size(), "cut.gguf"), Error);
}

// The fixture written by gguf-py holds every value type, nested arrays and alignment 64.
TEST(GgufRead, GgufPyFixtureAllValueTypes) {
  auto f = GgufFile::open(kData + "/gguf_py_fixture.gguf");
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_string("general.architecture"), "fixture");
  EXPECT_EQ(f->get_int("v.u8"), 200);
  EXPECT_EQ(f->get_int("v.i8"), -100);
  EXPECT_EQ(f->get_int("v.u16"), 60000);
  EXPECT_EQ(f->get_int("v.i16"), -30000);
  EXPECT_EQ(f->get_int("v.u32"), 4000000000);
  EXPECT_EQ(f->get_int("v.i32"), -2000000000);
  EXPECT_EQ(f->require("v.u64").u, (uint64_t{1} << 63) + 5);
  EXPECT_EQ(f->get_int("v.i64"), -(int64_t{1} << 62));
  EXPECT_EQ(f->get_float("v.f32"), 1.5);
  EXPECT_EQ(f->get_float("v.f64"), -2.25e-300);
  EXPECT_TRUE(f->get_bool("v.bool"));
  EXPECT_EQ(f->get_string("v.str"), "h\xc3\xa9llo w\xc3\xb6rld");
  EXPECT_EQ(f->get_string("v.empty_str"), "");
  EXPECT_EQ(f->get_int_array("a.u8"), (std::vector<int64_t>{1, 2, 255}));
  EXPECT_EQ(f->get_int_array("a.i16"), (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(f->require("a.u64").arr[0].u, ~uint64_t{0});
  EXPECT_EQ(f->get_float_array("a.f32"), (std::vector<float>{0.25f, -3.0f}));
  EXPECT_EQ(f->require("a.f64").arr[1].f, -1e10);
  EXPECT_EQ(f->require("a.bool").arr[0].u, 1u);
  EXPECT_EQ(f->require("a.bool").arr[1].u, 0u);
  EXPECT_EQ(f->get_string_array("a.str"), (std::vector<std::string>{"a", "", "ccc"}));
  const Value& n = f->require("a.nested");
  ASSERT_EQ(n.elem_type, ValueType::ARRAY);
  ASSERT_EQ(n.arr.size(), 3u);
  EXPECT_EQ(n.arr[2].elem_type, ValueType::INT32);
  EXPECT_EQ(n.arr[2].arr.size(), 3u);
  EXPECT_EQ(n.arr[2].arr[2].i, 6);
  const Value& n3 = f->require("a.nested3");
  EXPECT_EQ(n3.arr[0].arr[1].elem_type, ValueType::STRING);
  EXPECT_EQ(n3.arr[0].arr[1].arr[1].s, "z");
  EXPECT_EQ(n3.arr[1].arr[0].arr[0].s, "w");

  const TensorInfo& t = f->tensor("t.f32", {4, 3});
  const auto* x = static_cast<const float*>(t.data);
  for (int k = 0; k < 12; ++k) EXPECT_EQ(x[k], static_cast<float>(k));
  EXPECT_EQ(f->tensor("t.f16", {8}).type, DType::F16);
  const TensorInfo& q = f->tensor("t.q8_0", {32, 2});
  EXPECT_EQ(q.type, DType::Q8_0);
  EXPECT_EQ(q.n_bytes, 68u);
  EXPECT_EQ(static_cast<const uint8_t*>(q.data)[67], 67);
  const TensorInfo& i = f->tensor("t.i32", {5});
  EXPECT_EQ(static_cast<const int32_t*>(i.data)[4], INT32_MIN);
  for (const TensorInfo& ti : f->tensors()) {
    EXPECT_EQ(ti.offset % 64, 0u) << ti.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ti.data) % 64, 0u) << ti.name;  // mmap base is page aligned
  }
}

// v2 has the v3 layout (v3 only added the big-endian variant): the same bytes with version 2 read.
TEST(GgufRead, Version2IsAccepted) {
  auto bytes = read_bytes(kData + "/gguf_py_fixture.gguf");
  bytes[4] = 2;
  auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "v2.gguf");
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->get_int("v.u8"), 200);
}

TEST(GgufRead, GetterErrorsNameFileAndKey) {
  auto f = GgufFile::open(kData + "/gguf_py_fixture.gguf");
  const std::string p = kData + "/gguf_py_fixture.gguf: ";
  auto msg = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg([&] { f->get_string("no.such"); }), p + "metadata key no.such is missing");
  EXPECT_EQ(msg([&] { f->get_int("v.str"); }), p + "metadata key v.str has type string, expected an integer");
  EXPECT_EQ(msg([&] { f->get_string("v.u8"); }), p + "metadata key v.u8 has type uint8, expected string");
  EXPECT_EQ(msg([&] { f->get_bool("v.u8"); }), p + "metadata key v.u8 has type uint8, expected bool");
  EXPECT_EQ(msg([&] { f->get_float("a.f32"); }),
            p + "metadata key a.f32 has type array of float32, expected a number");
  EXPECT_EQ(msg([&] { f->get_string_array("a.u8"); }),
            p + "metadata key a.u8 has type array of uint8, expected array of string");
  EXPECT_EQ(msg([&] { f->get_int_array("a.f32"); }),
            p + "metadata key a.f32 has type array of float32, expected array of integers");
  EXPECT_EQ(msg([&] { f->get_float_array("a.nested"); }),
            p + "metadata key a.nested has type array of array, expected array of numbers");
  EXPECT_NE(msg([&] { f->get_int("v.u64"); }).find("too large"), std::string::npos);
  EXPECT_NE(msg([&] { f->get_int_array("a.u64"); }).find("too large"), std::string::npos);
  EXPECT_EQ(msg([&] { f->opt_int("v.str"); }), p + "metadata key v.str has type string, expected an integer");
  EXPECT_EQ(msg([&] { f->tensor("blk.0.attn_q.weight"); }), p + "tensor blk.0.attn_q.weight is missing");
  EXPECT_EQ(msg([&] { f->tensor("t.f32", {3, 4}); }), p + "tensor t.f32 has shape [4, 3], expected [3, 4]");
}

TEST(GgufRead, OpenErrors) {
  auto msg = [](const std::string& path) {
    try {
      GgufFile::open(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string dir = std::string(IGNIS_BINARY_DIR) + "/gguf_open_errors";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(msg(dir + "/missing.gguf").rfind(dir + "/missing.gguf: cannot open: ", 0), 0u);
  EXPECT_EQ(msg(dir), dir + ": is a directory, not a GGUF file");
  std::ofstream(dir + "/empty.gguf").close();
  EXPECT_EQ(msg(dir + "/empty.gguf"), dir + "/empty.gguf: file is empty, not a GGUF file");
  const std::string fifo = dir + "/fifo.gguf";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(msg(fifo), fifo + ": not a regular file");  // and no hang waiting for a writer
  ::unlink(fifo.c_str());
  std::ofstream(dir + "/text.gguf") << "hello, this is not a model\n";
  EXPECT_EQ(msg(dir + "/text.gguf"), dir + "/text.gguf: not a GGUF file (bad magic)");
}

}  // namespace
}  // namespace ignis::gguf
