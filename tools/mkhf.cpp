// ignis-mkhf: writes a random-weight Hugging Face model folder in a real architecture's layout
// (test inputs for `ignis convert` and the safetensors / config.json readers; see scripts/ref/).
//
// The folder holds config.json, generation_config.json, model.safetensors (or --shards N shards plus
// model.safetensors.index.json) with F32, F16 or BF16 weights named as transformers names them, and
// the real Qwen2 tokenizer files copied from --tokenizer DIR (vocab.json, merges.txt, added_tokens.json,
// special_tokens_map.json, and its tokenizer_config*.json as tokenizer_config.json). The weights are a
// pure function of (--arch, --preset, --seed): splitmix64 + Box-Muller seeded per tensor name.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"

using ignis::fail;
namespace fs = std::filesystem;

namespace {

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<float> normal(size_t n, uint64_t seed, const std::string& name, double mean, double sd) {
  std::vector<float> out(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull ^ fnv1a(name);
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < n; i += 2) {
    double u1 = (static_cast<double>(splitmix64(s) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(splitmix64(s) >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(mean + sd * r * std::cos(two_pi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(mean + sd * r * std::sin(two_pi * u2));
  }
  return out;
}

struct Shape {
  int64_t n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, head_dim = 16, n_ff = 128;
  int64_t n_vocab = 151680;  // Qwen2's 151643 + 3 added tokens, padded as real checkpoints are
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;  // PyTorch order
  std::vector<float> data;
};

struct Options {
  std::string arch, preset = "tiny", dtype = "f32", out, tokenizer;
  uint64_t seed = 1;
  int shards = 1;
  bool llama3_rope = false;
};

std::vector<Tensor> make_tensors(const Options& o, const Shape& d, bool tied) {
  std::vector<Tensor> ts;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, double mean, double sd) {
    size_t n = 1;
    for (int64_t x : shape) n *= static_cast<size_t>(x);
    ts.push_back({name, shape, normal(n, o.seed, name, mean, sd)});
  };
  const int64_t E = d.n_embd, Dq = d.n_head * d.head_dim, Dkv = d.n_head_kv * d.head_dim;
  add("model.embed_tokens.weight", {d.n_vocab, E}, 0.0, 0.5);
  add("model.norm.weight", {E}, 1.0, 0.1);
  if (!tied) add("lm_head.weight", {d.n_vocab, E}, 0.0, 1.0 / std::sqrt(static_cast<double>(E)));
  for (int64_t il = 0; il < d.n_layer; ++il) {
    const std::string p = "model.layers." + std::to_string(il) + ".";
    const double sd_e = 1.0 / std::sqrt(static_cast<double>(E));
    add(p + "input_layernorm.weight", {E}, 1.0, 0.1);
    add(p + "self_attn.q_proj.weight", {Dq, E}, 0.0, sd_e);
    add(p + "self_attn.k_proj.weight", {Dkv, E}, 0.0, sd_e);
    add(p + "self_attn.v_proj.weight", {Dkv, E}, 0.0, sd_e);
    if (o.arch == "qwen2") {
      add(p + "self_attn.q_proj.bias", {Dq}, 0.0, 0.2);
      add(p + "self_attn.k_proj.bias", {Dkv}, 0.0, 0.2);
      add(p + "self_attn.v_proj.bias", {Dkv}, 0.0, 0.2);
    }
    if (o.arch == "qwen3") {
      add(p + "self_attn.q_norm.weight", {d.head_dim}, 1.0, 0.1);
      add(p + "self_attn.k_norm.weight", {d.head_dim}, 1.0, 0.1);
    }
    add(p + "self_attn.o_proj.weight", {E, Dq}, 0.0, 1.0 / std::sqrt(static_cast<double>(Dq)));
    add(p + "post_attention_layernorm.weight", {E}, 1.0, 0.1);
    add(p + "mlp.gate_proj.weight", {d.n_ff, E}, 0.0, sd_e);
    add(p + "mlp.up_proj.weight", {d.n_ff, E}, 0.0, sd_e);
    add(p + "mlp.down_proj.weight", {E, d.n_ff}, 0.0, 1.0 / std::sqrt(static_cast<double>(d.n_ff)));
  }
  return ts;
}

void write_safetensors(const std::string& path, const std::vector<const Tensor*>& ts, const std::string& dtype) {
  const size_t es = dtype == "f32" ? 4 : 2;
  const char* st_name = dtype == "f32" ? "F32" : dtype == "f16" ? "F16" : "BF16";
  nlohmann::ordered_json h;
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t off = 0;
  for (const Tensor* t : ts) {
    uint64_t n = t->data.size() * es;
    h[t->name] = {{"dtype", st_name}, {"shape", t->shape}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  std::string hs = h.dump();
  while ((hs.size() + 8) % 8 != 0) hs += ' ';
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("{}: cannot create", path);
  uint64_t hl = hs.size();
  unsigned char lb[8];
  for (int i = 0; i < 8; ++i) lb[i] = static_cast<unsigned char>(hl >> (8 * i));
  out.write(reinterpret_cast<const char*>(lb), 8);
  out.write(hs.data(), static_cast<std::streamsize>(hs.size()));
  std::vector<uint8_t> buf;
  for (const Tensor* t : ts) {
    buf.resize(t->data.size() * es);
    for (size_t i = 0; i < t->data.size(); ++i) {
      if (es == 4) {
        std::memcpy(&buf[4 * i], &t->data[i], 4);
      } else {
        uint16_t hv = dtype == "f16" ? ignis::f32_to_f16(t->data[i]) : ignis::f32_to_bf16(t->data[i]);
        std::memcpy(&buf[2 * i], &hv, 2);
      }
    }
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
  }
  if (!out) fail("{}: write failed", path);
}

void write_json(const std::string& path, const nlohmann::ordered_json& j) {
  std::ofstream out(path);
  if (!out) fail("{}: cannot create", path);
  out << j.dump(2) << "\n";
}

nlohmann::ordered_json config_json(const Options& o, const Shape& d, bool tied) {
  static const std::map<std::string, std::string> kArch = {{"llama", "LlamaForCausalLM"},
                                                           {"mistral", "MistralForCausalLM"},
                                                           {"qwen2", "Qwen2ForCausalLM"},
                                                           {"qwen3", "Qwen3ForCausalLM"}};
  nlohmann::ordered_json c;
  c["architectures"] = {kArch.at(o.arch)};
  c["model_type"] = o.arch;
  c["vocab_size"] = d.n_vocab;
  c["hidden_size"] = d.n_embd;
  c["intermediate_size"] = d.n_ff;
  c["num_hidden_layers"] = d.n_layer;
  c["num_attention_heads"] = d.n_head;
  c["num_key_value_heads"] = d.n_head_kv;
  if (o.arch == "qwen3" || d.head_dim != d.n_embd / d.n_head) c["head_dim"] = d.head_dim;
  c["hidden_act"] = "silu";
  c["max_position_embeddings"] = 4096;
  c["rms_norm_eps"] = o.arch == "llama" || o.arch == "mistral" ? 1e-5 : 1e-6;
  c["rope_theta"] = o.arch == "llama" ? 500000.0 : o.arch == "mistral" ? 10000.0 : 1000000.0;
  if (o.llama3_rope)
    c["rope_scaling"] = {{"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 64}, {"rope_type", "llama3"}};
  else
    c["rope_scaling"] = nullptr;
  if (o.arch == "llama" || o.arch == "qwen3") c["attention_bias"] = false;
  if (o.arch == "mistral") c["sliding_window"] = nullptr;
  c["tie_word_embeddings"] = tied;
  c["bos_token_id"] = 151643;
  c["eos_token_id"] = 151645;
  c["torch_dtype"] = o.dtype == "f32" ? "float32" : o.dtype == "f16" ? "float16" : "bfloat16";
  return c;
}

void copy_tokenizer(const std::string& src, const std::string& dst) {
  for (const char* f : {"vocab.json", "merges.txt", "added_tokens.json", "special_tokens_map.json"}) {
    if (!fs::exists(src + "/" + f)) fail("{}/{}: missing (--tokenizer must be the Qwen2 tokenizer folder)", src, f);
    fs::copy_file(src + "/" + f, dst + "/" + f, fs::copy_options::overwrite_existing);
    fs::permissions(dst + "/" + f, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
  }
  std::string cfg;
  for (const auto& e : fs::directory_iterator(src)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("tokenizer_config", 0) == 0 && n.size() > 5 && n.substr(n.size() - 5) == ".json") cfg = e.path().string();
  }
  if (cfg.empty()) fail("{}: no tokenizer_config*.json", src);
  fs::copy_file(cfg, dst + "/tokenizer_config.json", fs::copy_options::overwrite_existing);
  fs::permissions(dst + "/tokenizer_config.json", fs::perms::owner_read | fs::perms::owner_write,
                  fs::perm_options::add);
}

void run(const Options& o) {
  if (o.arch != "llama" && o.arch != "mistral" && o.arch != "qwen2" && o.arch != "qwen3")
    fail("--arch {}: unknown architecture (llama, mistral, qwen2, qwen3)", o.arch);
  if (o.preset != "tiny") fail("--preset {}: unknown preset (tiny)", o.preset);
  if (o.dtype != "f32" && o.dtype != "f16" && o.dtype != "bf16") fail("--dtype {}: must be f32, f16 or bf16", o.dtype);
  if (o.shards < 1 || o.shards > 16) fail("--shards {}: must be in [1, 16]", o.shards);
  if (o.llama3_rope && o.arch != "llama") fail("--llama3-rope: only for --arch llama");
  Shape d;
  if (o.arch == "qwen3") d.head_dim = 32;  // Qwen3 sets head_dim explicitly, != hidden / heads
  const bool tied = o.arch == "qwen2" || o.arch == "qwen3";
  fs::create_directories(o.out);
  std::vector<Tensor> ts = make_tensors(o, d, tied);
  std::sort(ts.begin(), ts.end(), [](const Tensor& a, const Tensor& b) { return a.name < b.name; });
  if (o.shards == 1) {
    std::vector<const Tensor*> all;
    for (const auto& t : ts) all.push_back(&t);
    write_safetensors(o.out + "/model.safetensors", all, o.dtype);
  } else {
    nlohmann::ordered_json idx;
    idx["metadata"] = {{"total_size", 0}};
    std::vector<std::vector<const Tensor*>> parts(static_cast<size_t>(o.shards));
    for (size_t i = 0; i < ts.size(); ++i) parts[i * o.shards / ts.size()].push_back(&ts[i]);
    for (int s = 0; s < o.shards; ++s) {
      std::string fname = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, o.shards);
      write_safetensors(o.out + "/" + fname, parts[s], o.dtype);
      for (const Tensor* t : parts[s]) idx["weight_map"][t->name] = fname;
    }
    write_json(o.out + "/model.safetensors.index.json", idx);
  }
  write_json(o.out + "/config.json", config_json(o, d, tied));
  nlohmann::ordered_json g;
  g["bos_token_id"] = 151643;
  g["eos_token_id"] = {151645, 151643};
  g["pad_token_id"] = 151643;
  write_json(o.out + "/generation_config.json", g);
  copy_tokenizer(o.tokenizer, o.out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ignis-mkhf: write a random-weight Hugging Face model folder"};
  Options o;
  app.add_option("--arch", o.arch, "llama | mistral | qwen2 | qwen3")->required();
  app.add_option("--preset", o.preset, "shape preset: tiny")->capture_default_str();
  app.add_option("--dtype", o.dtype, "f32 | f16 | bf16")->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_option("--shards", o.shards, "number of safetensors shards")->capture_default_str();
  app.add_flag("--llama3-rope", o.llama3_rope, "Llama 3 rope_scaling (factor 8, original context 64)");
  app.add_option("--tokenizer", o.tokenizer, "the Qwen2 tokenizer folder (shared/hf-tokenizers/qwen2)")->required();
  app.add_option("-o,--out", o.out, "output folder")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    run(o);
  } catch (const std::exception& e) {
    std::cerr << "ignis-mkhf: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
