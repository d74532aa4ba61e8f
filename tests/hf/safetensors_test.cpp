// Safetensors reader: valid files, every dtype, sharded folders, and bad input (one-line errors).
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/fp16.h"
#include "format/safetensors.h"
#include "hf_test_util.h"

using ignis::st::SafetensorsFile;
using ignis::st::SafetensorsSet;
using ignis::st::StDType;
using ignis::test::st_bytes;

namespace {

// Expects from_memory to throw an ignis::Error whose one-line message contains `want`.
void expect_error(const std::vector<uint8_t>& bytes, const std::string& want) {
  try {
    SafetensorsFile::from_memory(bytes.data(), bytes.size(), "bad.safetensors");
    FAIL() << "no error, expected: " << want;
  } catch (const ignis::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad.safetensors: "), std::string::npos) << m;
    EXPECT_NE(m.find(want), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

std::vector<uint8_t> valid_image() {
  // a: F32 [2, 3] = 0..5; b: F16 [2] = {1.5, -2}; c: BF16 [1, 2] = {0.5, 3}
  std::vector<uint8_t> data(24 + 4 + 4);
  for (int i = 0; i < 6; ++i) {
    float f = static_cast<float>(i);
    std::memcpy(&data[4 * i], &f, 4);
  }
  uint16_t h[2] = {ignis::f32_to_f16(1.5f), ignis::f32_to_f16(-2.0f)};
  std::memcpy(&data[24], h, 4);
  uint16_t b[2] = {ignis::f32_to_bf16(0.5f), ignis::f32_to_bf16(3.0f)};
  std::memcpy(&data[28], b, 4);
  return st_bytes(R"({"__metadata__":{"format":"pt"},"c":{"dtype":"BF16","shape":[1,2],"data_offsets":[28,32]},)"
                  R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"F16","shape":[2],"data_offsets":[24,28]}})",
                  data);
}

}  // namespace

TEST(Safetensors, ReadsEveryDtype) {
  auto img = valid_image();
  auto f = SafetensorsFile::from_memory(img.data(), img.size(), "ok.safetensors");
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "a");  // sorted by offset
  EXPECT_EQ(f->metadata().at("format"), "pt");
  const auto* a = f->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> x(6);
  a->to_f32(x.data());
  EXPECT_EQ(x, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  std::vector<float> y(2);
  f->find("b")->to_f32(y.data());
  EXPECT_EQ(y, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(f->find("b")->dtype, StDType::F16);
  f->find("c")->to_f32(y.data());
  EXPECT_EQ(y, (std::vector<float>{0.5f, 3.0f}));
  EXPECT_EQ(f->find("zzz"), nullptr);
}

TEST(Safetensors, MapsAFile) {
  auto dir = ignis::test::temp_dir("st_map");
  ignis::test::write_file(dir + "/model.safetensors", valid_image());
  auto set = SafetensorsSet::open_dir(dir);
  EXPECT_EQ(set->names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(set->tensor("a", {2, 3}).n_bytes, 24u);
  try {
    set->tensor("a", {3, 2});
    FAIL();
  } catch (const ignis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor a has shape [2, 3], expected [3, 2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(set->tensor("nope"), ignis::Error);
}

TEST(Safetensors, BadHeaders) {
  std::vector<uint8_t> d8(8, 0);
  expect_error({1, 2, 3}, "too short");
  {
    auto img = st_bytes("{}", {});
    img[0] = 200;  // header length beyond the file
    expect_error(img, "exceeds the file size");
  }
  {
    auto img = st_bytes("{}", {});
    img[6] = 1;  // 2^48 bytes
    expect_error(img, "exceeds the limit");
  }
  expect_error(st_bytes("{\"a\":", {}), "not valid JSON");
  expect_error(st_bytes("[1,2]", {}), "not a JSON object");
  expect_error(st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", {1, 2, 3}),
               "tensor a has data_offsets [0, 8] beyond the data section of 3 bytes");
  expect_error(st_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8),
               "tensor a has 8 bytes in data_offsets but dtype F32 x shape [3] needs 12");
  expect_error(st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", d8), "begin after end");
  expect_error(st_bytes(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[2],"data_offsets":[2,6]}})", d8),
               "tensor b overlaps tensor a");
  expect_error(st_bytes(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", d8),
               "tensor a has dtype I64, which is not supported (F32, F16, BF16)");
  expect_error(st_bytes(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,8]}})", d8), "tensor a has unknown dtype Q4");
  expect_error(st_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})", d8),
               "overflows");
  expect_error(st_bytes(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", d8), "not a non-negative integer");
  expect_error(st_bytes(R"({"a":{"dtype":"F32","shape":[2]}})", d8), "tensor a has no data_offsets");
  expect_error(st_bytes(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", d8), "tensor a has no dtype");
  expect_error(st_bytes(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", d8), "tensor a has no shape");
  expect_error(st_bytes(R"({"a":5})", d8), "tensor a is not a JSON object");
  expect_error(st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8),
               "tensor a appears twice in the header");
  expect_error(st_bytes(R"({"__metadata__":{"x":1}})", d8), "__metadata__ value x is not a string");
}

// Random byte flips in the header of a valid file: every outcome is success or a one-line Error.
TEST(Safetensors, CorruptedHeadersNeverCrash) {
  const auto img = valid_image();
  std::mt19937 rng(7);
  int errors = 0;
  for (int it = 0; it < 3000; ++it) {
    auto b = img;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % std::min<size_t>(b.size(), 300)] = static_cast<uint8_t>(rng());
    try {
      auto f = SafetensorsFile::from_memory(b.data(), b.size(), "fuzz");
      for (const auto& t : f->tensors()) {
        std::vector<float> x(static_cast<size_t>(t.n_elements()));
        t.to_f32(x.data());
      }
    } catch (const ignis::Error& e) {
      ++errors;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
  EXPECT_GT(errors, 1000);
}

TEST(Safetensors, ShardedFolder) {
  auto dir = ignis::test::temp_dir("st_shards");
  std::vector<uint8_t> d4(4, 0);
  ignis::test::write_file(dir + "/s1.safetensors", st_bytes(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d4));
  ignis::test::write_file(dir + "/s2.safetensors", st_bytes(R"({"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", d4));
  ignis::test::write_text(dir + "/model.safetensors.index.json",
                          R"({"metadata":{},"weight_map":{"x":"s1.safetensors","y":"s2.safetensors"}})");
  auto set = SafetensorsSet::open_dir(dir);
  EXPECT_EQ(set->names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(set->tensor("y").dtype, StDType::F16);

  auto expect_dir_error = [&](const std::string& index, const std::string& want) {
    ignis::test::write_text(dir + "/model.safetensors.index.json", index);
    try {
      SafetensorsSet::open_dir(dir);
      FAIL() << "no error, expected: " << want;
    } catch (const ignis::Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  expect_dir_error(R"({"weight_map":{"x":"s1.safetensors","y":"s1.safetensors"}})",
                   "s1.safetensors: tensor y is missing (listed in model.safetensors.index.json)");
  expect_dir_error(R"({"weight_map":{"x":"../s1.safetensors"}})", "not a file name in the folder");
  expect_dir_error(R"({"weight_map":{"x":"missing.safetensors"}})", "missing.safetensors: cannot open");
  expect_dir_error(R"({"weight_map":[]})", "weight_map is missing or not an object");
  expect_dir_error(R"({"weight_map":)", "invalid JSON");
}

TEST(Safetensors, ShardWithUnlistedTensor) {
  auto dir = ignis::test::temp_dir("st_unlisted");
  std::vector<uint8_t> d8(8, 0);
  ignis::test::write_file(dir + "/s1.safetensors",
                          st_bytes(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"z":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8));
  ignis::test::write_text(dir + "/model.safetensors.index.json", R"({"weight_map":{"x":"s1.safetensors"}})");
  try {
    SafetensorsSet::open_dir(dir);
    FAIL();
  } catch (const ignis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor z is not listed in model.safetensors.index.json"), std::string::npos)
        << e.what();
  }
}

TEST(Safetensors, EmptyFolder) {
  auto dir = ignis::test::temp_dir("st_empty");
  EXPECT_THROW(SafetensorsSet::open_dir(dir), ignis::Error);
}
