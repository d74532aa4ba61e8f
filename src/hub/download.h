// Downloading one file of a repo into the cache: metadata (HEAD), blob download with resume and
// sha256 check, snapshot link.
//
// Thread-safe: concurrent downloads of one blob serialise on blobs/<etag>.lock (flock), so two
// processes never write the same .incomplete file.
#pragma once

#include <cstdint>
#include <string>

#include "hub/cache.h"
#include "hub/hub.h"

namespace ignis::hub {

struct FileMeta {
  std::string commit;    // X-Repo-Commit
  std::string etag;      // X-Linked-Etag, else ETag; normalised (no W/, no quotes)
  std::string url;       // where the content is: the resolve URL, or the redirect's Location
  int64_t size = -1;     // X-Linked-Size, else Content-Length; -1 unknown
};

// {endpoint}/{repo}/resolve/{revision}/{file} (file path segments percent-encoded).
std::string resolve_url(const HubOptions& opts, const std::string& repo, const std::string& revision,
                        const std::string& file);

// HEAD the resolve URL; follows relative redirects (renamed repos) until a response carries an ETag.
FileMeta file_metadata(const HubOptions& opts, const std::string& repo, const std::string& revision,
                       const std::string& file);

// Downloads `file` (unless its blob is already there) and links snapshots/<meta.commit>/<file>;
// returns the snapshot path. Resumes blobs/<etag>.incomplete with a Range request, retries a transfer
// that broke after making progress, and checks the sha256 when the ETag is one (a mismatch deletes the
// partial blob and throws).
std::string download_file(const HubOptions& opts, const RepoCache& cache, const std::string& repo,
                          const std::string& file, const FileMeta& meta);

}  // namespace ignis::hub
