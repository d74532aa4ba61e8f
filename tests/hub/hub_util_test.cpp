// Building blocks of the hub client: SHA-256, URL helpers, cache paths (no server).
#include <gtest/gtest.h>

#include "core/error.h"
#include "hub/cache.h"
#include "hub/http.h"
#include "hub/sha256.h"

using namespace ignis::hub;

TEST(Sha256, NistVectors) {
  Sha256 h;
  h.update("abc", 3);
  EXPECT_EQ(h.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  h.reset();
  EXPECT_EQ(h.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  h.reset();
  std::string a(1000000, 'a');  // FIPS 180-2 long message, fed in uneven pieces
  for (size_t i = 0; i < a.size();) {
    size_t n = std::min<size_t>(a.size() - i, 1 + (i % 777));
    h.update(a.data() + i, n);
    i += n;
  }
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_TRUE(is_sha256_hex("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
  EXPECT_FALSE(is_sha256_hex("CDC76E5C9914FB9281A1C7E284D73E67F1809A48A497200E046D39CCC7112CD0"));
  EXPECT_FALSE(is_sha256_hex("0187f3b09d66cef7911083ad49f890f5a6589589"));  // a git sha1
}

TEST(Url, Host) {
  EXPECT_EQ(url_host("https://huggingface.co/api/models/a/b"), "huggingface.co");
  EXPECT_EQ(url_host("http://user@Mirror.Example:8080"), "mirror.example");
  EXPECT_EQ(url_host("http://[::1]:9/x"), "[::1]");
  EXPECT_EQ(url_host("not a url"), "");
}

TEST(Url, ResolveLocation) {
  std::string base = "https://huggingface.co/a/b/resolve/main/dir/m.gguf";
  EXPECT_EQ(resolve_location(base, "https://cdn-lfs.hf.co/x?y=1"), "https://cdn-lfs.hf.co/x?y=1");
  EXPECT_EQ(resolve_location(base, "//cdn.example/x"), "https://cdn.example/x");
  EXPECT_EQ(resolve_location(base, "/c/resolve/main/m.gguf"), "https://huggingface.co/c/resolve/main/m.gguf");
  EXPECT_EQ(resolve_location(base, "n.gguf"), "https://huggingface.co/a/b/resolve/main/dir/n.gguf");
}

TEST(RepoCache, HubLayoutPaths) {
  RepoCache c("/cache", "Qwen/Qwen2.5-1.5B-Instruct-GGUF");
  EXPECT_EQ(c.root(), "/cache/models--Qwen--Qwen2.5-1.5B-Instruct-GGUF");
  EXPECT_EQ(c.blob_path("abc"), "/cache/models--Qwen--Qwen2.5-1.5B-Instruct-GGUF/blobs/abc");
  EXPECT_EQ(c.snapshot_path(std::string(40, 'f'), "a/b.gguf"),
            "/cache/models--Qwen--Qwen2.5-1.5B-Instruct-GGUF/snapshots/" + std::string(40, 'f') + "/a/b.gguf");
  EXPECT_TRUE(is_commit_hash(std::string(40, 'a')));
  EXPECT_FALSE(is_commit_hash("main"));
  EXPECT_EQ(c.resolve_revision(std::string(40, '0')), std::string(40, '0'));
  EXPECT_FALSE(c.resolve_revision("main").has_value());  // no such folder
}
