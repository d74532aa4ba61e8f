// Hugging Face folder -> in-memory GgufFile (see hf_load.h).
#include "format/hf_load.h"

#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "format/hf_convert.h"
#include "format/quantize_recipe.h"

namespace ignis::hf {

namespace {

namespace fs = std::filesystem;

void set_u32(std::vector<std::pair<std::string, gguf::Value>>& kv, const std::string& key, uint32_t x) {
  gguf::Value v;
  v.type = gguf::ValueType::UINT32;
  v.u = x;
  v.i = x;
  for (auto& [k, old] : kv) {
    if (k == key) {
      old = v;
      return;
    }
  }
  kv.emplace_back(key, v);
}

// NOTE: the plan is quantize_recipe's, over the same tensor names, shapes and (float) types as the GGUF
// `ignis convert` writes, so each tensor gets the type `ignis quantize` gives it; converting from the
// checkpoint's F16/BF16 values through f32 gives the same bytes as from convert's exact f32 copy.
void quantize_parts(HfGgufParts& p, gguf::FileType ft, int n_threads) {
  gguf::ModelDesc md;
  md.arch = p.cfg.gguf_arch();
  md.n_layer = p.cfg.n_layer;
  md.n_head = p.cfg.n_head;
  md.n_head_kv = p.cfg.n_head_kv;
  std::vector<gguf::TensorDesc> descs;
  for (const auto& t : p.tensors) descs.push_back({t.name, t.type, t.shape});
  const std::vector<DType> plan = gguf::plan_quantization(md, descs, ft);
  ThreadPool pool(n_threads);
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    gguf::TensorInfo& t = p.tensors[i];
    if (plan[i] == t.type) continue;
    std::vector<uint8_t> q = gguf::convert_tensor(t, plan[i], pool);
    std::vector<uint8_t>& slot = p.store->owned[t.name];  // may hold the permuted rows just read
    slot = std::move(q);
    t.type = plan[i];
    t.data = slot.data();
    t.n_bytes = slot.size();
  }
  set_u32(p.metadata, "general.quantization_version", 2);
  set_u32(p.metadata, "general.file_type", static_cast<uint32_t>(ft));
}

}  // namespace

void check_quant_name(const std::string& name) {
  if (!gguf::parse_quant_type(name)) fail("--quant {}: unknown type (valid: {})", name, gguf::quant_type_names());
}

bool is_hf_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

std::shared_ptr<const gguf::GgufFile> load_hf_folder(const std::string& dir, const HfLoadOptions& opts) {
  std::optional<gguf::FileType> ft;
  if (!opts.quant.empty()) {
    check_quant_name(opts.quant);
    ft = gguf::parse_quant_type(opts.quant);
  }
  if (opts.n_threads < 0) fail("{}: thread count {} must be >= 0", dir, opts.n_threads);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("{}: not a folder", dir);
  if (!fs::exists(fs::path(dir) / "config.json", ec))
    fail("{}: not a Hugging Face model folder (config.json is missing)", dir);
  ConvertOptions co;
  co.keep_source_types = true;
  HfGgufParts p = build_hf_gguf(dir, co);
  if (ft) quantize_parts(p, *ft, opts.n_threads);
  return gguf::GgufFile::from_parts(dir, std::move(p.metadata), std::move(p.tensors), std::move(p.store));
}

}  // namespace ignis::hf
