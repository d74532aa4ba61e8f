// ignis pull -hf REPO[:QUANT]: download a model into the hub cache and print its local path: the .gguf
// file, or for a repo without .gguf files the snapshot folder of its safetensors checkpoint
// (hub::resolve_model).
//
// With --file (repeatable) it downloads those files of the repo instead (e.g. config.json and the
// safetensors shards of a checkpoint) and prints one path per line. Paths go to stdout; the progress bar
// and errors go to stderr.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "hub/hub.h"

namespace ignis::cli {
namespace {

struct PullOptions {
  std::string spec;
  std::vector<std::string> files;
  std::string revision = "main";
  bool offline = false;
  bool refresh = false;
  bool no_progress = false;
};

Action setup_pull(CLI::App& sub) {
  auto o = std::make_shared<PullOptions>();
  sub.add_option("--hf,spec", o->spec, "REPO[:QUANT] on the hub (quant Q4_K_M by default), e.g. "
                 "Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q8_0 (also -hf)")->required();
  sub.add_option("--file", o->files, "download this file of the repo instead of a .gguf (repeatable)");
  sub.add_option("--revision", o->revision, "branch, tag or commit for --file (default main)");
  sub.add_flag("--offline", o->offline, "answer from the cache only (also HF_HUB_OFFLINE=1)");
  sub.add_flag("--refresh", o->refresh, "ask the hub even when the cache has the file");
  sub.add_flag("--no-progress", o->no_progress, "no progress bar");
  sub.footer("Cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub (Hugging Face layout; "
             "$IGNIS_CACHE overrides). Hub: $HF_ENDPOINT, token: $HF_TOKEN.");
  return [o]() {
    hub::HubOptions h;
    h.offline = o->offline;
    h.refresh = o->refresh;
    h.progress = !o->no_progress;
    h = hub::with_env_defaults(h);
    if (o->files.empty()) {
      std::printf("%s\n", hub::resolve_model(o->spec, h).c_str());
      return 0;
    }
    if (o->spec.find(':') != std::string::npos) {
      std::fprintf(stderr, "error: --file takes a plain REPO, not REPO:QUANT ('%s')\n", o->spec.c_str());
      return 2;
    }
    for (const auto& p : hub::fetch_files(o->spec, o->files, h, o->revision)) std::printf("%s\n", p.c_str());
    return 0;
  };
}

Command reg{"pull", "Download a model from the Hugging Face hub into the cache", setup_pull};

}  // namespace
}  // namespace ignis::cli
