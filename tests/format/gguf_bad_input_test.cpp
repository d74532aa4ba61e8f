// Corrupt, truncated and hostile GGUF inputs: each class of problem throws ignis::Error with a
// one-line message that names the file, the key or tensor, and the problem (never a crash, a hang or
// a huge allocation). Files are built by hand (gguf_bytes.h) or corrupted from valid bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "format/gguf.h"
#include "gguf_bytes.h"

namespace ignis::gguf {
namespace {

using testing::Bytes;
using testing::parse_error;

constexpr uint32_t kF32 = 0, kQ4_0 = 2;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// A valid file with one F32 tensor "w" of shape [4, 2] (32 bytes) at offset 0.
Bytes one_tensor_file(std::vector<uint64_t> dims = {4, 2}, uint32_t type = kF32, uint64_t offset = 0,
                      size_t data_bytes = 32) {
  Bytes b;
  b.header(1, 1).kv_u32("k", 7).tensor("w", dims, type, offset).pad_to(32).zeros(data_bytes);
  return b;
}

TEST(GgufBadInput, ValidHandMadeFileParses) {
  const Bytes b = one_tensor_file();
  auto f = GgufFile::from_memory(b.vec().data(), b.size(), "ok.gguf");
  EXPECT_EQ(f->get_int("k"), 7);
  EXPECT_EQ(f->tensor("w", {4, 2}).n_bytes, 32u);
}

TEST(GgufBadInput, BadMagic) {
  Bytes b = one_tensor_file();
  auto v = b.vec();
  v[0] = 'X';
  EXPECT_EQ(parse_error(v), "bad.gguf: not a GGUF file (bad magic)");
  EXPECT_EQ(parse_error({}), "bad.gguf: file is too small to be GGUF (0 bytes)");
  EXPECT_EQ(parse_error({'G', 'G'}), "bad.gguf: file is too small to be GGUF (2 bytes)");
}

TEST(GgufBadInput, UnsupportedVersions) {
  EXPECT_EQ(parse_error(Bytes().header(0, 0, 1).vec()),
            "bad.gguf: GGUF version 1 is not supported (only versions 2 and 3)");
  EXPECT_EQ(parse_error(Bytes().header(0, 0, 0).vec()),
            "bad.gguf: unsupported GGUF version 0 (only versions 2 and 3)");
  EXPECT_EQ(parse_error(Bytes().header(0, 0, 4).vec()),
            "bad.gguf: unsupported GGUF version 4 (only versions 2 and 3)");
  EXPECT_EQ(parse_error(Bytes().header(0, 0, 0x03000000).vec()),
            "bad.gguf: big-endian GGUF files are not supported");
}

const std::string kStories = std::string(IGNIS_SHARED_DIR) + "/models/stories260K.gguf";
const std::string kFixture = std::string(IGNIS_TEST_DATA) + "/format/gguf_py_fixture.gguf";

// ../shared is not committed: tests on its files skip where it is absent (the committed fixture
// covers the same paths).
#define SKIP_WITHOUT(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found"

// Parses every prefix of `bytes` listed in `cuts` and expects each to be rejected.
void expect_prefixes_rejected(const std::vector<uint8_t>& bytes, const std::vector<size_t>& cuts) {
  for (size_t n : cuts) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    parse_error(cut);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "at length " << n;
      return;
    }
  }
}

// End of the last tensor's data: every shorter prefix is invalid.
size_t data_end(const std::vector<uint8_t>& bytes) {
  auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "full.gguf");
  size_t end = 0;
  for (const TensorInfo& t : f->tensors()) end = std::max<size_t>(end, f->data_offset() + t.offset + t.n_bytes);
  return end;
}

TEST(GgufBadInput, FixtureTruncatedAtEveryByte) {
  const auto bytes = read_bytes(kFixture);
  const size_t end = data_end(bytes);
  ASSERT_EQ(end, 1364u);  // t.i32 (20 bytes) at 1088 + 256, as gguf-py reports
  std::vector<size_t> cuts(end);
  for (size_t n = 0; n < end; ++n) cuts[n] = n;
  expect_prefixes_rejected(bytes, cuts);
  auto cut = [&](size_t n) { return parse_error(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n)); };
  EXPECT_EQ(cut(400), "bad.gguf: file truncated at offset 394 while reading metadata key v.empty_str");
  EXPECT_EQ(cut(800), "bad.gguf: file truncated at offset 799 while reading metadata key a.nested3 (array length)");
  EXPECT_EQ(cut(900), "bad.gguf: metadata key a.nested3[1][0] has array length 1 but only 6 bytes remain in the file");
  EXPECT_EQ(cut(1000), "bad.gguf: file truncated at offset 999 while reading tensor t.q8_0 (n_dims)");
  EXPECT_EQ(cut(1100), "bad.gguf: tensor t.f32 data (48 bytes at offset 1088) extends past the end of the file");
}

// Every prefix of a real model up to the end of its metadata, and sampled prefixes inside its
// tensor data, are rejected; none crashes.
TEST(GgufBadInput, Stories260KTruncatedInHeaderAndData) {
  SKIP_WITHOUT(kStories);
  const auto bytes = read_bytes(kStories);
  const size_t data_start = GgufFile::from_memory(bytes.data(), bytes.size(), "x")->data_offset();
  ASSERT_EQ(data_start, 14176u);  // as gguf-py reports (tests/data/format/stories260K.gguf.json)
  const size_t end = data_end(bytes);
  std::vector<size_t> cuts;
  for (size_t n = 0; n < data_start + 64; ++n) cuts.push_back(n);  // the whole header, byte by byte
  std::mt19937 rng(42);
  for (int k = 0; k < 200; ++k) cuts.push_back(data_start + rng() % (end - data_start));
  cuts.push_back(end - 1);
  expect_prefixes_rejected(bytes, cuts);
  // Messages name what was being read.
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + 2000);  // inside the vocabulary
  EXPECT_CONTAINS(parse_error(cut), "metadata key tokenizer.ggml.tokens");
  std::vector<uint8_t> cut2(bytes.begin(), bytes.begin() + 14100);  // inside the tensor infos
  EXPECT_EQ(parse_error(cut2), "bad.gguf: tensor token_embd.weight has shape [64, 512] (f32), needing more "
                               "bytes than the file holds (14100)");
  std::vector<uint8_t> data_cut(bytes.begin(), bytes.begin() + 200000);
  EXPECT_CONTAINS(parse_error(data_cut), "extends past the end of the file");
}

// Random byte flips in the header of a valid file either parse or throw ignis::Error: never a
// crash, another exception type, or an allocation failure. Returns how many were rejected.
int flip_bytes(const std::vector<uint8_t>& bytes, size_t header_size, int trials, uint32_t seed) {
  std::mt19937 rng(seed);
  int errors = 0;
  for (int trial = 0; trial < trials; ++trial) {
    auto v = bytes;
    const int n_flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n_flips; ++k) {
      // Half in the first 100 bytes (header, counts, first lengths), half anywhere in the header.
      const size_t pos = (rng() % 2) ? rng() % 100 : rng() % header_size;
      v[pos] = static_cast<uint8_t>(rng());
    }
    try {
      auto f = GgufFile::from_memory(v.data(), v.size(), "flip.gguf");
      for (const TensorInfo& t : f->tensors()) EXPECT_LE(f->data_offset() + t.offset + t.n_bytes, v.size());
    } catch (const Error& e) {
      ++errors;
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("flip.gguf: ", 0), 0u) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    if (::testing::Test::HasFailure()) break;
  }
  return errors;
}

TEST(GgufBadInput, RandomByteFlipsInFixtureNeverCrash) {
  EXPECT_GT(flip_bytes(read_bytes(kFixture), 1088, 20000, 99), 2000);  // the flips do hit checks
}

TEST(GgufBadInput, RandomByteFlipsInStories260KNeverCrash) {
  SKIP_WITHOUT(kStories);
  EXPECT_GT(flip_bytes(read_bytes(kStories), 14176, 3000, 1234), 100);
}

TEST(GgufBadInput, HugeCounts) {
  EXPECT_EQ(parse_error(Bytes().header(0, uint64_t{1} << 62).vec()),
            "bad.gguf: metadata count 4611686018427387904 is larger than the file can hold");
  EXPECT_EQ(parse_error(Bytes().header(~uint64_t{0}, 0).vec()),
            "bad.gguf: tensor count 18446744073709551615 is larger than the file can hold");
}

// Counts that the file could hold but that are far beyond any real file.
TEST(GgufBadInput, CountsOverLimits) {
  const uint64_t n = (uint64_t{1} << 20) + 1;
  EXPECT_EQ(parse_error(Bytes().header(0, n).zeros(n * 13).vec()),
            "bad.gguf: metadata count 1048577 is over the limit of 1048576");
  EXPECT_EQ(parse_error(Bytes().header(n, 0).zeros(n * 32).vec()),
            "bad.gguf: tensor count 1048577 is over the limit of 1048576");
}

TEST(GgufBadInput, HugeStringLength) {
  Bytes key;
  key.header(0, 1).u64(~uint64_t{0}).zeros(16);
  EXPECT_EQ(parse_error(key.vec()),
            "bad.gguf: the name of metadata key #0 has length 18446744073709551615 but only 16 bytes "
            "remain in the file");
  Bytes val;
  val.header(0, 1).str("general.name").u32(8).u64(uint64_t{1} << 40).zeros(16);
  EXPECT_EQ(parse_error(val.vec()),
            "bad.gguf: metadata key general.name has length 1099511627776 but only 16 bytes remain in "
            "the file");
  Bytes tname;
  tname.header(1, 0).u64(uint64_t{1} << 50).zeros(40);
  EXPECT_CONTAINS(parse_error(tname.vec()), "the name of tensor #0 has length 1125899906842624");
}

TEST(GgufBadInput, HugeArrayCount) {
  Bytes b;
  b.header(0, 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(uint64_t{1} << 61).zeros(64);
  EXPECT_EQ(parse_error(b.vec()),
            "bad.gguf: metadata key tokenizer.ggml.tokens has array length 2305843009213693952 but only "
            "64 bytes remain in the file");
  Bytes nested;  // an inner array's count is bounded the same way
  nested.header(0, 1).str("a").u32(9).u32(9).u64(1).u32(0).u64(1000).zeros(10);
  EXPECT_CONTAINS(parse_error(nested.vec()), "metadata key a[0] has array length 1000 but only 10");
}

// An array that fits in the file but exceeds the per-file element budget is refused before
// ~90 bytes per element are allocated.
TEST(GgufBadInput, ArrayElementBudget) {
  const uint64_t n = (uint64_t{1} << 23) + 1;
  Bytes b;
  b.header(0, 1).str("big").u32(9).u32(0).u64(n).zeros(static_cast<size_t>(n));
  EXPECT_EQ(parse_error(b.vec()),
            "bad.gguf: metadata key big has array length 8388609, over the limit of 8388608 array "
            "elements per file");
}

TEST(GgufBadInput, ArraysNestedTooDeep) {
  Bytes b;
  b.header(0, 1).str("deep").u32(9);
  for (int d = 0; d < 9; ++d) b.u32(9).u64(1);
  b.u32(0).u64(1).u8(0);
  EXPECT_CONTAINS(parse_error(b.vec()), "metadata key deep[0][0][0][0][0][0][0][0] nests arrays deeper than 8 levels");
  Bytes ok;  // 8 levels are fine
  ok.header(0, 1).str("deep").u32(9);
  for (int d = 0; d < 7; ++d) ok.u32(9).u64(1);
  ok.u32(0).u64(1).u8(5);
  auto f = GgufFile::from_memory(ok.vec().data(), ok.size(), "ok.gguf");
  const Value* v = f->find("deep");
  for (int d = 0; d < 7; ++d) v = &v->arr.at(0);
  EXPECT_EQ(v->arr.at(0).u, 5u);
}

TEST(GgufBadInput, UnknownValueTypes) {
  EXPECT_EQ(parse_error(Bytes().header(0, 1).str("k").u32(13).u32(0).vec()),
            "bad.gguf: metadata key k has unknown value type 13");
  EXPECT_EQ(parse_error(Bytes().header(0, 1).str("k").u32(9).u32(99).u64(0).vec()),
            "bad.gguf: metadata key k has unknown array element type 99");
}

TEST(GgufBadInput, InvalidBool) {
  EXPECT_EQ(parse_error(Bytes().header(0, 1).str("flag").u32(7).u8(2).vec()),
            "bad.gguf: metadata key flag has invalid bool value 2");
}

TEST(GgufBadInput, DuplicateAndEmptyKeys) {
  EXPECT_EQ(parse_error(Bytes().header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2).vec()),
            "bad.gguf: duplicate metadata key a.b");
  EXPECT_EQ(parse_error(Bytes().header(0, 1).kv_u32("", 1).vec()),
            "bad.gguf: metadata key #0 has an empty name");
}

TEST(GgufBadInput, ControlCharactersInNamesAreEscaped) {
  const std::string msg = parse_error(Bytes().header(0, 2).kv_u32("x\ny", 1).kv_u32("x\ny", 1).vec());
  EXPECT_EQ(msg, "bad.gguf: duplicate metadata key x\\x0ay");
}

TEST(GgufBadInput, BadAlignment) {
  EXPECT_EQ(parse_error(Bytes().header(0, 1).kv_u32("general.alignment", 0).vec()),
            "bad.gguf: metadata key general.alignment is 0, expected a nonzero power of two");
  EXPECT_EQ(parse_error(Bytes().header(0, 1).kv_u32("general.alignment", 48).vec()),
            "bad.gguf: metadata key general.alignment is 48, expected a nonzero power of two");
  EXPECT_EQ(parse_error(Bytes().header(0, 1).kv_u32("general.alignment", 1u << 31).vec()),
            "bad.gguf: metadata key general.alignment is 2147483648, larger than the limit 1048576");
  EXPECT_EQ(parse_error(Bytes().header(0, 1).str("general.alignment").u32(8).str("32").vec()),
            "bad.gguf: metadata key general.alignment has type string, expected uint32");
}

TEST(GgufBadInput, DuplicateAndEmptyTensorNames) {
  Bytes dup;
  dup.header(2, 0).tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_EQ(parse_error(dup.vec()), "bad.gguf: duplicate tensor w");
  Bytes empty;
  empty.header(1, 0).tensor("", {8}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_EQ(parse_error(empty.vec()), "bad.gguf: tensor #0 has an empty name");
}

TEST(GgufBadInput, BadDimensionCount) {
  EXPECT_EQ(parse_error(one_tensor_file({}).vec()), "bad.gguf: tensor w has 0 dimensions, expected 1 to 4");
  EXPECT_EQ(parse_error(one_tensor_file({1, 1, 1, 1, 32}).vec()),
            "bad.gguf: tensor w has 5 dimensions, expected 1 to 4");
}

TEST(GgufBadInput, ZeroDimension) {
  EXPECT_EQ(parse_error(one_tensor_file({4, 0}).vec()), "bad.gguf: tensor w has a zero-sized dimension 1");
}

TEST(GgufBadInput, ElementCountOverflow) {
  EXPECT_EQ(parse_error(one_tensor_file({uint64_t{1} << 32, uint64_t{1} << 32}).vec()),
            "bad.gguf: tensor w has too many elements (shape overflows 63 bits)");
  EXPECT_EQ(parse_error(one_tensor_file({~uint64_t{0}}).vec()),
            "bad.gguf: tensor w has too many elements (shape overflows 63 bits)");
  // Fits in 63 bits as elements but not as bytes in the file.
  EXPECT_EQ(parse_error(one_tensor_file({uint64_t{1} << 61}).vec()),
            "bad.gguf: tensor w has shape [2305843009213693952] (f32), needing more bytes than the file "
            "holds (128)");
}

TEST(GgufBadInput, RowNotMultipleOfBlockSize) {
  EXPECT_EQ(parse_error(one_tensor_file({33, 2}, kQ4_0).vec()),
            "bad.gguf: tensor w of type q4_0 has rows of 33 elements, not a multiple of the block size 32");
}

TEST(GgufBadInput, UnknownTensorType) {
  EXPECT_EQ(parse_error(one_tensor_file({4, 2}, 4).vec()), "bad.gguf: tensor w has unknown type id 4");
  EXPECT_EQ(parse_error(one_tensor_file({4, 2}, 1000).vec()), "bad.gguf: tensor w has unknown type id 1000");
}

TEST(GgufBadInput, OffsetNotAligned) {
  EXPECT_EQ(parse_error(one_tensor_file({4, 2}, kF32, 4, 64).vec()),
            "bad.gguf: tensor w has offset 4, not a multiple of the alignment 32");
}

TEST(GgufBadInput, DataOutsideFile) {
  EXPECT_CONTAINS(parse_error(one_tensor_file({4, 2}, kF32, 32).vec()), "tensor w data (32 bytes at offset 128) extends past the end of the file");
  EXPECT_CONTAINS(parse_error(one_tensor_file({4, 2}, kF32, 0, 31).vec()), "tensor w data (32 bytes at offset 96) extends past the end of the file");
  EXPECT_CONTAINS(parse_error(one_tensor_file({4, 2}, kF32, ~uint64_t{0} / 32 * 32).vec()), "extends past the end of the file");
  Bytes no_data;  // the data section itself starts past the end (padding missing)
  no_data.header(1, 0).tensor("w", {8}, kF32, 0);
  EXPECT_CONTAINS(parse_error(no_data.vec()), "the tensor data section would start at offset 64 but the file has 57 bytes");
}

TEST(GgufBadInput, OverlappingTensors) {
  Bytes b;
  b.header(3, 0)
      .tensor("a", {16}, kF32, 0)
      .tensor("b", {8}, kF32, 96)
      .tensor("c", {8}, kF32, 32)  // [32, 64) inside a's [0, 64)
      .pad_to(32)
      .zeros(128);
  EXPECT_EQ(parse_error(b.vec()), "bad.gguf: tensors a and c overlap in the data section");
  Bytes same;
  same.header(2, 0).tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 0).pad_to(32).zeros(64);
  EXPECT_CONTAINS(parse_error(same.vec()), "overlap in the data section");
}

TEST(GgufBadInput, TensorsMayBeInAnyOrder) {
  Bytes b;
  b.header(2, 0).tensor("late", {8}, kF32, 32).tensor("early", {8}, kF32, 0).pad_to(32).zeros(64);
  auto f = GgufFile::from_memory(b.vec().data(), b.size(), "ok.gguf");
  EXPECT_EQ(f->tensor("late").offset, 32u);
}

}  // namespace
}  // namespace ignis::gguf
