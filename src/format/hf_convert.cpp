// Hugging Face folder -> GGUF. See hf_convert.h.

#include "format/hf_convert.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/dtype.h"
#include "core/error.h"
#include "core/fp16.h"
#include "format/gguf.h"
#include "format/safetensors.h"

namespace ignis::hf {

namespace {

namespace fs = std::filesystem;

struct OutType {
  DType type;
  uint32_t file_type;  // llama_ftype
};

OutType parse_out_type(const std::string& s) {
  if (s == "f32") return {DType::F32, 0};
  if (s == "f16") return {DType::F16, 1};
  if (s == "bf16") return {DType::BF16, 32};
  if (s == "q8_0") return {DType::Q8_0, 7};
  fail("--type {}: must be f32, f16, bf16 or q8_0", s);
}

// NOTE: llama.cpp's "normal" rope rotates adjacent pairs (x[2j], x[2j+1]) while HF's rotate-half pairs
// (x[j], x[j + d/2]). Reordering each head's rows from [first halves..., second halves...] to
// interleaved pairs makes the two equal; llama.cpp's converter does the same for arch "llama".
// `in` holds n_head * head_dim rows of `row_size` bytes; being a row permutation, it works in any dtype.
void permute_rows(const uint8_t* in, uint8_t* out, int64_t n_head, int64_t head_dim, size_t row_size) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t s = 0; s < 2; ++s) {
        const auto src = static_cast<size_t>(h * head_dim + s * half + j);
        const auto dst = static_cast<size_t>(h * head_dim + 2 * j + s);
        std::memcpy(out + dst * row_size, in + src * row_size, row_size);
      }
}

DType dtype_of(st::StDType t) {
  switch (t) {
    case st::StDType::F32: return DType::F32;
    case st::StDType::F16: return DType::F16;
    case st::StDType::BF16: return DType::BF16;
  }
  return DType::F32;
}

uint32_t file_type_of(DType t) { return t == DType::F16 ? 1 : t == DType::BF16 ? 32 : 0; }

// Q/K heads to permute: n_head rows groups of head_dim (0: none).
struct Perm {
  int64_t n_head = 0;
  int64_t head_dim = 0;
};

// Llama 3 rope scaling as llama.cpp stores it: per rotary frequency the factor its rope divides by.
std::vector<float> llama3_rope_factors(const HfConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  const double low_wl = static_cast<double>(r.original_max_position) / r.low_freq_factor;
  const double high_wl = static_cast<double>(r.original_max_position) / r.high_freq_factor;
  std::vector<float> f;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const double freq = 1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(c.head_dim));
    const double wl = 2.0 * M_PI / freq;
    double factor;
    if (wl < high_wl) {
      factor = 1.0;
    } else if (wl > low_wl) {
      factor = r.factor;
    } else {
      const double smooth = (static_cast<double>(r.original_max_position) / wl - r.low_freq_factor) /
                            (r.high_freq_factor - r.low_freq_factor);
      factor = 1.0 / ((1.0 - smooth) / r.factor + smooth);
    }
    f.push_back(static_cast<float>(factor));
  }
  return f;
}

class Converter {
 public:
  Converter(const std::string& dir, const ConvertOptions& o)
      : dir_(dir),
        opts_(o),
        out_(o.keep_source_types ? OutType{DType::F32, 0} : parse_out_type(o.type)),
        cfg_(parse_hf_config(dir + "/config.json")) {}

  HfGgufParts build() {
    store_ = std::make_shared<HfTensorStore>();
    store_->st = st::SafetensorsSet::open_dir(dir_);
    st_ = store_->st.get();
    if (opts_.keep_source_types) {
      // general.file_type names the dtype most weights keep: the embedding's.
      const st::StTensor* emb = st_->find("model.embed_tokens.weight");
      out_.file_type = file_type_of(emb ? dtype_of(emb->dtype) : DType::F32);
    }
    HfVocab vocab = read_hf_vocab(dir_, cfg_);
    gguf::GgufWriter w;  // collects the metadata, in the order convert writes it
    write_hparams(w);
    write_vocab(w, vocab);
    add_tensors();
    HfGgufParts p;
    p.metadata = w.metadata();
    p.tensors = std::move(tensors_);
    p.store = std::move(store_);
    p.cfg = cfg_;
    return p;
  }

 private:
  void write_hparams(gguf::GgufWriter& w) {
    const std::string a = cfg_.gguf_arch();
    std::string name = opts_.name;
    if (name.empty()) name = fs::path(dir_).filename().string();
    if (name.empty()) name = fs::path(dir_).parent_path().filename().string();
    w.set_string("general.architecture", a);
    w.set_string("general.name", name);
    w.set_u32("general.file_type", out_.file_type);
    if (!opts_.keep_source_types && out_.type == DType::Q8_0) w.set_u32("general.quantization_version", 2);
    w.set_u32(a + ".vocab_size", static_cast<uint32_t>(cfg_.n_vocab));
    w.set_u32(a + ".context_length", static_cast<uint32_t>(cfg_.max_position_embeddings));
    w.set_u32(a + ".embedding_length", static_cast<uint32_t>(cfg_.n_embd));
    w.set_u32(a + ".block_count", static_cast<uint32_t>(cfg_.n_layer));
    w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(cfg_.n_ff));
    w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(cfg_.n_head));
    w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(cfg_.n_head_kv));
    w.set_f32(a + ".rope.freq_base", static_cast<float>(cfg_.rope_theta));
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(cfg_.rms_eps));
    if (cfg_.head_dim != cfg_.n_embd / cfg_.n_head || cfg_.n_embd % cfg_.n_head != 0) {
      w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(cfg_.head_dim));
      w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(cfg_.head_dim));
    }
    if (a == "llama") w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(cfg_.head_dim));
    if (cfg_.rope_scaling.type == "linear") {
      w.set_string(a + ".rope.scaling.type", "linear");
      w.set_f32(a + ".rope.scaling.factor", static_cast<float>(cfg_.rope_scaling.factor));
    }
    if (cfg_.rope_scaling.type == "llama3" && a != "llama")
      fail("{}: key rope_scaling.rope_type = llama3 is only supported for Llama models", cfg_.path);
  }

  void write_vocab(gguf::GgufWriter& w, const HfVocab& v) {
    w.set_string("tokenizer.ggml.model", v.model);
    w.set_string("tokenizer.ggml.pre", v.pre);
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    if (!v.scores.empty()) w.set_f32_array("tokenizer.ggml.scores", v.scores);
    w.set_i32_array("tokenizer.ggml.token_type", v.types);
    if (v.model == "gpt2") w.set_string_array("tokenizer.ggml.merges", v.merges);
    if (v.bos >= 0) w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos));
    if (v.eos >= 0) w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos));
    if (v.unk >= 0) w.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk));
    if (v.pad >= 0) w.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.pad));
    if (v.add_bos >= 0) w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos == 1);
    if (v.add_eos >= 0) w.set_bool("tokenizer.ggml.add_eos_token", v.add_eos == 1);
    if (!v.chat_template.empty()) w.set_string("tokenizer.chat_template", v.chat_template);
  }

  // HF tensor `hf`, checked against `shape` (PyTorch order).
  const st::StTensor& src(const std::string& hf, const std::vector<int64_t>& shape) {
    used_.insert(hf);
    return st_->tensor(hf, shape);
  }

  uint8_t* own(const std::string& name, size_t n_bytes) {
    std::vector<uint8_t>& b = store_->owned[name];
    b.resize(n_bytes);
    return b.data();
  }

  void push(const std::string& name, DType type, std::vector<int64_t> shape, const void* data, size_t n_bytes) {
    gguf::TensorInfo t;
    t.name = name;
    t.type = type;
    t.shape = std::move(shape);
    t.data = data;
    t.n_bytes = n_bytes;
    tensors_.push_back(std::move(t));
  }

  // NOTE: the one place that decides whether a tensor is used in place. `t` (GGUF `shape`, ggml order)
  // becomes type `to`: it stays in the mapping when its type is `to`, it needs no permutation and its
  // address suits its element size; otherwise the result goes to an owned buffer (rows permuted or
  // copied in the source dtype, then converted through f32 when the type changes).
  void add(const std::string& name, const st::StTensor& t, std::vector<int64_t> shape, DType to, Perm perm) {
    const DType from = dtype_of(t.dtype);
    const size_t el = st::st_dtype_size(t.dtype);
    const auto* p = static_cast<const uint8_t*>(t.data);
    const int64_t row_len = shape[0];
    const int64_t rows = t.n_elements() / row_len;
    const bool aligned = reinterpret_cast<uintptr_t>(p) % el == 0;
    if (perm.n_head > 0 || !aligned) {
      uint8_t* b = own(name, t.n_bytes);
      if (perm.n_head > 0)
        permute_rows(p, b, perm.n_head, perm.head_dim, t.n_bytes / static_cast<size_t>(perm.n_head * perm.head_dim));
      else
        std::memcpy(b, p, t.n_bytes);
      p = b;
    }
    if (to == from) {
      push(name, to, std::move(shape), p, t.n_bytes);
      return;
    }
    const int64_t n = rows * row_len;
    std::vector<float> x(static_cast<size_t>(n));
    dtype_traits(from)->to_float(p, x.data(), n);
    const size_t n_bytes = row_bytes(to, row_len) * static_cast<size_t>(rows);
    uint8_t* q = own(name, n_bytes);  // replaces the permuted copy, which `x` holds now
    dtype_traits(to)->from_float(x.data(), q, n);
    push(name, to, std::move(shape), q, n_bytes);
  }

  void add_vec(const std::string& name, const st::StTensor& t, Perm perm = {}) {
    add(name, t, {t.n_elements()}, DType::F32, perm);
  }

  void add_mat(const std::string& name, const st::StTensor& t, Perm perm = {}) {
    const int64_t rows = t.shape[0], row_len = t.shape[1];
    DType to = opts_.keep_source_types ? dtype_of(t.dtype) : out_.type;
    if (to == DType::Q8_0 && row_len % 32 != 0) to = DType::F16;
    add(name, t, {row_len, rows}, to, perm);
  }

  void add_tensors() {
    const int64_t E = cfg_.n_embd, V = cfg_.n_vocab, F = cfg_.n_ff, hd = cfg_.head_dim;
    const int64_t Dq = cfg_.n_head * hd, Dkv = cfg_.n_head_kv * hd;
    const std::string a = cfg_.gguf_arch();
    add_mat("token_embd.weight", src("model.embed_tokens.weight", {V, E}));
    add_vec("output_norm.weight", src("model.norm.weight", {E}));
    if (!cfg_.tie_word_embeddings) {
      if (!st_->find("lm_head.weight"))
        fail("{}: tensor lm_head.weight is missing (tie_word_embeddings is false)", st_->source());
      add_mat("output.weight", src("lm_head.weight", {V, E}));
    } else if (st_->find("lm_head.weight")) {
      used_.insert("lm_head.weight");  // a tied checkpoint may still carry the copy; llama.cpp drops it
    }
    if (cfg_.rope_scaling.type == "llama3") {
      const std::vector<float> f = llama3_rope_factors(cfg_);
      uint8_t* b = own("rope_freqs.weight", f.size() * sizeof(float));
      std::memcpy(b, f.data(), f.size() * sizeof(float));
      push("rope_freqs.weight", DType::F32, {static_cast<int64_t>(f.size())}, b, f.size() * sizeof(float));
    }
    const bool perm = cfg_.permute_qk();
    const Perm pq = perm ? Perm{cfg_.n_head, hd} : Perm{};
    const Perm pk = perm ? Perm{cfg_.n_head_kv, hd} : Perm{};
    for (int64_t il = 0; il < cfg_.n_layer; ++il) {
      const std::string p = "model.layers." + std::to_string(il) + ".";
      const std::string b = "blk." + std::to_string(il) + ".";
      add_vec(b + "attn_norm.weight", src(p + "input_layernorm.weight", {E}));
      add_mat(b + "attn_q.weight", src(p + "self_attn.q_proj.weight", {Dq, E}), pq);
      add_mat(b + "attn_k.weight", src(p + "self_attn.k_proj.weight", {Dkv, E}), pk);
      add_mat(b + "attn_v.weight", src(p + "self_attn.v_proj.weight", {Dkv, E}));
      if (cfg_.attention_bias) {
        add_vec(b + "attn_q.bias", src(p + "self_attn.q_proj.bias", {Dq}), pq);
        add_vec(b + "attn_k.bias", src(p + "self_attn.k_proj.bias", {Dkv}), pk);
        add_vec(b + "attn_v.bias", src(p + "self_attn.v_proj.bias", {Dkv}));
      }
      if (a == "qwen3") {
        add_vec(b + "attn_q_norm.weight", src(p + "self_attn.q_norm.weight", {hd}));
        add_vec(b + "attn_k_norm.weight", src(p + "self_attn.k_norm.weight", {hd}));
      }
      add_mat(b + "attn_output.weight", src(p + "self_attn.o_proj.weight", {E, Dq}));
      add_vec(b + "ffn_norm.weight", src(p + "post_attention_layernorm.weight", {E}));
      add_mat(b + "ffn_gate.weight", src(p + "mlp.gate_proj.weight", {F, E}));
      add_mat(b + "ffn_up.weight", src(p + "mlp.up_proj.weight", {F, E}));
      add_mat(b + "ffn_down.weight", src(p + "mlp.down_proj.weight", {E, F}));
    }
    // Like llama.cpp's converter, refuse tensors it cannot place rather than silently dropping weights.
    for (const auto& n : st_->names()) {
      if (used_.count(n)) continue;
      if (n.find("rotary_emb.inv_freq") != std::string::npos) continue;  // recomputed buffers of old checkpoints
      fail("{}: tensor {} is not used by architecture {} ({})", st_->source(), n, a, cfg_.architecture);
    }
  }

  std::string dir_;
  ConvertOptions opts_;
  OutType out_;
  HfConfig cfg_;
  std::shared_ptr<HfTensorStore> store_;
  const st::SafetensorsSet* st_ = nullptr;
  std::set<std::string> used_;
  std::vector<gguf::TensorInfo> tensors_;
};

}  // namespace

HfGgufParts build_hf_gguf(const std::string& dir, const ConvertOptions& opts) {
  if (!fs::is_directory(dir)) fail("{}: not a folder", dir);
  Converter c(dir, opts);
  return c.build();
}

ConvertStats convert_hf_to_gguf(const std::string& dir, const std::string& out_path, const ConvertOptions& opts) {
  ConvertOptions o = opts;
  o.keep_source_types = false;
  HfGgufParts p = build_hf_gguf(dir, o);
  gguf::GgufWriter w;
  for (const auto& [key, v] : p.metadata) w.set_value(key, v);
  ConvertStats stats;
  stats.arch = p.cfg.gguf_arch();
  for (const gguf::TensorInfo& t : p.tensors) {
    w.add_tensor(t.name, t.type, t.shape, t.data, t.n_bytes);
    p.store->owned.erase(t.name);  // the writer holds a copy now: keep the peak near one model's size
    stats.n_tensors++;
    stats.n_bytes += t.n_bytes;
  }
  w.write(out_path);
  return stats;
}

}  // namespace ignis::hf
