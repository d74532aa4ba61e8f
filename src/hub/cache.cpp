#include "hub/cache.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"

namespace fs = std::filesystem;

namespace ignis::hub {
namespace {

// A name for a temporary sibling of `path` unique across threads and processes.
std::string temp_name(const std::string& path) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}.tmp.{}.{:x}", path, getpid(), rng());
}

}  // namespace

void check_repo_file(const std::string& file) {
  bool ok = !file.empty() && file.size() < 1024 && file[0] != '/' &&
            file.find('\\') == std::string::npos && file.find('\0') == std::string::npos;
  std::stringstream ss(file);
  for (std::string part; ok && std::getline(ss, part, '/');)
    ok = !part.empty() && part != "." && part != "..";
  if (!ok || file.back() == '/') fail("'{}': not a valid file path inside a repo", file);
}

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

RepoCache::RepoCache(const std::string& cache_dir, const std::string& repo) {
  std::string name = repo;
  for (size_t p = name.find('/'); p != std::string::npos; p = name.find('/', p + 2)) name.replace(p, 1, "--");
  root_ = (fs::path(cache_dir) / ("models--" + name)).string();
}

std::string RepoCache::blob_path(const std::string& etag) const {
  return (fs::path(root_) / "blobs" / etag).string();
}

std::string RepoCache::lock_path(const std::string& etag) const {
  fs::path dir = fs::path(root_).parent_path() / ".locks" / fs::path(root_).filename();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("cannot create {}: {}", dir.string(), ec.message());
  return (dir / (etag + ".lock")).string();
}

std::string RepoCache::snapshot_path(const std::string& commit, const std::string& file) const {
  return (fs::path(root_) / "snapshots" / commit / file).string();
}

std::string RepoCache::snapshot_dir(const std::string& commit) const {
  return (fs::path(root_) / "snapshots" / commit).string();
}

std::optional<std::string> RepoCache::resolve_revision(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(fs::path(root_) / "refs" / revision);
  std::string commit;
  if (!in || !std::getline(in, commit)) return std::nullopt;
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (is_commit_hash(revision)) return;  // huggingface_hub keeps no ref for a commit hash
  fs::path ref = fs::path(root_) / "refs" / revision;
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  std::string tmp = temp_name(ref.string());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << commit;  // no newline, as huggingface_hub writes it
    if (!out) fail("cannot write {}", tmp);
  }
  fs::rename(tmp, ref, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(tmp, ec);
    fail("cannot write {}: {}", ref.string(), why);
  }
}

bool RepoCache::has_file(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::is_regular_file(snapshot_path(commit, file), ec);  // follows the symlink
}

std::vector<std::string> RepoCache::snapshot_files(const std::string& commit) const {
  std::vector<std::string> out;
  fs::path dir = fs::path(root_) / "snapshots" / commit;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code ec2;
    if (fs::is_regular_file(it->path(), ec2)) out.push_back(it->path().lexically_relative(dir).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void RepoCache::link(const std::string& commit, const std::string& file, const std::string& etag) const {
  fs::path dst = snapshot_path(commit, file);
  std::error_code ec;
  fs::create_directories(dst.parent_path(), ec);
  if (ec) fail("cannot create {}: {}", dst.parent_path().string(), ec.message());
  std::string up = "../../";
  for (char c : file)
    if (c == '/') up += "../";
  std::string tmp = temp_name(dst.string());
  fs::create_symlink(up + "blobs/" + etag, tmp, ec);
  if (!ec) fs::rename(tmp, dst, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(tmp, ec);
    fail("cannot create the link {}: {}", dst.string(), why);
  }
}

}  // namespace ignis::hub
