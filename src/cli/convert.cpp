// ignis convert: a Hugging Face model folder -> a GGUF that llama.cpp and ignis load.
//
// DIR holds config.json, model.safetensors (or model.safetensors.index.json and its shards) and the
// tokenizer files; see format/hf_convert.h for what is written.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/error.h"
#include "format/hf_convert.h"

namespace ignis::cli {
namespace {

struct ConvertCliOptions {
  std::string dir;
  std::string out;
  hf::ConvertOptions opts;
};

Action setup_convert(CLI::App& sub) {
  auto o = std::make_shared<ConvertCliOptions>();
  sub.add_option("dir", o->dir, "Hugging Face model folder")->required();
  sub.add_option("-o,--out", o->out, "output .gguf")->required();
  sub.add_option("--type", o->opts.type, "f32 | f16 | bf16 | q8_0")->capture_default_str();
  sub.add_option("--name", o->opts.name, "general.name (default: the folder's name)");
  return [o]() {
    const auto s = hf::convert_hf_to_gguf(o->dir, o->out, o->opts);
    std::fprintf(stderr, "convert: wrote %s: arch %s, %lld tensors, %.1f MiB of tensor data (%s)\n", o->out.c_str(),
                 s.arch.c_str(), static_cast<long long>(s.n_tensors), static_cast<double>(s.n_bytes) / (1 << 20),
                 o->opts.type.c_str());
    return 0;
  };
}

Command reg{"convert", "Convert a Hugging Face folder to GGUF", setup_convert};

}  // namespace
}  // namespace ignis::cli
