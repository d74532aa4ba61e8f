// Downloads from the fake hub (tests/hub_server/hub_server.py): cache layout, cache hits without
// requests, resume, sha256 check, token, offline mode, quant selection, failing fast.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "hub/hub.h"
#include "hub/sha256.h"
#include "hub_server.h"

using namespace ignis::hub;
using namespace hub_test;

namespace {

constexpr const char* kRepo = "org/tiny-GGUF";
constexpr size_t kBig = 300000;  // bytes of the Q4_K_M fake model

class HubTest : public FakeHubTest {
 protected:
  HubTest() : FakeHubTest("ignis_hub_test_") {}
  void SetUp() override {
    FakeHubTest::SetUp();
    add(kRepo, "m-Q4_K_M.gguf", random_bytes(kBig, "q4km"));
    add(kRepo, "m-Q8_0.gguf", random_bytes(120000, "q80"));
    add(kRepo, "README.md", "# tiny\n");
    add("org/split-GGUF", "Q8_0/s-Q8_0-00001-of-00003.gguf", random_bytes(70000, "p1"));
    add("org/split-GGUF", "Q8_0/s-Q8_0-00002-of-00003.gguf", random_bytes(70000, "p2"));
    add("org/split-GGUF", "Q8_0/s-Q8_0-00003-of-00003.gguf", random_bytes(50000, "p3"));
    add("org/ckpt", "config.json", "{\"architectures\": [\"Qwen2ForCausalLM\"]}\n");
    add("org/ckpt", "model.safetensors", random_bytes(90000, "st"));
    add("org/ckpt", "sub/tokenizer.json", "{\"model\": {}}\n");
  }
  size_t count(const std::string& method, const std::string& path_part) const {
    size_t n = 0;
    for (const auto& e : server_->log())
      if (e["method"] == method && e["path"].get<std::string>().find(path_part) != std::string::npos) ++n;
    return n;
  }

  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const ignis::Error& e) {
      return e.what();
    }
    return "(no error)";
  }
};

TEST_F(HubTest, DownloadsIntoTheHubCacheLayout) {
  start();
  std::string path = resolve_gguf(kRepo, opts());
  EXPECT_EQ(read_file(path), source(kRepo, "m-Q4_K_M.gguf"));
  fs::path repo = repo_dir(kRepo);
  EXPECT_EQ(repo, dir_ / "cache" / "models--org--tiny-GGUF");
  std::string commit = read_file(repo / "refs" / "main");
  ASSERT_EQ(commit.size(), 40u);
  EXPECT_EQ(fs::path(path), repo / "snapshots" / commit / "m-Q4_K_M.gguf");
  std::string sha = sha256_file(path);
  ASSERT_TRUE(fs::is_symlink(path));
  EXPECT_EQ(fs::read_symlink(path).string(), "../../blobs/" + sha);
  EXPECT_TRUE(fs::is_regular_file(repo / "blobs" / sha));
  EXPECT_FALSE(fs::exists(repo / "blobs" / (sha + ".incomplete")));
  // The API, one HEAD on resolve (302 to the CDN), one GET on the CDN; nothing else downloaded.
  EXPECT_EQ(count("GET", "/api/models/org/tiny-GGUF"), 1u);
  EXPECT_EQ(count("HEAD", "/resolve/" + commit + "/m-Q4_K_M.gguf"), 1u);
  ASSERT_EQ(cdn_gets().size(), 1u);
  EXPECT_EQ(cdn_gets()[0]["path"], "/cdn/" + sha);
}

TEST_F(HubTest, SecondCallIsServedFromTheCacheWithoutRequests) {
  start();
  std::string first = resolve_gguf(std::string(kRepo) + ":Q4_K_M", opts());
  size_t n = server_->log().size();
  EXPECT_EQ(resolve_gguf(kRepo, opts()), first);
  EXPECT_EQ(resolve_gguf(std::string(kRepo) + ":q4_k_m", opts()), first);
  EXPECT_EQ(server_->log().size(), n);
  // Another quant of the same repo is not in the cache: it is downloaded into the same snapshot.
  std::string q8 = resolve_gguf(std::string(kRepo) + ":q8_0", opts());
  EXPECT_EQ(fs::path(q8).parent_path(), fs::path(first).parent_path());
  EXPECT_EQ(read_file(q8), source(kRepo, "m-Q8_0.gguf"));
}

TEST_F(HubTest, ResumesAfterTheConnectionDrops) {
  start({"--drop-after", "100000"});
  std::string path = resolve_gguf(kRepo, opts());
  EXPECT_EQ(read_file(path), source(kRepo, "m-Q4_K_M.gguf"));
  auto gets = cdn_gets();
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_TRUE(gets[0]["range"].is_null());
  EXPECT_EQ(gets[1]["range"], "bytes=100000-");
}

TEST_F(HubTest, ResumesAPartialFileLeftByAnEarlierRun) {
  start();
  std::string data = source(kRepo, "m-Q4_K_M.gguf");
  std::string sha = sha256_file((root_ / kRepo / "m-Q4_K_M.gguf").string());
  write_file(repo_dir(kRepo) / "blobs" / (sha + ".incomplete"), data.substr(0, 123456));
  EXPECT_EQ(read_file(resolve_gguf(kRepo, opts())), data);
  auto gets = cdn_gets();
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0]["range"], "bytes=123456-");
}

TEST_F(HubTest, BrokenTransferKeepsThePartialFileAndSaysHowToResume) {
  start({"--drop-after", "0", "--fault-times", "100"});
  std::string data = source(kRepo, "m-Q4_K_M.gguf");
  std::string sha = sha256_file((root_ / kRepo / "m-Q4_K_M.gguf").string());
  fs::path part = repo_dir(kRepo) / "blobs" / (sha + ".incomplete");
  write_file(part, data.substr(0, 1000));
  std::string e = error_of([&] { resolve_gguf(kRepo, opts()); });
  EXPECT_NE(e.find("download of m-Q4_K_M.gguf from 127.0.0.1 stopped after 1000 of 300000 bytes"), std::string::npos)
      << e;
  EXPECT_NE(e.find("run the command again to resume"), std::string::npos) << e;
  EXPECT_EQ(read_file(part), data.substr(0, 1000));
}

TEST_F(HubTest, ConcurrentCallsDownloadOnce) {
  start();
  std::string a, b;
  std::thread t1([&] { a = resolve_gguf(kRepo, opts()); });
  std::thread t2([&] { b = resolve_gguf(kRepo, opts()); });
  t1.join();
  t2.join();
  EXPECT_EQ(a, b);
  EXPECT_EQ(read_file(a), source(kRepo, "m-Q4_K_M.gguf"));
  EXPECT_EQ(cdn_gets().size(), 1u);  // the second waited on the blob's lock, then found it
}

TEST_F(HubTest, StalledTransferIsAbortedAndResumed) {
  start({"--stall-after", "50000", "--stall-seconds", "20"});
  HubOptions o = opts();
  o.low_speed_time_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(read_file(resolve_gguf(kRepo, o)), source(kRepo, "m-Q4_K_M.gguf"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  auto gets = cdn_gets();
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_EQ(gets[1]["range"], "bytes=50000-");
}

TEST_F(HubTest, Sha256MismatchDeletesTheDownloadAndFails) {
  start({"--corrupt", "Q4_K_M"});
  std::string e = error_of([&] { resolve_gguf(kRepo, opts()); });
  EXPECT_NE(e.find("org/tiny-GGUF/m-Q4_K_M.gguf: sha256 mismatch"), std::string::npos) << e;
  std::string sha = sha256_file((root_ / kRepo / "m-Q4_K_M.gguf").string());
  EXPECT_NE(e.find(sha), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(repo_dir(kRepo) / "blobs" / sha));
  EXPECT_FALSE(fs::exists(repo_dir(kRepo) / "blobs" / (sha + ".incomplete")));
  EXPECT_FALSE(fs::exists(repo_dir(kRepo) / "refs" / "main"));
}

TEST_F(HubTest, TokenIsSentToTheHubButNotToAnotherHost) {
  // The CDN redirect goes to "localhost", the endpoint is "127.0.0.1": another host.
  start({"--token", "hf_secret", "--cdn-host", "localhost"});
  std::string e = error_of([&] { resolve_gguf(kRepo, opts()); });
  EXPECT_NE(e.find("HTTP 401"), std::string::npos) << e;
  EXPECT_NE(e.find("HF_TOKEN"), std::string::npos) << e;
  HubOptions o = opts();
  o.token = "hf_secret";
  EXPECT_EQ(read_file(resolve_gguf(kRepo, o)), source(kRepo, "m-Q4_K_M.gguf"));
  size_t hub_requests = 0;
  for (const auto& r : server_->log()) {
    std::string path = r["path"];
    if (path.rfind("/cdn/", 0) == 0) {
      EXPECT_EQ(r["host"].get<std::string>().rfind("localhost:", 0), 0u);
      EXPECT_TRUE(r["auth"].is_null()) << r.dump();
    } else if (!r["auth"].is_null()) {
      EXPECT_EQ(r["auth"], "Bearer hf_secret");
      ++hub_requests;
    }
  }
  EXPECT_EQ(hub_requests, 2u);  // the API and the HEAD on resolve
  EXPECT_EQ(cdn_gets().size(), 1u);
}

TEST_F(HubTest, OfflineAnswersFromTheCacheOnly) {
  HubOptions o = opts();  // no server: any request would fail
  o.offline = true;
  std::string e = error_of([&] { resolve_gguf(kRepo, o); });
  EXPECT_NE(e.find("org/tiny-GGUF:Q4_K_M is not in the cache"), std::string::npos) << e;
  EXPECT_NE(e.find("offline"), std::string::npos) << e;
  EXPECT_NE(e.find("cached quants: none"), std::string::npos) << e;

  start();
  std::string path = resolve_gguf(kRepo, opts());
  server_.reset();
  o = opts();
  o.offline = true;
  EXPECT_EQ(resolve_gguf(kRepo, o), path);
  e = error_of([&] { resolve_gguf(std::string(kRepo) + ":Q8_0", o); });
  EXPECT_NE(e.find("cached quants: Q4_K_M"), std::string::npos) << e;
  RepoInfo info = repo_info(kRepo, o);
  EXPECT_EQ(info.files, std::vector<std::string>{"m-Q4_K_M.gguf"});
}

TEST_F(HubTest, QuantSelectionAgainstTheServer) {
  start();
  EXPECT_EQ(read_file(resolve_gguf(std::string(kRepo) + ":Q8_0", opts())), source(kRepo, "m-Q8_0.gguf"));
  std::string e = error_of([&] { resolve_gguf(std::string(kRepo) + ":IQ2_XXS", opts()); });
  EXPECT_NE(e.find("no .gguf file matches quant 'IQ2_XXS'; available: Q4_K_M, Q8_0"), std::string::npos) << e;
  e = error_of([&] { resolve_gguf("org/ckpt", opts()); });
  EXPECT_NE(e.find("org/ckpt: the repo has no .gguf files"), std::string::npos) << e;
  e = error_of([&] { resolve_gguf("org/missing", opts()); });
  EXPECT_NE(e.find("HTTP 401"), std::string::npos) << e;
  EXPECT_NE(e.find("org/missing"), std::string::npos) << e;
}

TEST_F(HubTest, SplitModelDownloadsEveryPart) {
  start();
  std::string path = resolve_gguf("org/split-GGUF:Q8_0", opts());
  EXPECT_EQ(fs::path(path).filename(), "s-Q8_0-00001-of-00003.gguf");
  for (int i = 1; i <= 3; ++i) {
    std::string name = "Q8_0/s-Q8_0-0000" + std::to_string(i) + "-of-00003.gguf";
    EXPECT_EQ(read_file(fs::path(path).parent_path() / fs::path(name).filename()), source("org/split-GGUF", name));
  }
  // A part in a folder links with one more "../".
  EXPECT_EQ(fs::read_symlink(path).string().rfind("../../../blobs/", 0), 0u);
  EXPECT_EQ(cdn_gets().size(), 3u);
}

TEST_F(HubTest, FetchFilesForACheckpoint) {
  start();
  std::vector<std::string> files = {"config.json", "sub/tokenizer.json", "model.safetensors"};
  auto paths = fetch_files("org/ckpt", files, opts());
  ASSERT_EQ(paths.size(), 3u);
  for (size_t i = 0; i < files.size(); ++i) EXPECT_EQ(read_file(paths[i]), source("org/ckpt", files[i])) << files[i];
  // Small files come straight from resolve (200), named by their git blob sha1 ETag.
  EXPECT_EQ(count("GET", "/resolve/"), 2u);
  EXPECT_EQ(cdn_gets().size(), 1u);
  EXPECT_EQ(fs::read_symlink(paths[0]).string().size(), std::string("../../blobs/").size() + 40);
  size_t n = server_->log().size();
  EXPECT_EQ(fetch_files("org/ckpt", files, opts()), paths);
  EXPECT_EQ(server_->log().size(), n);
  std::string e = error_of([&] { fetch_files("org/ckpt", {"nope.bin"}, opts()); });
  EXPECT_NE(e.find("org/ckpt: no file nope.bin at revision main"), std::string::npos) << e;
  HubOptions o = opts();
  o.offline = true;
  EXPECT_EQ(fetch_files("org/ckpt", {"config.json"}, o)[0], paths[0]);
  e = error_of([&] { fetch_files("org/ckpt", {"README.md"}, o); });
  EXPECT_NE(e.find("offline"), std::string::npos) << e;
}

TEST_F(HubTest, RefusedConnectionFailsFastWithOneLine) {
  HubOptions o = opts();  // nothing listens on the port
  auto t0 = std::chrono::steady_clock::now();
  std::string e = error_of([&] { resolve_gguf(kRepo, o); });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  std::string want = "cannot reach 127.0.0.1 to download org/tiny-GGUF (" + o.endpoint + "/api/models/org/tiny-GGUF): ";
  EXPECT_EQ(e.rfind(want, 0), 0u) << e;
  EXPECT_NE(e.find("; to use a local file pass -m FILE.gguf, or --offline to use the cache"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  o.endpoint = "huggingface.co";
  e = error_of([&] { resolve_gguf(kRepo, o); });
  EXPECT_EQ(e, "hub endpoint 'huggingface.co' (HF_ENDPOINT) is not an http:// or https:// URL");
}

TEST_F(HubTest, FollowsTheHubsRedirectForARenamedRepo) {
  start({"--rename", "org/old-GGUF=org/tiny-GGUF"});
  std::string path = resolve_gguf("org/old-GGUF", opts());
  EXPECT_EQ(read_file(path), source(kRepo, "m-Q4_K_M.gguf"));
  EXPECT_EQ(fs::path(path).parent_path().parent_path().parent_path(), repo_dir("org/old-GGUF"));
  // API (307 + 200), resolve HEAD (307 + 302), CDN GET.
  EXPECT_EQ(count("HEAD", "/org/old-GGUF/resolve/"), 1u);
  EXPECT_EQ(count("HEAD", "/org/tiny-GGUF/resolve/"), 1u);
  EXPECT_EQ(count("GET", "/api/models/org/tiny-GGUF"), 1u);
  EXPECT_EQ(cdn_gets().size(), 1u);
}

TEST_F(HubTest, RefreshAsksTheHubAgain) {
  start();
  std::string first = resolve_gguf(kRepo, opts());
  write_file(root_ / kRepo / ".commit", std::string(40, 'a'));  // a new commit, same content
  HubOptions o = opts();
  o.refresh = true;
  std::string second = resolve_gguf(kRepo, o);
  EXPECT_EQ(second, (repo_dir(kRepo) / "snapshots" / std::string(40, 'a') / "m-Q4_K_M.gguf").string());
  EXPECT_EQ(read_file(repo_dir(kRepo) / "refs" / "main"), std::string(40, 'a'));
  EXPECT_EQ(cdn_gets().size(), 1u);  // the blob was already there
  EXPECT_EQ(read_file(second), read_file(first));
}

// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_.c_str(), old_.c_str(), 1); else ::unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

TEST(HubEnv, DefaultsFollowHuggingfaceHub) {
  ScopedEnv a("HF_ENDPOINT", "http://mirror.example:8080/"), b("HF_TOKEN", "hf_abc"), c("IGNIS_CACHE", nullptr),
      d("HF_HUB_CACHE", nullptr), e("HF_HOME", "/tmp/ignis-hf-home"), f("HF_HUB_OFFLINE", "1"),
      g("XDG_CACHE_HOME", nullptr);
  HubOptions o = with_env_defaults({});
  EXPECT_EQ(o.endpoint, "http://mirror.example:8080");
  EXPECT_EQ(o.token, "hf_abc");
  EXPECT_EQ(o.cache_dir, "/tmp/ignis-hf-home/hub");
  EXPECT_TRUE(o.offline);
  {
    ScopedEnv h("HF_HUB_CACHE", "/tmp/hc"), i("HF_HUB_OFFLINE", "0"), j("HF_ENDPOINT", nullptr);
    o = with_env_defaults({});
    EXPECT_EQ(o.cache_dir, "/tmp/hc");
    EXPECT_FALSE(o.offline);
    EXPECT_EQ(o.endpoint, "https://huggingface.co");
  }
  {
    ScopedEnv h("HF_HOME", nullptr), i("HOME", "/home/someone");
    EXPECT_EQ(with_env_defaults({}).cache_dir, "/home/someone/.cache/huggingface/hub");
  }
  HubOptions set;
  set.endpoint = "http://x";
  set.cache_dir = "/c";
  o = with_env_defaults(set);  // explicit values win
  EXPECT_EQ(o.endpoint, "http://x");
  EXPECT_EQ(o.cache_dir, "/c");
}

TEST(HubEnv, TokenFileAsHuggingfaceHub) {
  fs::path home = fs::temp_directory_path() / ("ignis_hub_env_" + std::to_string(getpid()));
  write_file(home / "token", "hf_from_file\n");
  {
    ScopedEnv a("HF_TOKEN", nullptr), b("HF_HOME", home.c_str()), c("HF_TOKEN_PATH", nullptr),
        d("HF_HUB_DISABLE_IMPLICIT_TOKEN", nullptr);
    EXPECT_EQ(with_env_defaults({}).token, "hf_from_file");
    ScopedEnv e("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1");
    EXPECT_EQ(with_env_defaults({}).token, "");
  }
  fs::remove_all(home);
}

}  // namespace
