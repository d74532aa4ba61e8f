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
// `rows` holds n_head * head_dim rows of `row_len` floats.
std::vector<float> permute_rows(const std::vector<float>& w, int64_t n_head, int64_t head_dim, int64_t row_len) {
  std::vector<float> out(w.size());
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t s = 0; s < 2; ++s) {
        const int64_t src = h * head_dim + s * half + j;
        const int64_t dst = h * head_dim + 2 * j + s;
        std::memcpy(&out[static_cast<size_t>(dst * row_len)], &w[static_cast<size_t>(src * row_len)],
                    static_cast<size_t>(row_len) * sizeof(float));
      }
  return out;
}

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
      : dir_(dir), opts_(o), out_(parse_out_type(o.type)), cfg_(parse_hf_config(dir + "/config.json")) {}

  ConvertStats run(const std::string& out_path) {
    st_ = st::SafetensorsSet::open_dir(dir_);
    HfVocab vocab = read_hf_vocab(dir_, cfg_);
    gguf::GgufWriter w;
    write_hparams(w);
    write_vocab(w, vocab);
    write_tensors(w);
    w.write(out_path);
    stats_.arch = cfg_.gguf_arch();
    return stats_;
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
    if (out_.type == DType::Q8_0) w.set_u32("general.quantization_version", 2);
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
    w.set_i32_array("tokenizer.ggml.token_type", v.types);
    w.set_string_array("tokenizer.ggml.merges", v.merges);
    if (v.bos >= 0) w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos));
    if (v.eos >= 0) w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos));
    if (v.unk >= 0) w.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk));
    if (v.pad >= 0) w.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.pad));
    if (v.add_bos >= 0) w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos == 1);
    if (v.add_eos >= 0) w.set_bool("tokenizer.ggml.add_eos_token", v.add_eos == 1);
    if (!v.chat_template.empty()) w.set_string("tokenizer.chat_template", v.chat_template);
  }

  // Reads HF tensor `hf` (checked against `shape`, PyTorch order) as f32.
  std::vector<float> read(const std::string& hf, const std::vector<int64_t>& shape) {
    const st::StTensor& t = st_->tensor(hf, shape);
    used_.insert(hf);
    std::vector<float> x(static_cast<size_t>(t.n_elements()));
    t.to_f32(x.data());
    return x;
  }

  void add_vec(gguf::GgufWriter& w, const std::string& name, const std::vector<float>& x) {
    w.add_tensor(name, DType::F32, {static_cast<int64_t>(x.size())}, x.data(), x.size() * sizeof(float));
    stats_.n_tensors++;
    stats_.n_bytes += x.size() * sizeof(float);
  }

  // x: [rows, row_len] row-major -> GGUF shape [row_len, rows] in the output type.
  void add_mat(gguf::GgufWriter& w, const std::string& name, const std::vector<float>& x, int64_t rows,
               int64_t row_len) {
    DType t = out_.type;
    if (t == DType::Q8_0 && row_len % 32 != 0) t = DType::F16;
    const DTypeTraits* tr = dtype_traits(t);
    std::vector<uint8_t> q(row_bytes(t, row_len) * static_cast<size_t>(rows));
    tr->from_float(x.data(), q.data(), row_len * rows);
    w.add_tensor(name, t, {row_len, rows}, q.data(), q.size());
    stats_.n_tensors++;
    stats_.n_bytes += q.size();
  }

  void write_tensors(gguf::GgufWriter& w) {
    const int64_t E = cfg_.n_embd, V = cfg_.n_vocab, F = cfg_.n_ff, hd = cfg_.head_dim;
    const int64_t Dq = cfg_.n_head * hd, Dkv = cfg_.n_head_kv * hd;
    const std::string a = cfg_.gguf_arch();
    add_mat(w, "token_embd.weight", read("model.embed_tokens.weight", {V, E}), V, E);
    add_vec(w, "output_norm.weight", read("model.norm.weight", {E}));
    if (!cfg_.tie_word_embeddings) {
      if (!st_->find("lm_head.weight"))
        fail("{}: tensor lm_head.weight is missing (tie_word_embeddings is false)", st_->source());
      add_mat(w, "output.weight", read("lm_head.weight", {V, E}), V, E);
    } else if (st_->find("lm_head.weight")) {
      used_.insert("lm_head.weight");  // a tied checkpoint may still carry the copy; llama.cpp drops it
    }
    if (cfg_.rope_scaling.type == "llama3") add_vec(w, "rope_freqs.weight", llama3_rope_factors(cfg_));
    const bool perm = cfg_.permute_qk();
    for (int64_t il = 0; il < cfg_.n_layer; ++il) {
      const std::string p = "model.layers." + std::to_string(il) + ".";
      const std::string b = "blk." + std::to_string(il) + ".";
      add_vec(w, b + "attn_norm.weight", read(p + "input_layernorm.weight", {E}));
      auto q = read(p + "self_attn.q_proj.weight", {Dq, E});
      auto k = read(p + "self_attn.k_proj.weight", {Dkv, E});
      if (perm) {
        q = permute_rows(q, cfg_.n_head, hd, E);
        k = permute_rows(k, cfg_.n_head_kv, hd, E);
      }
      add_mat(w, b + "attn_q.weight", q, Dq, E);
      add_mat(w, b + "attn_k.weight", k, Dkv, E);
      add_mat(w, b + "attn_v.weight", read(p + "self_attn.v_proj.weight", {Dkv, E}), Dkv, E);
      if (cfg_.attention_bias) {
        auto qb = read(p + "self_attn.q_proj.bias", {Dq});
        auto kb = read(p + "self_attn.k_proj.bias", {Dkv});
        if (perm) {
          qb = permute_rows(qb, cfg_.n_head, hd, 1);
          kb = permute_rows(kb, cfg_.n_head_kv, hd, 1);
        }
        add_vec(w, b + "attn_q.bias", qb);
        add_vec(w, b + "attn_k.bias", kb);
        add_vec(w, b + "attn_v.bias", read(p + "self_attn.v_proj.bias", {Dkv}));
      }
      if (a == "qwen3") {
        add_vec(w, b + "attn_q_norm.weight", read(p + "self_attn.q_norm.weight", {hd}));
        add_vec(w, b + "attn_k_norm.weight", read(p + "self_attn.k_norm.weight", {hd}));
      }
      add_mat(w, b + "attn_output.weight", read(p + "self_attn.o_proj.weight", {E, Dq}), E, Dq);
      add_vec(w, b + "ffn_norm.weight", read(p + "post_attention_layernorm.weight", {E}));
      add_mat(w, b + "ffn_gate.weight", read(p + "mlp.gate_proj.weight", {F, E}), F, E);
      add_mat(w, b + "ffn_up.weight", read(p + "mlp.up_proj.weight", {F, E}), F, E);
      add_mat(w, b + "ffn_down.weight", read(p + "mlp.down_proj.weight", {E, F}), E, F);
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
  std::unique_ptr<st::SafetensorsSet> st_;
  std::set<std::string> used_;
  ConvertStats stats_;
};

}  // namespace

ConvertStats convert_hf_to_gguf(const std::string& dir, const std::string& out_path, const ConvertOptions& opts) {
  if (!fs::is_directory(dir)) fail("{}: not a folder", dir);
  Converter c(dir, opts);
  return c.run(out_path);
}

}  // namespace ignis::hf
