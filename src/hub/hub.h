// Model downloads from a Hugging Face-compatible hub (-hf REPO[:QUANT]) and the local cache.
//
// resolve_gguf() turns "Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q4_K_M" into a local file path, downloading
// into the cache when needed; resolve_model() (what -hf uses) does the same and, for a repo without .gguf
// files, downloads its safetensors checkpoint and returns the snapshot folder instead (progress bar on a terminal, resume of partial files, sha256 check against
// the hub's ETag when it is one). HF_ENDPOINT and HF_TOKEN are honoured as huggingface_hub does; offline
// mode answers from the cache only. Failures throw ignis::Error with one line naming host, file and the
// way out (--offline / -m). Thread-safe: functions hold no global state besides the cache folder;
// concurrent downloads of the same blob (threads or processes) serialise on a lock file.
//
// Cache layout (the Hugging Face hub cache, so caches made by huggingface_hub / huggingface-cli are
// reused and vice versa):
//   <cache_dir>/models--ORG--NAME/
//       refs/<revision>                 the commit hash that <revision> ("main") resolved to
//       blobs/<etag>                    file contents, named by the hub's ETag: the sha256 for LFS files
//                                       (verified after download), the git blob sha1 for small files
//       blobs/<etag>.incomplete         a partial download; the next download resumes it (HTTP Range)
//       snapshots/<commit>/<file>       symlink -> ../../blobs/<etag> (more ../ for files in folders)
//   <cache_dir>/.locks/models--ORG--NAME/<etag>.lock   flock()ed while a process downloads that blob
// cache_dir defaults: $IGNIS_CACHE, else $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
//
// Cache first: a file already in snapshots/<refs/main>/ is returned without any request (so the default
// model downloads once and then works with no network). HubOptions::refresh asks the hub again.
//
// Hub protocol used: GET {endpoint}/api/models/{repo}[/revision/{rev}] (JSON: "sha", "siblings":
// [{"rfilename"}]); HEAD {endpoint}/{repo}/resolve/{rev}/{file} without following redirects to read
// X-Repo-Commit, X-Linked-Etag (else ETag), X-Linked-Size (else Content-Length) and Location (relative
// redirects without X-Linked-Etag, e.g. renamed repos, are followed; a redirect with it, or to another
// host, points at the content); then GET of that URL with redirects followed, from the end of the
// .incomplete file on (Range), retried while it makes progress. Authorization: Bearer $HF_TOKEN is sent
// only to the endpoint's host, never to a CDN on another host.
#pragma once

#include <string>
#include <vector>

namespace ignis::hub {

struct HubOptions {
  std::string endpoint;    // default: $HF_ENDPOINT or https://huggingface.co (trailing '/' removed)
  std::string token;       // default: $HF_TOKEN, else the file $HF_TOKEN_PATH or $HF_HOME/token
                           // (as huggingface_hub; HF_HUB_DISABLE_IMPLICIT_TOKEN=1 skips the file)
  std::string cache_dir;   // default: see the cache layout above
  bool offline = false;    // also set by HF_HUB_OFFLINE=1 in with_env_defaults()
  bool progress = true;    // progress bar when stderr is a terminal (HF_HUB_DISABLE_PROGRESS_BARS=1: off)
  bool refresh = false;    // ask the hub even when the cache has the file
  int connect_timeout_s = 5;
  int low_speed_time_s = 30;  // abort a transfer slower than 1 KB/s (or silent) for this long
};

// Fills unset fields of `o` from the environment as documented above.
HubOptions with_env_defaults(HubOptions o);

// "REPO[:QUANT]" -> local path of the .gguf whose name carries QUANT (Q4_K_M by default,
// case-insensitive), downloading it if needed. Split GGUFs (NAME-00001-of-0000N.gguf) download all
// parts; the path of the first part is returned (the others are beside it).
std::string resolve_gguf(const std::string& spec, const HubOptions& opts);

// "REPO[:QUANT]" -> local model path. A repo with .gguf files: as resolve_gguf. A repo without: its
// safetensors checkpoint (see checkpoint_select.h for exactly which files: config, generation config,
// weights with every shard of model.safetensors.index.json, tokenizer files), downloaded into one
// snapshot; the snapshot FOLDER <cache_dir>/models--ORG--NAME/snapshots/<commit> is returned. Cache
// first as above: a complete cached checkpoint is returned without requests. A QUANT on a repo without
// .gguf files, a repo with neither, or an index naming a shard the repo lacks throws ignis::Error
// naming the repo and what is missing.
std::string resolve_model(const std::string& spec, const HubOptions& opts);

// Downloads (or finds in the cache) the listed files of a repo at `revision`; returns local paths in the
// same order.
std::vector<std::string> fetch_files(const std::string& repo, const std::vector<std::string>& files,
                                     const HubOptions& opts, const std::string& revision = "main");

// What a repo holds at `revision`: asked from the hub (GET /api/models/...), or, offline, read from the
// cached snapshot (then `files` lists only the files cached there).
struct RepoInfo {
  std::string commit;               // 40-hex commit hash
  std::vector<std::string> files;   // repo-relative paths ("siblings")
};
RepoInfo repo_info(const std::string& repo, const HubOptions& opts, const std::string& revision = "main");

// The cache folder of a repo: <cache_dir>/models--ORG--NAME.
std::string repo_cache_dir(const std::string& repo, const HubOptions& opts);

}  // namespace ignis::hub
