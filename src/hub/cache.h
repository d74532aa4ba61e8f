// The Hugging Face hub cache layout on disk (see hub.h for the picture).
//
// RepoCache names the paths of one repo's cache folder and reads/writes refs and snapshot links; blob
// downloads live in download.h. Thread-safe: no state besides the path; writes of refs and links are
// atomic renames, so concurrent writers leave a valid cache.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ignis::hub {

// Throws ignis::Error unless `file` is a safe repo-relative path (no absolute path, "..", "\", NUL).
void check_repo_file(const std::string& file);

// True for a 40-hex-digit git commit hash.
bool is_commit_hash(const std::string& s);

class RepoCache {
 public:
  RepoCache(const std::string& cache_dir, const std::string& repo);

  const std::string& root() const { return root_; }  // <cache_dir>/models--ORG--NAME
  std::string blob_path(const std::string& etag) const;
  // <cache_dir>/.locks/models--ORG--NAME/<etag>.lock (where huggingface_hub keeps its locks); the folder
  // is created.
  std::string lock_path(const std::string& etag) const;
  std::string snapshot_path(const std::string& commit, const std::string& file) const;
  std::string snapshot_dir(const std::string& commit) const;  // <root>/snapshots/<commit>, no trailing '/'

  // The commit `revision` stands for: itself when it is a commit hash, else refs/<revision>.
  std::optional<std::string> resolve_revision(const std::string& revision) const;
  void write_ref(const std::string& revision, const std::string& commit) const;

  // snapshots/<commit>/<file> exists and its blob is there.
  bool has_file(const std::string& commit, const std::string& file) const;
  // Repo-relative paths of the complete files in snapshots/<commit>, sorted.
  std::vector<std::string> snapshot_files(const std::string& commit) const;
  // snapshots/<commit>/<file> -> ../../blobs/<etag> (relative symlink, replaced atomically).
  void link(const std::string& commit, const std::string& file, const std::string& etag) const;

 private:
  std::string root_;
};

}  // namespace ignis::hub
