// Quantization recipes (see quantize_recipe.h). Rules follow llama.cpp's src/llama-quant.cpp
// (llama_tensor_get_type_impl, tensor_type_fallback, tensor_allows_quantization), restricted to the
// file types and dense architectures ignis supports.
#include "format/quantize_recipe.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"
#include "core/thread_pool.h"
#include "format/gguf.h"

namespace ignis::gguf {
namespace {

namespace fs = std::filesystem;

enum class Category { Output, TokenEmbd, AttnV, AttnK, AttnQ, AttnOutput, FfnUp, FfnGate, FfnDown, Other };

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

Category category_of(const std::string& name) {
  if (name == "output.weight") return Category::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
  // llama.cpp groups fused qkv and MLA kv_b with attn_v ("attention-v-like").
  if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") || contains(name, "attn_v.weight"))
    return Category::AttnV;
  if (contains(name, "attn_k.weight")) return Category::AttnK;
  if (contains(name, "attn_q.weight")) return Category::AttnQ;
  if (contains(name, "attn_output.weight")) return Category::AttnOutput;
  if (contains(name, "ffn_up")) return Category::FfnUp;
  if (contains(name, "ffn_gate")) return Category::FfnGate;
  if (contains(name, "ffn_down")) return Category::FfnDown;
  return Category::Other;
}

int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

int64_t block_of(DType t) { return dtype_traits(t)->block_size; }

bool use_more_bits(int64_t i_layer, int64_t n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

// tensor_type_fallback: a type whose block does not divide the row length is replaced.
DType fallback(DType target, int64_t ncols) {
  if (ncols % block_of(target) == 0) return target;
  DType ret = target;
  switch (target) {
    case DType::Q2_K:
    case DType::Q3_K: ret = DType::Q4_0; break;
    case DType::Q4_K: ret = DType::Q5_0; break;
    case DType::Q5_K: ret = DType::Q5_1; break;
    case DType::Q6_K: ret = DType::Q8_0; break;
    default: ret = target; break;  // a 32-block type: only F16 is left
  }
  if (ncols % block_of(ret) != 0) ret = DType::F16;
  return ret;
}

void copy_value(GgufWriter& w, const std::string& key, const Value& v) {
  switch (v.type) {
    case ValueType::UINT8: w.set_u8(key, static_cast<uint8_t>(v.u)); break;
    case ValueType::INT8: w.set_i8(key, static_cast<int8_t>(v.i)); break;
    case ValueType::UINT16: w.set_u16(key, static_cast<uint16_t>(v.u)); break;
    case ValueType::INT16: w.set_i16(key, static_cast<int16_t>(v.i)); break;
    case ValueType::UINT32: w.set_u32(key, static_cast<uint32_t>(v.u)); break;
    case ValueType::INT32: w.set_i32(key, static_cast<int32_t>(v.i)); break;
    case ValueType::UINT64: w.set_u64(key, v.u); break;
    case ValueType::INT64: w.set_i64(key, v.i); break;
    case ValueType::FLOAT32: w.set_f32(key, static_cast<float>(v.f)); break;
    case ValueType::FLOAT64: w.set_f64(key, v.f); break;
    case ValueType::BOOL: w.set_bool(key, v.u != 0); break;
    case ValueType::STRING: w.set_string(key, v.s); break;
    case ValueType::ARRAY: w.set_array(key, v); break;
  }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::exists(b, ec) && std::filesystem::equivalent(a, b, ec)) return true;
  std::error_code ec2;
  auto ca = std::filesystem::weakly_canonical(a, ec);
  auto cb = std::filesystem::weakly_canonical(b, ec2);
  return !ec && !ec2 && ca == cb;
}

}  // namespace

std::vector<uint8_t> convert_tensor(const TensorInfo& t, DType to, ThreadPool& pool) {
  const DTypeTraits* src = dtype_traits(t.type);
  const DTypeTraits* dst = dtype_traits(to);
  if (!src->to_float) fail("quantize: tensor {} has type {}, which cannot be converted", t.name, src->name);
  if (!dst->from_float) fail("quantize: no quantizer for type {} (tensor {})", dst->name, t.name);
  const int64_t ncols = t.shape[0];
  const int64_t nrows = t.n_elements() / ncols;
  const size_t src_row = row_bytes(t.type, ncols);
  const size_t dst_row = row_bytes(to, ncols);
  std::vector<uint8_t> out(dst_row * static_cast<size_t>(nrows));
  const auto* in = static_cast<const uint8_t*>(t.data);
  pool.run([&](int ith, int nth) {
    int64_t r0 = 0, r1 = 0;
    ThreadPool::split(nrows, ith, nth, 1, &r0, &r1);
    std::vector<float> buf(static_cast<size_t>(ncols));
    for (int64_t r = r0; r < r1; ++r) {
      src->to_float(in + static_cast<size_t>(r) * src_row, buf.data(), ncols);
      dst->from_float(buf.data(), out.data() + static_cast<size_t>(r) * dst_row, ncols);
    }
  });
  return out;
}

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out;
}

}  // namespace

const std::vector<QuantTypeEntry>& quant_type_table() {
  static const std::vector<QuantTypeEntry> t = {
      {"Q4_0", FileType::Q4_0, "4.5 bpw, 32-element blocks, scale only"},
      {"Q4_1", FileType::Q4_1, "5.0 bpw, 32-element blocks, scale and min"},
      {"Q5_0", FileType::Q5_0, "5.5 bpw, 32-element blocks, scale only"},
      {"Q5_1", FileType::Q5_1, "6.0 bpw, 32-element blocks, scale and min"},
      {"Q4_K", FileType::Q4_K_M, "alias for Q4_K_M"},
      {"Q4_K_S", FileType::Q4_K_S, "Q4_K, a few early layers Q5_K"},
      {"Q4_K_M", FileType::Q4_K_M, "Q4_K, half of attn_v / ffn_down Q6_K"},
      {"Q5_K", FileType::Q5_K_M, "alias for Q5_K_M"},
      {"Q5_K_S", FileType::Q5_K_S, "Q5_K throughout"},
      {"Q5_K_M", FileType::Q5_K_M, "Q5_K, half of attn_v / ffn_down Q6_K"},
      {"Q6_K", FileType::Q6_K, "6.56 bpw K-quant"},
      {"Q8_0", FileType::Q8_0, "8.5 bpw, 32-element blocks"},
  };
  return t;
}

std::optional<FileType> parse_quant_type(std::string_view name) {
  for (const auto& e : quant_type_table()) {
    std::string_view n = e.name;
    if (n.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < n.size() && eq; ++i)
      eq = std::toupper(static_cast<unsigned char>(name[i])) == static_cast<unsigned char>(n[i]);
    if (eq) return e.ftype;
  }
  return std::nullopt;
}

std::string quant_type_names() {
  std::string out;
  for (const auto& e : quant_type_table()) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

DType file_type_default(FileType ft) {
  switch (ft) {
    case FileType::Q4_0: return DType::Q4_0;
    case FileType::Q4_1: return DType::Q4_1;
    case FileType::Q5_0: return DType::Q5_0;
    case FileType::Q5_1: return DType::Q5_1;
    case FileType::Q8_0: return DType::Q8_0;
    case FileType::Q4_K_S:
    case FileType::Q4_K_M: return DType::Q4_K;
    case FileType::Q5_K_S:
    case FileType::Q5_K_M: return DType::Q5_K;
    case FileType::Q6_K: return DType::Q6_K;
  }
  fail("unknown quantization file type {}", static_cast<uint32_t>(ft));
}

const char* file_type_name(FileType ft) {
  for (const auto& e : quant_type_table())
    if (e.ftype == ft && std::string_view(e.help).rfind("alias", 0) != 0) return e.name;
  return "?";
}

bool tensor_allows_quantization(const TensorDesc& t) {
  if (t.shape.size() < 2) return false;
  const std::string& n = t.name;
  if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
  static const char* const kNever[] = {"_norm.weight", "ffn_gate_inp.weight", "altup", "laurel",
                                       "per_layer_model_proj", "ssm_conv1d", "attn_rel_b.weight",
                                       "position_embd", "token_types"};
  for (const char* s : kNever)
    if (contains(n, s)) return false;
  return true;
}

std::vector<size_t> llama_weight_order(const std::vector<TensorDesc>& tensors) {
  std::vector<size_t> idx(tensors.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::vector<int> layer(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) layer[i] = layer_of(tensors[i].name);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (layer[a] != layer[b]) return layer[a] < layer[b];
    return tensors[a].name < tensors[b].name;
  });
  return idx;
}

std::vector<DType> plan_quantization(const ModelDesc& model, const std::vector<TensorDesc>& tensors,
                                     FileType ft) {
  if (model.arch != "llama" && model.arch != "qwen2" && model.arch != "qwen3")
    fail("quantize: architecture '{}' is not supported (llama, qwen2, qwen3)", model.arch);
  const DType base = file_type_default(ft);
  // llama.cpp's LLM_TYPE_70B: its attn_v gets Q5_K where the mix says Q3_K/Q4_K.
  const bool is_70b = model.n_layer == 80 &&
                      (model.arch == "qwen2" || (model.arch == "llama" && model.n_head != model.n_head_kv));

  bool tied = true;
  int64_t n_attention_wv = 0;
  for (const auto& t : tensors) {
    Category c = category_of(t.name);
    if (c == Category::AttnV) ++n_attention_wv;
    if (c == Category::Output) tied = false;
  }
  const int64_t n_ffn_down = model.n_layer;
  int64_t i_attention_wv = 0, i_ffn_down = 0;

  std::vector<DType> out(tensors.size());
  for (size_t i : llama_weight_order(tensors)) {
    const TensorDesc& t = tensors[i];
    if (!tensor_allows_quantization(t)) {
      out[i] = t.type;
      continue;
    }
    const Category c = category_of(t.name);
    DType nt = base;
    if (c == Category::Output || (tied && c == Category::TokenEmbd)) {
      if (t.shape[0] % block_of(base) != 0)
        nt = DType::Q8_0;
      else if (nt != DType::Q8_0)
        nt = DType::Q6_K;
    } else if (c == Category::AttnV) {
      if ((ft == FileType::Q4_K_M || ft == FileType::Q5_K_M) && use_more_bits(i_attention_wv, n_attention_wv))
        nt = DType::Q6_K;
      else if (ft == FileType::Q4_K_S && i_attention_wv < 4)
        nt = DType::Q5_K;
      if (is_70b && (nt == DType::Q3_K || nt == DType::Q4_K)) nt = DType::Q5_K;
      ++i_attention_wv;
    } else if (c == Category::FfnDown) {
      if (ft == FileType::Q4_K_M) {
        if (use_more_bits(i_ffn_down, n_ffn_down)) nt = DType::Q6_K;
      } else if (ft == FileType::Q5_K_M) {
        if (use_more_bits(i_ffn_down, n_ffn_down)) nt = DType::Q6_K;
      } else if (ft == FileType::Q4_K_S && i_ffn_down < n_ffn_down / 8) {
        nt = DType::Q5_K;
      }
      ++i_ffn_down;
    }
    out[i] = fallback(nt, t.shape[0]);
  }
  return out;
}

QuantizeStats quantize_model(const std::string& in_path, const std::string& out_path, FileType ft,
                             ThreadPool& pool, const std::function<void(const std::string&)>& log) {
  if (same_file(in_path, out_path))
    fail("quantize: output {} is the input file; give a different output path", out_path);
  {
    // Fail before the work when the output cannot be created at all.
    std::error_code ec;
    fs::path dir = fs::path(out_path).parent_path();
    if (!dir.empty() && !fs::is_directory(dir, ec))
      fail("quantize: cannot write {}: folder {} does not exist", out_path, dir.string());
    if (fs::is_directory(out_path, ec)) fail("quantize: output {} is a folder", out_path);
  }
  std::unique_ptr<GgufFile> in = GgufFile::open(in_path);
  ModelDesc md;
  md.arch = in->get_string("general.architecture");
  md.n_layer = in->get_int(md.arch + ".block_count");
  md.n_head = in->opt_int(md.arch + ".attention.head_count").value_or(0);
  md.n_head_kv = in->opt_int(md.arch + ".attention.head_count_kv").value_or(md.n_head);
  std::vector<TensorDesc> descs;
  for (const auto& t : in->tensors()) descs.push_back({t.name, t.type, t.shape});
  const std::vector<DType> plan = plan_quantization(md, descs, ft);

  GgufWriter w(in->alignment());
  for (const auto& [key, v] : in->metadata()) {
    if (key.rfind("split.", 0) == 0 || key == "general.quantization_version" || key == "general.file_type")
      continue;
    copy_value(w, key, v);
  }
  w.set_u32("general.quantization_version", 2);
  w.set_u32("general.file_type", static_cast<uint32_t>(ft));

  if (log)
    log(fmt::format("quantize: {} -> {} as {} (general.file_type {}), {} threads", in_path, out_path,
                    file_type_name(ft), static_cast<uint32_t>(ft), pool.n_threads()));
  QuantizeStats st;
  const std::vector<size_t> order = llama_weight_order(descs);
  for (size_t i : order) {
    const TensorInfo& t = in->tensors()[i];
    const DType to = plan[i];
    ++st.n_tensors;
    if (log)
      log(fmt::format("[{:4}/{:4}] {:<36} [{}] {} -> {}", st.n_tensors, order.size(), t.name, shape_str(t.shape),
                      dtype_name(t.type), dtype_name(to)));
    st.bytes_in += t.n_bytes;
    if (to == t.type) {
      w.add_tensor(t.name, t.type, t.shape, t.data, t.n_bytes);
      st.bytes_out += t.n_bytes;
      continue;
    }
    if (dtype_traits(t.type)->is_quantized) ++st.n_requantized;
    if (tensor_allows_quantization(descs[i]) && !dtype_traits(to)->is_quantized) ++st.n_f16;
    std::vector<uint8_t> data = convert_tensor(t, to, pool);
    w.add_tensor(t.name, to, t.shape, data.data(), data.size());
    st.bytes_out += data.size();
  }
  w.write(out_path);
  return st;
}

}  // namespace ignis::gguf
