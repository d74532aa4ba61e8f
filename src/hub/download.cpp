#include "hub/download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/large_writes.h"
#include "hub/client.h"
#include "hub/http.h"
#include "hub/progress.h"
#include "hub/sha256.h"

namespace fs = std::filesystem;

namespace ignis::hub {
namespace {

constexpr int kMaxRetries = 5;

std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

bool safe_blob_name(const std::string& e) {
  if (e.empty() || e.size() > 200 || e[0] == '.') return false;
  for (char c : e)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

int64_t parse_size(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) return -1;
  return std::stoll(s);
}

std::string percent_encode_path(const std::string& p) {
  std::string out;
  for (unsigned char c : p) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// Holds an exclusive flock on a lock file for the lifetime of the object.
class FileLock {
 public:
  // NOTE: huggingface_hub locks the same file with flock (python filelock), so the two interoperate.
  FileLock(const std::string& path, const std::string& what) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create the lock file {}: {}", path, std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    std::fprintf(stderr, "waiting for another download of %s to finish (lock %s)\n", what.c_str(), path.c_str());
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) fail("cannot lock {}: {}", path, std::strerror(errno));
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

int64_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// Hashes the first `n` bytes of `path` into `h` (after a reset).
void hash_prefix(Sha256& h, const std::string& path, int64_t n) {
  h.reset();
  if (n == 0) return;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("cannot read {}", path);
  std::vector<char> buf(1 << 20);
  int64_t left = n;
  while (left > 0) {
    size_t got = std::fread(buf.data(), 1, std::min<int64_t>(left, buf.size()), f);
    if (got == 0) break;
    h.update(buf.data(), got);
    left -= got;
  }
  std::fclose(f);
  if (left) fail("cannot read {}", path);
}

// Fails before downloading when the cache's file system cannot hold `need` more bytes.
void check_free_space(const fs::path& dir, int64_t need, const std::string& file) {
  std::error_code ec;
  auto space = fs::space(dir, ec);
  if (ec || need <= 0 || static_cast<uintmax_t>(need) <= space.available) return;
  fail("not enough disk space for {} in {}: it needs {:.1f} MB more, {:.1f} MB are free", file, dir.string(),
       need / 1e6, space.available / 1e6);
}

struct Transfer {
  std::string path;       // the .incomplete file
  int64_t offset = 0;     // bytes in the file before this request
  int64_t written = 0;    // bytes written by this request
  std::FILE* out = nullptr;
  std::unique_ptr<char[]> out_buffer;  // out's (core/large_writes.h), until it is closed
  Sha256* hash = nullptr;
  ProgressBar* bar = nullptr;
  bool status_ok = false;
  std::string write_error;
};

// Accepts a 200 (restarts the file) or a 206 starting at the offset; anything else aborts.
bool on_body(Transfer& t, const HttpResponse& r, const char* data, size_t n) {
  if (!t.out) {
    if (r.status == 206) {
      std::string cr = r.header("content-range");  // "bytes START-END/TOTAL"
      if (cr.rfind(fmt::format("bytes {}-", t.offset), 0) != 0) {
        t.write_error = "the server answered the range request with Content-Range '" + cr + "'";
        return false;
      }
      t.out = std::fopen(t.path.c_str(), "ab");
    } else if (r.status == 200) {
      t.offset = 0;  // no range support: start over
      if (t.hash) t.hash->reset();
      t.out = std::fopen(t.path.c_str(), "wb");
    } else {
      return false;
    }
    if (!t.out) {
      t.write_error = fmt::format("cannot write {}: {}", t.path, std::strerror(errno));
      return false;
    }
    t.out_buffer = large_write_buffer(t.out);
    t.status_ok = true;
  }
  if (std::fwrite(data, 1, n, t.out) != n) {
    t.write_error = fmt::format("cannot write {}: {}", t.path, std::strerror(errno));
    return false;
  }
  if (t.hash) t.hash->update(data, n);
  t.written += n;
  if (t.bar) t.bar->update(t.offset + t.written);
  return true;
}

// One GET of `url` into t.path from t.offset on (a Range request when it is > 0).
HttpResponse run_transfer(const HubOptions& opts, const std::string& url, Transfer& t) {
  HttpRequest req = hub_request(opts, url);
  req.follow_redirects = true;
  if (t.offset > 0) req.headers.push_back(fmt::format("Range: bytes={}-", t.offset));
  HttpResponse r = http_request(req, [&](const HttpResponse& resp, const char* d, size_t n) {
    return on_body(t, resp, d, n);
  });
  if (t.out && std::fclose(t.out) != 0 && t.write_error.empty())
    t.write_error = fmt::format("cannot write {}: {}", t.path, std::strerror(errno));
  t.out = nullptr;
  t.out_buffer.reset();
  if (!t.write_error.empty()) fail("{}", t.write_error);
  return r;
}

// Downloads meta.url into `part` until it is complete; keeps what arrived when it throws.
void fetch_blob(const HubOptions& opts, const FileMeta& meta, const std::string& part, const std::string& label,
                Sha256* hash) {
  int64_t hashed = -1;  // bytes of `part` that `hash` covers; -1: not in sync
  ProgressBar bar(label, meta.size, file_size_or_zero(part), opts.progress);
  for (int attempt = 0;; ++attempt) {
    int64_t have = file_size_or_zero(part);
    if (meta.size >= 0 && have > meta.size) {  // a stale partial file: start over
      std::error_code ec;
      fs::remove(part, ec);
      have = 0;
    }
    if (hash && hashed != have) hash_prefix(*hash, part, have);
    hashed = have;
    if (meta.size >= 0 && have == meta.size) break;
    Transfer t;
    t.path = part;
    t.offset = have;
    t.hash = hash;
    t.bar = &bar;
    HttpResponse r = run_transfer(opts, meta.url, t);
    hashed = t.status_ok ? t.offset + t.written : -1;
    check_reachable(r, meta.url, label);
    if (!t.status_ok) {
      if (r.status == 416 && have > 0 && attempt < kMaxRetries) {  // our partial file does not fit theirs
        std::error_code ec;
        fs::remove(part, ec);
        continue;
      }
      if (r.curl_code == 0 && (r.status == 200 || r.status == 206) && meta.size <= 0) {  // an empty file
        std::FILE* f = std::fopen(part.c_str(), "wb");
        if (!f) fail("cannot write {}: {}", part, std::strerror(errno));
        std::fclose(f);
        if (hash) hash->reset();
        break;
      }
      if (r.status >= 300) {
        check_status(r, meta.url, opts, label);
        fail("{}: unexpected HTTP {} for {}", meta.url, r.status, label);
      }
    }
    if (r.curl_code == 0) {
      if (meta.size < 0 || file_size_or_zero(part) == meta.size) break;
      if (file_size_or_zero(part) > meta.size)
        fail("{}: the server sent {} bytes, more than the {} the hub announced", label, file_size_or_zero(part),
             meta.size);
    }
    // The transfer broke (or ended short): retry while it keeps making progress.
    if (t.written == 0 || attempt >= kMaxRetries) {
      bar.finish();
      fail("download of {} from {} stopped after {} of {} bytes: {}; run the command again to resume",
           label, url_host(meta.url), file_size_or_zero(part), meta.size < 0 ? std::string("?") :
           std::to_string(meta.size), r.curl_code ? r.curl_error : std::string("connection closed early"));
    }
  }
  bar.update(file_size_or_zero(part));
  bar.finish();
}

}  // namespace

std::string resolve_url(const HubOptions& opts, const std::string& repo, const std::string& revision,
                        const std::string& file) {
  return fmt::format("{}/{}/resolve/{}/{}", opts.endpoint, repo, percent_encode_path(revision),
                     percent_encode_path(file));
}

FileMeta file_metadata(const HubOptions& opts, const std::string& repo, const std::string& revision,
                       const std::string& file) {
  std::string url = resolve_url(opts, repo, revision, file);
  std::string what = repo + "/" + file;
  for (int hop = 0; hop < 10; ++hop) {
    HttpRequest req = hub_request(opts, url);
    req.head = true;
    req.headers.push_back("Accept-Encoding: identity");  // the ETag of the raw bytes
    HttpResponse r = http_request(req);
    check_reachable(r, url, what);
    if (r.curl_code) fail("{}: {} (while asking {} for {})", url, r.curl_error, url_host(url), what);
    check_status(r, url, opts, what);
    std::string etag = r.header("x-linked-etag");
    if (etag.empty()) etag = r.header("etag");
    std::string location = r.header("location");
    bool redirect = r.status >= 300 && r.status < 400;
    if (redirect && location.empty()) fail("{}: HTTP {} without a Location header", url, r.status);
    // A relative redirect without LFS metadata is the hub's own (e.g. a renamed repo): ask there.
    // A redirect carrying X-Linked-Etag, or to another host, points at the content.
    bool hub_redirect = redirect && r.header("x-linked-etag").empty() && (etag.empty() || location[0] == '/');
    if (hub_redirect) {
      url = resolve_location(url, location);
      continue;
    }
    FileMeta m;
    m.commit = r.header("x-repo-commit");
    if (m.commit.empty() && is_commit_hash(revision)) m.commit = revision;
    if (!is_commit_hash(m.commit))
      fail("{}: the hub's answer has no valid X-Repo-Commit header ('{}')", url, m.commit);
    m.etag = normalize_etag(etag);
    if (!safe_blob_name(m.etag)) fail("{}: the hub's answer has no usable ETag ('{}')", url, etag);
    m.size = parse_size(r.header("x-linked-size"));
    if (m.size < 0 && !redirect) m.size = parse_size(r.header("content-length"));
    m.url = redirect ? resolve_location(url, location) : url;
    return m;
  }
  fail("{}: too many redirects", resolve_url(opts, repo, revision, file));
}

std::string download_file(const HubOptions& opts, const RepoCache& cache, const std::string& repo,
                          const std::string& file, const FileMeta& meta) {
  std::string blob = cache.blob_path(meta.etag);
  std::error_code ec;
  fs::create_directories(fs::path(blob).parent_path(), ec);
  if (ec) fail("cannot create the cache folder {}: {}", fs::path(blob).parent_path().string(), ec.message());
  if (!fs::is_regular_file(blob, ec)) {
    FileLock lock(cache.lock_path(meta.etag), file);
    if (!fs::is_regular_file(blob, ec)) {  // another process may have finished it meanwhile
      std::string part = blob + ".incomplete";
      check_free_space(fs::path(blob).parent_path(), meta.size - file_size_or_zero(part), file);
      bool check = is_sha256_hex(meta.etag);
      Sha256 hash;
      fetch_blob(opts, meta, part, file, check ? &hash : nullptr);
      if (meta.size >= 0 && file_size_or_zero(part) != meta.size)
        fail("{}: downloaded {} bytes, the hub announced {}", file, file_size_or_zero(part), meta.size);
      if (check) {
        std::string got = hash.hex_digest();
        if (got != meta.etag) {
          fs::remove(part, ec);
          fail("{}/{}: sha256 mismatch: the hub's ETag says {}, the download has {}; the download was "
               "deleted, run the command again", repo, file, meta.etag, got);
        }
      }
      fs::rename(part, blob, ec);
      if (ec) fail("cannot move {} to {}: {}", part, blob, ec.message());
    }
  }
  cache.link(meta.commit, file, meta.etag);
  return cache.snapshot_path(meta.commit, file);
}

}  // namespace ignis::hub
