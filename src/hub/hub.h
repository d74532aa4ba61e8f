// Model downloads from a Hugging Face-compatible hub (-hf REPO[:QUANT]) and the local cache.
//
// resolve_gguf() turns "Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q4_K_M" into a local file path, downloading
// into the cache when needed (progress bar on a terminal, resume of partial files, sha256 check against
// the hub's ETag when it is one). HF_ENDPOINT and HF_TOKEN are honoured as huggingface_hub does; offline
// mode answers from the cache only. Failures throw ignis::Error with one line naming host, file and the
// way out (--offline / -m). Thread-safe: functions hold no global state besides the cache folder.
#pragma once

#include <string>
#include <vector>

namespace ignis::hub {

struct HubOptions {
  std::string endpoint;    // default: $HF_ENDPOINT or https://huggingface.co
  std::string token;       // default: $HF_TOKEN
  std::string cache_dir;   // default: $IGNIS_CACHE, else $HF_HUB_CACHE, else ~/.cache/huggingface/hub
  bool offline = false;
  bool progress = true;    // progress bar when stderr is a terminal
  int connect_timeout_s = 10;
};

// Fills unset fields of `o` from the environment as documented above.
HubOptions with_env_defaults(HubOptions o);

// "REPO[:QUANT]" -> local path of the .gguf whose name carries QUANT (Q4_K_M by default,
// case-insensitive), downloading it if needed.
std::string resolve_gguf(const std::string& spec, const HubOptions& opts);

// Downloads (or finds in the cache) the listed files of a repo at `revision`; returns local paths in the
// same order.
std::vector<std::string> fetch_files(const std::string& repo, const std::vector<std::string>& files,
                                     const HubOptions& opts, const std::string& revision = "main");

}  // namespace ignis::hub
