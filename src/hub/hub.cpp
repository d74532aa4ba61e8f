#include "hub/hub.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "hub/cache.h"
#include "hub/checkpoint_select.h"
#include "hub/client.h"
#include "hub/download.h"
#include "hub/http.h"
#include "hub/quant_select.h"

namespace fs = std::filesystem;

namespace ignis::hub {
namespace {

constexpr size_t kMaxApiBytes = 64u << 20;  // a repo listing larger than this is not a sane answer

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string expand_user(const std::string& p) {
  if (p.rfind("~/", 0) == 0 || p == "~") return env("HOME") + p.substr(1);
  return p;
}

bool env_true(const char* name) {
  std::string v = env(name);
  for (char& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

std::string hf_home() {
  if (!env("HF_HOME").empty()) return expand_user(env("HF_HOME"));
  if (!env("XDG_CACHE_HOME").empty()) return expand_user(env("XDG_CACHE_HOME")) + "/huggingface";
  if (!env("HOME").empty()) return env("HOME") + "/.cache/huggingface";
  return "";
}

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  std::string tok;
  if (!in || !std::getline(in, tok)) return "";
  while (!tok.empty() && std::isspace(static_cast<unsigned char>(tok.back()))) tok.pop_back();
  return tok;
}

void check_cache_dir(const HubOptions& opts) {
  if (opts.cache_dir.empty())
    fail("no cache folder for hub downloads: set HF_HUB_CACHE (or HF_HOME, or HOME)");
}

void check_endpoint(const HubOptions& opts) {
  if ((opts.endpoint.rfind("http://", 0) != 0 && opts.endpoint.rfind("https://", 0) != 0) ||
      url_host(opts.endpoint).empty())
    fail("hub endpoint '{}' (HF_ENDPOINT) is not an http:// or https:// URL", opts.endpoint);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The cached model for QUANT in snapshots/<refs/main>, when complete. No fallback to another quant:
// the cache may hold only some of the repo's files.
std::optional<std::string> find_cached_gguf(const RepoCache& cache, const HfSpec& spec) {
  auto commit = cache.resolve_revision("main");
  if (!commit) return std::nullopt;
  auto files = cache.snapshot_files(*commit);
  try {
    auto parts = select_gguf(spec.repo, files, spec.quant.empty() ? kDefaultQuant : spec.quant);
    return cache.snapshot_path(*commit, parts[0]);
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::vector<std::string> download_all(const HubOptions& opts, const RepoCache& cache, const std::string& repo,
                                      const std::string& commit, const std::vector<std::string>& files) {
  std::vector<std::string> paths;
  for (const auto& f : files) {
    check_repo_file(f);
    if (!opts.refresh && cache.has_file(commit, f)) {
      paths.push_back(cache.snapshot_path(commit, f));
      continue;
    }
    FileMeta meta = file_metadata(opts, repo, commit, f);
    meta.commit = commit;  // all files of one call live in one snapshot
    paths.push_back(download_file(opts, cache, repo, f, meta));
  }
  return paths;
}

}  // namespace

HubOptions with_env_defaults(HubOptions o) {
  if (o.endpoint.empty()) o.endpoint = env("HF_ENDPOINT");
  if (o.endpoint.empty()) o.endpoint = "https://huggingface.co";
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  if (o.token.empty()) o.token = env("HF_TOKEN");
  if (o.token.empty() && !env_true("HF_HUB_DISABLE_IMPLICIT_TOKEN")) {
    std::string path = expand_user(env("HF_TOKEN_PATH"));
    if (path.empty() && !hf_home().empty()) path = hf_home() + "/token";
    if (!path.empty()) o.token = read_token_file(path);
  }
  if (o.cache_dir.empty()) o.cache_dir = expand_user(env("IGNIS_CACHE"));
  if (o.cache_dir.empty()) o.cache_dir = expand_user(env("HF_HUB_CACHE"));
  if (o.cache_dir.empty() && !hf_home().empty()) o.cache_dir = hf_home() + "/hub";
  if (env_true("HF_HUB_OFFLINE")) o.offline = true;
  if (env_true("HF_HUB_DISABLE_PROGRESS_BARS")) o.progress = false;
  return o;
}

std::string repo_cache_dir(const std::string& repo, const HubOptions& opts) {
  check_repo_id(repo);
  check_cache_dir(opts);
  return RepoCache(opts.cache_dir, repo).root();
}

namespace {

// `what` names the request in a "cannot reach" message (the -hf spec, when there is one).
RepoInfo repo_info_for(const std::string& repo, const HubOptions& opts, const std::string& revision,
                       const std::string& what) {
  check_repo_id(repo);
  check_cache_dir(opts);
  RepoInfo info;
  if (opts.offline) {
    RepoCache cache(opts.cache_dir, repo);
    auto commit = cache.resolve_revision(revision);
    if (!commit)
      fail("{} (revision {}) is not in the cache {} and offline mode is on (--offline / HF_HUB_OFFLINE)", repo,
           revision, opts.cache_dir);
    info.commit = *commit;
    info.files = cache.snapshot_files(*commit);
    return info;
  }
  check_endpoint(opts);
  std::string url = opts.endpoint + "/api/models/" + repo;
  if (revision != "main") url += "/revision/" + revision;
  std::string body;
  HttpRequest req = hub_request(opts, url);
  req.follow_redirects = true;
  HttpResponse r = http_request(req, [&](const HttpResponse& resp, const char* d, size_t n) {
    if (body.size() + n > kMaxApiBytes) return false;
    body.append(d, n);
    return true;
  });
  check_reachable(r, url, what);
  check_status(r, url, opts, "repo " + repo);
  if (r.aborted_by_sink) fail("{}: the hub's answer is larger than {} MB", url, kMaxApiBytes >> 20);
  if (r.curl_code) fail("{}: {}", url, r.curl_error);
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) fail("{}: the hub's answer is not a JSON object", url);
  if (!j.contains("sha") || !j["sha"].is_string() || !is_commit_hash(j["sha"].get<std::string>()))
    fail("{}: the hub's answer has no commit hash in \"sha\"", url);
  info.commit = j["sha"].get<std::string>();
  if (!j.contains("siblings") || !j["siblings"].is_array()) fail("{}: the hub's answer has no \"siblings\" list", url);
  for (const auto& s : j["siblings"]) {
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string())
      fail("{}: a \"siblings\" entry has no \"rfilename\" string", url);
    info.files.push_back(s["rfilename"].get<std::string>());
  }
  return info;
}

}  // namespace

RepoInfo repo_info(const std::string& repo, const HubOptions& opts, const std::string& revision) {
  return repo_info_for(repo, opts, revision, repo);
}

namespace {

[[noreturn]] void fail_offline_gguf(const RepoCache& cache, const HfSpec& spec) {
  auto commit = cache.resolve_revision("main");
  auto have = commit ? available_quants(cache.snapshot_files(*commit)) : std::vector<std::string>{};
  fail("{}:{} is not in the cache {} and offline mode is on (--offline / HF_HUB_OFFLINE); cached quants: {}; "
       "run without --offline to download it, or pass -m FILE.gguf",
       spec.repo, spec.quant.empty() ? kDefaultQuant : spec.quant, cache.root(), have.empty() ? "none" : join(have));
}

std::string download_gguf(const HubOptions& opts, const RepoCache& cache, const HfSpec& spec, const RepoInfo& info) {
  auto parts = select_gguf(spec.repo, info.files, spec.quant);
  auto paths = download_all(opts, cache, spec.repo, info.commit, parts);
  cache.write_ref("main", info.commit);
  return paths[0];
}

std::string read_small_file(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) fail("{}: cannot open: {}", path, ec.message());
  if (size > max_bytes) fail("{}: larger than {} MB, not a safetensors index", path, max_bytes >> 20);
  std::ifstream in(path, std::ios::binary);
  std::string s(size_t(size), '\0');
  if (!in || !in.read(s.data(), static_cast<std::streamsize>(s.size()))) fail("{}: cannot read", path);
  return s;
}

// The shards that the cached index of snapshot `commit` names; nullopt when the index or a shard is
// not in the cache (or the index is unreadable: then the download path reports it).
std::optional<std::vector<std::string>> cached_shards(const RepoCache& cache, const std::string& commit) {
  if (!cache.has_file(commit, kSafetensorsIndex)) return std::nullopt;
  try {
    const std::string idx = cache.snapshot_path(commit, kSafetensorsIndex);
    auto shards = index_shards(read_small_file(idx, kMaxApiBytes), idx);
    for (const auto& s : shards)
      if (!cache.has_file(commit, s)) return std::nullopt;
    return shards;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The cached checkpoint folder snapshots/<refs/main>/ when the snapshot holds no GGUF and every file
// the checkpoint needs (shards included) is there.
std::optional<std::string> find_cached_checkpoint(const RepoCache& cache, const std::string& repo) {
  auto commit = cache.resolve_revision("main");
  if (!commit) return std::nullopt;
  auto files = cache.snapshot_files(*commit);
  if (has_model_gguf(files)) return std::nullopt;
  try {
    auto plan = select_checkpoint(repo, files);
    if (std::find(plan.begin(), plan.end(), kSafetensorsIndex) != plan.end() && !cached_shards(cache, *commit))
      return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  return cache.snapshot_dir(*commit);
}

// NOTE: the index is downloaded before the shards so that a shard the repo lacks fails before any
// large download starts.
std::string download_checkpoint(const HubOptions& opts, const RepoCache& cache, const std::string& repo,
                                const RepoInfo& info, const std::vector<std::string>& plan) {
  auto paths = download_all(opts, cache, repo, info.commit, plan);
  auto it = std::find(plan.begin(), plan.end(), kSafetensorsIndex);
  if (it != plan.end()) {
    const std::string& idx = paths[size_t(it - plan.begin())];
    auto shards = index_shards(read_small_file(idx, kMaxApiBytes), repo + "/" + kSafetensorsIndex);
    for (const auto& s : shards)
      if (std::find(info.files.begin(), info.files.end(), s) == info.files.end())
        fail("{}: {} names the shard {}, which the repo does not have", repo, kSafetensorsIndex, s);
    download_all(opts, cache, repo, info.commit, shards);
  }
  cache.write_ref("main", info.commit);
  return cache.snapshot_dir(info.commit);
}

}  // namespace

std::string resolve_gguf(const std::string& spec_text, const HubOptions& opts) {
  HfSpec spec = parse_hf_spec(spec_text);
  check_cache_dir(opts);
  RepoCache cache(opts.cache_dir, spec.repo);
  auto cached = find_cached_gguf(cache, spec);
  if (cached && (!opts.refresh || opts.offline)) return *cached;
  if (opts.offline) fail_offline_gguf(cache, spec);
  return download_gguf(opts, cache, spec, repo_info_for(spec.repo, opts, "main", spec_text));
}

std::string resolve_model(const std::string& spec_text, const HubOptions& opts) {
  HfSpec spec = parse_hf_spec(spec_text);
  check_cache_dir(opts);
  RepoCache cache(opts.cache_dir, spec.repo);
  if (!opts.refresh || opts.offline) {
    if (auto g = find_cached_gguf(cache, spec)) return *g;
    if (spec.quant.empty())
      if (auto d = find_cached_checkpoint(cache, spec.repo)) return *d;
  }
  if (opts.offline) {
    auto commit = cache.resolve_revision("main");
    if (!spec.quant.empty() || (commit && has_model_gguf(cache.snapshot_files(*commit))))
      fail_offline_gguf(cache, spec);
    fail("{} is not in the cache {} (neither a .gguf nor a complete safetensors checkpoint) and offline mode is on "
         "(--offline / HF_HUB_OFFLINE); run without --offline to download it", spec.repo, cache.root());
  }
  RepoInfo info = repo_info_for(spec.repo, opts, "main", spec_text);
  if (has_model_gguf(info.files)) return download_gguf(opts, cache, spec, info);
  auto plan = select_checkpoint(spec.repo, info.files);
  if (!spec.quant.empty())
    fail("{}: the repo has no .gguf files, so ':{}' selects nothing; pass -hf {} to download its safetensors "
         "checkpoint", spec.repo, spec.quant, spec.repo);
  return download_checkpoint(opts, cache, spec.repo, info, plan);
}

std::vector<std::string> fetch_files(const std::string& repo, const std::vector<std::string>& files,
                                     const HubOptions& opts, const std::string& revision) {
  check_repo_id(repo);
  check_cache_dir(opts);
  for (const auto& f : files) check_repo_file(f);
  RepoCache cache(opts.cache_dir, repo);
  auto commit = cache.resolve_revision(revision);
  if (commit && (!opts.refresh || opts.offline)) {
    auto missing = std::find_if(files.begin(), files.end(), [&](const auto& f) { return !cache.has_file(*commit, f); });
    if (missing == files.end()) {
      std::vector<std::string> paths;
      for (const auto& f : files) paths.push_back(cache.snapshot_path(*commit, f));
      return paths;
    }
    if (opts.offline)
      fail("{}/{} (revision {}) is not in the cache {} and offline mode is on (--offline / HF_HUB_OFFLINE); "
           "run without --offline to download it", repo, *missing, revision, cache.root());
  }
  if (opts.offline)
    fail("{} (revision {}) is not in the cache {} and offline mode is on (--offline / HF_HUB_OFFLINE); run "
         "without --offline to download it", repo, revision, opts.cache_dir);
  check_endpoint(opts);
  std::string target = revision;
  if (!is_commit_hash(revision)) {
    RepoInfo info = repo_info(repo, opts, revision);
    for (const auto& f : files)
      if (std::find(info.files.begin(), info.files.end(), f) == info.files.end())
        fail("{}: no file {} at revision {} (the repo has {} files)", repo, f, revision, info.files.size());
    target = info.commit;
  }
  auto paths = download_all(opts, cache, repo, target, files);
  cache.write_ref(revision, target);
  return paths;
}

}  // namespace ignis::hub
