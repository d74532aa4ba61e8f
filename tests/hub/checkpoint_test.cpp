// -hf for repos without .gguf files: hub::resolve_model downloads exactly the files of the safetensors
// checkpoint (sharded index + every shard, tokenizer files) into one snapshot folder, against the fake
// hub (tests/hub_server/hub_server.py); plus the pure selection in checkpoint_select.h.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "hub/checkpoint_select.h"
#include "hub/hub.h"
#include "hub/sha256.h"
#include "hub_server.h"

using namespace ignis::hub;
using namespace hub_test;

namespace {

constexpr const char* kSharded = "org/sharded";
const char* const kShard1 = "model-00001-of-00002.safetensors";
const char* const kShard2 = "model-00002-of-00002.safetensors";

std::string index_json(const std::vector<std::pair<std::string, std::string>>& map) {
  nlohmann::json j = {{"metadata", {{"total_size", 1000}}}, {"weight_map", nlohmann::json::object()}};
  for (const auto& [t, f] : map) j["weight_map"][t] = f;
  return j.dump(2);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ignis::Error& e) {
    return e.what();
  }
  return "(no error)";
}

class CheckpointTest : public FakeHubTest {
 protected:
  CheckpointTest() : FakeHubTest("ignis_ckpt_test_") {}
  void SetUp() override {
    FakeHubTest::SetUp();
    // What is downloaded.
    add(kSharded, "config.json", "{\"architectures\": [\"LlamaForCausalLM\"]}\n");
    add(kSharded, "generation_config.json", "{\"eos_token_id\": [1, 2], \"temperature\": 0.6}\n");
    add(kSharded, "model.safetensors.index.json",
        index_json({{"model.embed_tokens.weight", kShard1}, {"model.layers.0.mlp.up_proj.weight", kShard1},
                    {"lm_head.weight", kShard2}}));
    add(kSharded, kShard1, random_bytes(150000, "shard1"));
    add(kSharded, kShard2, random_bytes(80000, "shard2"));
    add(kSharded, "tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}\n");
    add(kSharded, "tokenizer_config.json", "{\"bos_token\": \"<s>\"}\n");
    add(kSharded, "special_tokens_map.json", "{}\n");
    // What is not: other formats of the weights, a redundant tokenizer, docs.
    add(kSharded, "pytorch_model.bin", random_bytes(5000, "bin"));
    add(kSharded, "model.pt", random_bytes(5000, "pt"));
    add(kSharded, "original/consolidated.00.pth", random_bytes(5000, "pth"));
    add(kSharded, "original/tokenizer.model", "spm");
    add(kSharded, "onnx/model.onnx", "onnx");
    add(kSharded, "vocab.json", "{}");
    add(kSharded, "merges.txt", "#version: 0.2\n");
    add(kSharded, "README.md", "# sharded\n");
    add(kSharded, ".gitattributes", "*.safetensors filter=lfs\n");
  }
  // Repo-relative names of the files asked for on /resolve/ (HEAD or GET).
  std::set<std::string> resolved_files(const std::string& repo) const {
    std::set<std::string> out;
    const std::string pre = "/" + repo + "/resolve/";
    for (const auto& e : server_->log()) {
      std::string p = e["path"];
      if (p.rfind(pre, 0) != 0) continue;
      p = p.substr(pre.size());
      out.insert(p.substr(p.find('/') + 1));  // drop the revision
    }
    return out;
  }
  static std::set<std::string> files_in(const fs::path& dir) {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (fs::is_regular_file(e.path())) out.insert(e.path().lexically_relative(dir).generic_string());
    return out;
  }
};

const std::set<std::string> kShardedFiles = {
    "config.json",       "generation_config.json", "model.safetensors.index.json", kShard1, kShard2,
    "tokenizer.json",    "tokenizer_config.json",  "special_tokens_map.json"};

TEST_F(CheckpointTest, DownloadsExactlyTheCheckpointFilesIntoOneSnapshotFolder) {
  start();
  std::string path = resolve_model(kSharded, opts());
  fs::path repo = repo_dir(kSharded);
  std::string commit = read_file(repo / "refs" / "main");
  ASSERT_EQ(commit.size(), 40u);
  EXPECT_EQ(path, (repo / "snapshots" / commit).string());
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_EQ(files_in(path), kShardedFiles);
  for (const auto& f : kShardedFiles) {
    EXPECT_EQ(read_file(fs::path(path) / f), source(kSharded, f)) << f;
    EXPECT_TRUE(fs::is_symlink(fs::path(path) / f)) << f;
  }
  // Shards are LFS files: blobs named by their sha256 (checked), fetched from the CDN once each.
  std::string sha1 = sha256_file((root_ / kSharded / kShard1).string());
  EXPECT_EQ(fs::read_symlink(fs::path(path) / kShard1).string(), "../../blobs/" + sha1);
  EXPECT_EQ(cdn_gets().size(), 2u);
  // Nothing else was asked for: no .bin, .pt, original/, onnx/, vocab.json, merges.txt, README.
  EXPECT_EQ(resolved_files(kSharded), kShardedFiles);
}

TEST_F(CheckpointTest, SecondCallAndOfflineAnswerFromTheCache) {
  HubOptions off = opts();
  off.offline = true;
  std::string e = error_of([&] { resolve_model(kSharded, off); });
  EXPECT_NE(e.find("org/sharded is not in the cache"), std::string::npos) << e;
  EXPECT_NE(e.find("offline mode is on"), std::string::npos) << e;

  start();
  std::string path = resolve_model(kSharded, opts());
  size_t n = server_->log().size();
  EXPECT_EQ(resolve_model(kSharded, opts()), path);
  EXPECT_EQ(server_->log().size(), n);
  server_.reset();
  EXPECT_EQ(resolve_model(kSharded, off), path);

  // A shard lost from the cache: offline refuses (the folder is incomplete) instead of returning it.
  fs::remove(fs::canonical(fs::path(path) / kShard2));  // the blob
  fs::remove(fs::path(path) / kShard2);                  // and its link
  e = error_of([&] { resolve_model(kSharded, off); });
  EXPECT_NE(e.find("org/sharded is not in the cache"), std::string::npos) << e;
  // Online, only the missing shard is fetched again.
  fs::remove(dir_ / "server_log.jsonl");
  start();
  EXPECT_EQ(resolve_model(kSharded, opts()), path);
  EXPECT_EQ(read_file(fs::path(path) / kShard2), source(kSharded, kShard2));
  auto gets = cdn_gets();
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0]["path"], "/cdn/" + sha256_file((root_ / kSharded / kShard2).string()));
}

TEST_F(CheckpointTest, ResumesAShardAfterTheConnectionDrops) {
  start({"--drop-after", "60000"});
  std::string path = resolve_model(kSharded, opts());
  EXPECT_EQ(read_file(fs::path(path) / kShard1), source(kSharded, kShard1));
  EXPECT_EQ(read_file(fs::path(path) / kShard2), source(kSharded, kShard2));
  auto gets = cdn_gets();
  ASSERT_EQ(gets.size(), 3u);  // the first shard twice (dropped, then resumed), the second once
  EXPECT_TRUE(gets[0]["range"].is_null());
  EXPECT_EQ(gets[1]["range"], "bytes=60000-");
  EXPECT_TRUE(gets[2]["range"].is_null());
}

TEST_F(CheckpointTest, Sha256MismatchOfAShardFailsAndLeavesNoRef) {
  start({"--corrupt", "model-00002"});
  std::string e = error_of([&] { resolve_model(kSharded, opts()); });
  EXPECT_NE(e.find(std::string("org/sharded/") + kShard2 + ": sha256 mismatch"), std::string::npos) << e;
  std::string sha = sha256_file((root_ / kSharded / kShard2).string());
  EXPECT_FALSE(fs::exists(repo_dir(kSharded) / "blobs" / sha));
  EXPECT_FALSE(fs::exists(repo_dir(kSharded) / "refs" / "main"));
}

TEST_F(CheckpointTest, IndexNamingAMissingShardFailsBeforeAnyShardDownload) {
  add(kSharded, "model.safetensors.index.json",
      index_json({{"a", kShard1}, {"b", "model-00003-of-00003.safetensors"}}));
  start();
  std::string e = error_of([&] { resolve_model(kSharded, opts()); });
  EXPECT_EQ(e, "org/sharded: model.safetensors.index.json names the shard model-00003-of-00003.safetensors, "
               "which the repo does not have");
  EXPECT_EQ(cdn_gets().size(), 0u);
  EXPECT_FALSE(fs::exists(repo_dir(kSharded) / "refs" / "main"));
}

TEST_F(CheckpointTest, IndexWithAPathOutsideTheRepoIsRefused) {
  add(kSharded, "model.safetensors.index.json", index_json({{"a", "../../etc/passwd.safetensors"}}));
  start();
  std::string e = error_of([&] { resolve_model(kSharded, opts()); });
  EXPECT_NE(e.find("org/sharded/model.safetensors.index.json: weight_map[\"a\"] = '../../etc/passwd.safetensors' "
                   "is not a .safetensors file beside the index"), std::string::npos) << e;
  EXPECT_EQ(cdn_gets().size(), 0u);
}

TEST_F(CheckpointTest, SingleFileCheckpointWithVocabAndMergesOrSentencePiece) {
  add("org/bpe", "config.json", "{}");
  add("org/bpe", "model.safetensors", random_bytes(20000, "single"));
  add("org/bpe", "vocab.json", "{\"a\": 0}");
  add("org/bpe", "merges.txt", "#version: 0.2\n");
  add("org/bpe", "added_tokens.json", "{}");
  add("org/bpe", "tokenizer.model", "unused: vocab.json + merges.txt come first");
  add("org/spm", "config.json", "{}");
  add("org/spm", "model.safetensors", random_bytes(20000, "single-spm"));
  add("org/spm", "tokenizer.model", "spm");
  add("org/spm", "tokenizer_config.json", "{}");
  add("org/spm", "consolidated.safetensors", random_bytes(1000, "mistral consolidated"));
  start();
  EXPECT_EQ(files_in(resolve_model("org/bpe", opts())),
            (std::set<std::string>{"config.json", "model.safetensors", "vocab.json", "merges.txt", "added_tokens.json"}));
  EXPECT_EQ(files_in(resolve_model("org/spm", opts())),
            (std::set<std::string>{"config.json", "model.safetensors", "tokenizer.model", "tokenizer_config.json"}));
}

TEST_F(CheckpointTest, GgufReposKeepQuantSelectionAndOtherReposSayWhatTheyLack) {
  add("org/tiny-GGUF", "m-Q4_K_M.gguf", random_bytes(3000, "q4"));
  add("org/tiny-GGUF", "m-Q8_0.gguf", random_bytes(3000, "q8"));
  add("org/tiny-GGUF", "config.json", "{}");
  add("org/tiny-GGUF", "model.safetensors", random_bytes(100, "st"));
  add("org/nothing", "README.md", "# empty\n");
  add("org/noweights", "config.json", "{}");
  add("org/noweights", "pytorch_model.bin", "x");
  add("org/notok", "config.json", "{}");
  add("org/notok", "model.safetensors", "x");
  start();
  std::string q8 = resolve_model("org/tiny-GGUF:q8_0", opts());
  EXPECT_EQ(read_file(q8), source("org/tiny-GGUF", "m-Q8_0.gguf"));
  EXPECT_EQ(resolve_model("org/tiny-GGUF", opts()), resolve_gguf("org/tiny-GGUF", opts()));
  EXPECT_EQ(error_of([&] { resolve_model("org/nothing", opts()); }),
            "org/nothing: the repo has no .gguf files and no config.json (not a model ignis can load)");
  EXPECT_EQ(error_of([&] { resolve_model("org/noweights", opts()); }),
            "org/noweights: the repo has no .gguf files and no safetensors weights (model.safetensors or "
            "model.safetensors.index.json); .bin/.pth checkpoints are not supported");
  EXPECT_EQ(error_of([&] { resolve_model("org/notok", opts()); }),
            "org/notok: the repo has no tokenizer (tokenizer.json, vocab.json + merges.txt, or tokenizer.model)");
  EXPECT_EQ(error_of([&] { resolve_model(std::string(kSharded) + ":Q4_K_M", opts()); }),
            "org/sharded: the repo has no .gguf files, so ':Q4_K_M' selects nothing; pass -hf org/sharded to "
            "download its safetensors checkpoint");
  EXPECT_EQ(cdn_gets().size(), 2u);  // the two GGUF files only
}

TEST(CheckpointSelect, PureSelection) {
  EXPECT_TRUE(has_model_gguf({"a/X-Q4_K_M.GGUF"}));
  EXPECT_FALSE(has_model_gguf({"mmproj-f16.gguf", "config.json"}));
  EXPECT_EQ(select_checkpoint("o/n", {"tokenizer.json", "model.safetensors", "config.json", "vocab.json",
                                      "merges.txt", "tokenizer.model", "sub/config.json"}),
            (std::vector<std::string>{"config.json", "model.safetensors", "tokenizer.json"}));
  // The index wins over a single file (a repo holding both is sharded; model.safetensors would be stale).
  EXPECT_EQ(select_checkpoint("o/n", {"config.json", "model.safetensors", "model.safetensors.index.json",
                                      "tokenizer.model", "generation_config.json"}),
            (std::vector<std::string>{"config.json", "generation_config.json", "model.safetensors.index.json",
                                      "tokenizer.model"}));
  // Sub-folder copies do not count.
  EXPECT_NE(error_of([] { select_checkpoint("o/n", {"config.json", "original/model.safetensors", "tokenizer.json"}); })
                .find("no safetensors weights"),
            std::string::npos);
}

TEST(CheckpointSelect, IndexShards) {
  EXPECT_EQ(index_shards(index_json({{"a", "m-2.safetensors"}, {"b", "m-1.safetensors"}, {"c", "m-2.safetensors"}}),
                         "idx"),
            (std::vector<std::string>{"m-1.safetensors", "m-2.safetensors"}));
  EXPECT_EQ(error_of([] { index_shards("{", "idx"); }), "idx: not a JSON object");
  EXPECT_EQ(error_of([] { index_shards("{\"metadata\": {}}", "idx"); }), "idx: no \"weight_map\" object naming the shards");
  EXPECT_EQ(error_of([] { index_shards("{\"weight_map\": {\"t\": 3}}", "idx"); }), "idx: weight_map[\"t\"] is not a file name");
  for (const char* bad : {"sub/m.safetensors", ".hidden.safetensors", "m.bin", ""})
    EXPECT_NE(error_of([&] { index_shards(index_json({{"t", bad}}), "idx"); }).find("is not a .safetensors file"),
              std::string::npos)
        << bad;
}

}  // namespace
