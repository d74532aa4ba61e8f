// ignis-mkmodel: writes GGUF models with random weights in the real shapes of llama, qwen2 and qwen3.
//
// The files are test and benchmark inputs: llama.cpp loads them (llama.cpp-compatible metadata and a
// GPT-2-style byte-level BPE vocabulary), ignis loads them, and the reference scripts under scripts/ref
// evaluate them. Weights are drawn from a fixed-seed generator keyed by (seed, tensor name), so a file
// is reproducible bit for bit and independent of the order tensors are written in.
//
// NOTE on the weight distribution: matrices are N(0, 1/fan_in), so every layer adds a contribution of
// about unit scale to the residual stream, and token embeddings (N(0, kEmbdGain^2/n_embd)) are small
// beside it. The final norm's weights are near scale/kEmbdGain, so logits have a standard deviation of
// about `scale`:
// scale 1 gives the nearly flat distributions of a random model, a larger --scale makes them peaky so
// that greedy sequences of two implementations can be compared over many steps. Putting the gain in
// output_norm rather than in the embedding matters for tied models: a large tied embedding would make
// every token predict itself (e.e >> e.r), a degenerate model.
//
// Quantized outputs use ignis' reference quantizers (core/dtype.h from_float). Goldens for quantized
// types are made with llama.cpp's own llama-quantize instead (scripts/ref/make_goldens.sh).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "format/gguf.h"

namespace {

using ignis::DType;
using ignis::fail;

struct Dims {
  std::string arch;
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
  int64_t n_ctx = 0;
  bool tied = true;
  double rope_theta = 10000.0;
  double rms_eps = 1e-5;
};

struct Preset {
  const char* name;
  Dims dims;
};

// Real shapes from the models' published config.json files, and tiny/small test variants.
const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = {
      {"qwen2.5-0.5b", {"qwen2", 896, 24, 14, 2, 64, 4864, 151936, 32768, true, 1e6, 1e-6}},
      {"qwen2.5-1.5b", {"qwen2", 1536, 28, 12, 2, 128, 8960, 151936, 32768, true, 1e6, 1e-6}},
      {"llama-3.2-1b", {"llama", 2048, 16, 32, 8, 64, 8192, 128256, 131072, true, 500000.0, 1e-5}},
      {"qwen3-0.6b", {"qwen3", 1024, 28, 16, 8, 128, 3072, 151936, 40960, true, 1e6, 1e-6}},
      // tiny-*: every matrix row a multiple of 32 (block-32 types), f32 file < 2 MB.
      {"tiny-llama", {"llama", 128, 2, 4, 2, 32, 256, 512, 256, false, 10000.0, 1e-5}},
      {"tiny-qwen2", {"qwen2", 128, 2, 4, 2, 32, 256, 512, 256, true, 1e6, 1e-6}},
      {"tiny-qwen3", {"qwen3", 128, 2, 4, 2, 64, 256, 512, 256, true, 1e6, 1e-6}},
      // small-*: every matrix row a multiple of 256 (K-quants).
      {"small-llama", {"llama", 256, 2, 4, 2, 64, 256, 512, 256, false, 10000.0, 1e-5}},
      {"small-qwen2", {"qwen2", 256, 2, 4, 2, 64, 256, 512, 256, true, 1e6, 1e-6}},
      {"small-qwen3", {"qwen3", 256, 2, 4, 2, 128, 256, 512, 256, true, 1e6, 1e-6}},
  };
  return p;
}

// --- deterministic normal generator (splitmix64 + Box-Muller) -----------------------------------

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Fills `out` with mean + stddev * N(0,1), the stream keyed by (seed, name).
void fill_normal(std::vector<float>& out, uint64_t seed, const std::string& name, double mean, double stddev) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull ^ fnv1a(name);
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < out.size(); i += 2) {
    // u1 in (0, 1], u2 in [0, 1)
    double u1 = (static_cast<double>(splitmix64(s) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(splitmix64(s) >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(mean + stddev * r * std::cos(two_pi * u2));
    if (i + 1 < out.size()) out[i + 1] = static_cast<float>(mean + stddev * r * std::sin(two_pi * u2));
  }
}

// --- output types ------------------------------------------------------------------------------

struct TypeSpec {
  std::string name;   // as given on the command line
  DType base;         // the type of most matrices
  bool k_mix = false; // q4_k_m: llama-quantize-like mix
  uint32_t file_type; // general.file_type (llama_ftype)
};

TypeSpec parse_type(const std::string& s) {
  static const std::map<std::string, std::pair<DType, uint32_t>> m = {
      {"f32", {DType::F32, 0}},   {"f16", {DType::F16, 1}},   {"bf16", {DType::BF16, 32}},
      {"q4_0", {DType::Q4_0, 2}}, {"q4_1", {DType::Q4_1, 3}}, {"q8_0", {DType::Q8_0, 7}},
      {"q5_0", {DType::Q5_0, 8}}, {"q5_1", {DType::Q5_1, 9}}, {"q2_k", {DType::Q2_K, 10}},
      {"q3_k", {DType::Q3_K, 11}}, {"q4_k", {DType::Q4_K, 14}}, {"q5_k", {DType::Q5_K, 16}},
      {"q6_k", {DType::Q6_K, 18}},
  };
  std::string l;
  for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "q4_k_m") return {l, DType::Q4_K, true, 15};
  auto it = m.find(l);
  if (it == m.end()) fail("--type {}: unknown type (f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k q4_k_m)", s);
  return {l, it->second.first, false, it->second.second};
}

// Picks the type a matrix with rows of `row_len` elements can be stored in: `want` when the row is a
// whole number of blocks, else the fallback llama-quantize uses (K-quants -> 32-element types -> f16).
DType fit_type(DType want, int64_t row_len) {
  const auto* tr = ignis::dtype_traits(want);
  if (row_len % tr->block_size == 0) return want;
  DType fb = DType::F16;
  switch (want) {
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: fb = DType::Q5_0; break;
    case DType::Q5_K: fb = DType::Q5_1; break;
    case DType::Q6_K: fb = DType::Q8_0; break;
    default: fb = DType::F16;
  }
  return fit_type(fb, row_len);
}

// q4_k_m: ~llama-quantize's recipe. The output head gets Q6_K; attn_v and ffn_down get Q6_K in the
// first and last eighth of the layers and every third layer in between; everything else Q4_K.
DType mix_type(const std::string& role, int64_t il, int64_t n_layer) {
  if (role == "output") return DType::Q6_K;
  if (role == "attn_v" || role == "ffn_down") {
    bool more = il < n_layer / 8 || il >= 7 * n_layer / 8 || (il - n_layer / 8) % 3 == 2;
    return more ? DType::Q6_K : DType::Q4_K;
  }
  return DType::Q4_K;
}

// --- vocabulary --------------------------------------------------------------------------------

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;  // 1 normal, 3 control, 4 user defined, 5 unused
  std::vector<std::string> merges;
  std::string pre;
  uint32_t bos = 0, eos = 0;
  bool add_bos = false;
};

// GPT-2's byte -> printable code point map, as UTF-8.
std::vector<std::string> byte_symbols() {
  std::vector<int> cps(256, -1);
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    cps[b] = printable ? b : 256 + extra++;
  }
  std::vector<std::string> out(256);
  for (int b = 0; b < 256; ++b) {
    int cp = cps[b];
    std::string s;
    if (cp < 0x80) s += static_cast<char>(cp);
    else { s += static_cast<char>(0xC0 | (cp >> 6)); s += static_cast<char>(0x80 | (cp & 0x3F)); }
    out[b] = s;
  }
  return out;
}

// Synthetic byte-level vocabulary: ids 0..255 are the 256 byte symbols (id == byte value), then filler
// tokens "[fN]", then three control tokens at the end (chat markers and end of text).
Vocab synthetic_vocab(const Dims& d) {
  if (d.n_vocab < 260) fail("--n-vocab {}: a synthetic vocabulary needs at least 260 tokens", d.n_vocab);
  Vocab v;
  v.tokens = byte_symbols();
  v.types.assign(256, 1);
  for (int64_t i = 256; i < d.n_vocab - 3; ++i) {
    v.tokens.push_back("[f" + std::to_string(i) + "]");
    v.types.push_back(1);
  }
  const int64_t n = d.n_vocab;
  if (d.arch == "llama") {
    for (const char* s : {"<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"}) v.tokens.push_back(s);
    v.pre = "llama-bpe";
    v.bos = static_cast<uint32_t>(n - 3);
    v.eos = static_cast<uint32_t>(n - 1);
    v.add_bos = true;
  } else {
    for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) v.tokens.push_back(s);
    v.pre = "qwen2";
    v.bos = static_cast<uint32_t>(n - 3);
    v.eos = static_cast<uint32_t>(n - 1);
  }
  v.types.insert(v.types.end(), {3, 3, 3});
  return v;
}

// The real Qwen2 vocabulary (vocab.json + merges.txt from DIR) plus Qwen's added tokens, padded with
// "[PADn]" to n_vocab as llama.cpp's converter does.
Vocab qwen_vocab(const Dims& d, const std::string& dir) {
  std::ifstream vf(dir + "/vocab.json");
  if (!vf) fail("{}/vocab.json: cannot open", dir);
  nlohmann::json vj;
  try {
    vf >> vj;
  } catch (const std::exception& e) {
    fail("{}/vocab.json: invalid JSON: {}", dir, e.what());
  }
  Vocab v;
  v.tokens.assign(vj.size(), std::string());
  for (auto it = vj.begin(); it != vj.end(); ++it) {
    int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(vj.size())) fail("{}/vocab.json: token id {} out of range", dir, id);
    v.tokens[id] = it.key();
  }
  v.types.assign(v.tokens.size(), 1);
  // Qwen2.5 / Qwen3 added tokens: ids 151643.. (the first 14 are special/control).
  static const char* added[] = {
      "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
      "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
      "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
      "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
      "<tool_response>", "</tool_response>", "<think>", "</think>"};
  const int n_added = d.arch == "qwen3" ? 26 : 22;
  for (int i = 0; i < n_added; ++i) {
    v.tokens.push_back(added[i]);
    v.types.push_back(i < 14 ? 3 : 4);
  }
  if (static_cast<int64_t>(v.tokens.size()) > d.n_vocab)
    fail("{}: vocabulary has {} tokens, more than --n-vocab {}", dir, v.tokens.size(), d.n_vocab);
  while (static_cast<int64_t>(v.tokens.size()) < d.n_vocab) {
    v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
    v.types.push_back(5);
  }
  std::ifstream mf(dir + "/merges.txt");
  if (!mf) fail("{}/merges.txt: cannot open", dir);
  std::string line;
  while (std::getline(mf, line)) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    v.merges.push_back(line);
  }
  v.pre = "qwen2";
  v.bos = 151643;
  v.eos = 151645;
  return v;
}

// --- the model ---------------------------------------------------------------------------------

struct Options {
  std::string arch, preset, type = "f32", out, qwen_vocab_dir, name;
  Dims d;
  bool tied = false, no_tied = false;
  uint64_t seed = 1;
  double scale = 1.0;
};

constexpr double kEmbdGain = 0.25;  // embedding rows' RMS relative to a layer's contribution

class Builder {
 public:
  Builder(const Options& o, const TypeSpec& ts) : o_(o), d_(o.d), ts_(ts) {}

  void run() {
    ignis::gguf::GgufWriter w;
    write_metadata(w);
    add_tensors(w);
    w.write(o_.out);
  }

 private:
  void write_metadata(ignis::gguf::GgufWriter& w) {
    const std::string& a = d_.arch;
    w.set_string("general.architecture", a);
    w.set_string("general.name", o_.name.empty() ? (o_.preset.empty() ? a + "-random" : o_.preset + "-random") : o_.name);
    w.set_u32("general.file_type", ts_.file_type);
    if (ts_.base != DType::F32 && ts_.base != DType::F16 && ts_.base != DType::BF16)
      w.set_u32("general.quantization_version", 2);
    w.set_u32(a + ".vocab_size", static_cast<uint32_t>(d_.n_vocab));
    w.set_u32(a + ".context_length", static_cast<uint32_t>(d_.n_ctx));
    w.set_u32(a + ".embedding_length", static_cast<uint32_t>(d_.n_embd));
    w.set_u32(a + ".block_count", static_cast<uint32_t>(d_.n_layer));
    w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(d_.n_ff));
    w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(d_.n_head));
    w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(d_.n_head_kv));
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(d_.rms_eps));
    w.set_f32(a + ".rope.freq_base", static_cast<float>(d_.rope_theta));
    w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(d_.head_dim));
    if (a == "qwen3" || d_.head_dim * d_.n_head != d_.n_embd) {
      w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(d_.head_dim));
      w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(d_.head_dim));
    }
    Vocab v = o_.qwen_vocab_dir.empty() ? synthetic_vocab(d_) : qwen_vocab(d_, o_.qwen_vocab_dir);
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", v.pre);
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    w.set_i32_array("tokenizer.ggml.token_type", v.types);
    w.set_string_array("tokenizer.ggml.merges", v.merges);
    w.set_u32("tokenizer.ggml.bos_token_id", v.bos);
    w.set_u32("tokenizer.ggml.eos_token_id", v.eos);
    w.set_u32("tokenizer.ggml.padding_token_id", v.bos);
    w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  }

  // A 1-D f32 tensor near `mean`.
  void vec(ignis::gguf::GgufWriter& w, const std::string& name, int64_t n, double mean, double sd) {
    std::vector<float> x(static_cast<size_t>(n));
    fill_normal(x, o_.seed, name, mean, sd);
    w.add_tensor(name, DType::F32, {n}, x.data(), x.size() * sizeof(float));
  }

  // A matrix of `rows` rows of `row_len` elements (ggml shape [row_len, rows]), N(0, sd^2).
  void mat(ignis::gguf::GgufWriter& w, const std::string& name, const std::string& role, int64_t il,
           int64_t row_len, int64_t rows, double sd) {
    std::vector<float> x(static_cast<size_t>(row_len * rows));
    fill_normal(x, o_.seed, name, 0.0, sd);
    DType want = ts_.k_mix ? mix_type(role, il, d_.n_layer) : ts_.base;
    DType t = fit_type(want, row_len);
    const auto* tr = ignis::dtype_traits(t);
    if (!tr || !tr->from_float)
      fail("--type {}: ignis has no quantizer for {} (tensor {}); make this type with llama-quantize", ts_.name,
           ignis::dtype_name(t), name);
    std::vector<uint8_t> q(ignis::row_bytes(t, row_len) * static_cast<size_t>(rows));
    tr->from_float(x.data(), q.data(), row_len * rows);
    w.add_tensor(name, t, {row_len, rows}, q.data(), q.size());
  }

  void add_tensors(ignis::gguf::GgufWriter& w) {
    const int64_t E = d_.n_embd, Dq = d_.n_head * d_.head_dim, Dkv = d_.n_head_kv * d_.head_dim;
    const double head_sd = kEmbdGain / std::sqrt(static_cast<double>(E));
    const bool tied = d_.tied;
    mat(w, "token_embd.weight", tied ? "output" : "token_embd", 0, E, d_.n_vocab, head_sd);
    vec(w, "output_norm.weight", E, o_.scale / kEmbdGain, 0.1 * o_.scale / kEmbdGain);
    if (!tied) mat(w, "output.weight", "output", 0, E, d_.n_vocab, head_sd);
    const double sd_e = 1.0 / std::sqrt(static_cast<double>(E));
    const double sd_q = 1.0 / std::sqrt(static_cast<double>(Dq));
    const double sd_f = 1.0 / std::sqrt(static_cast<double>(d_.n_ff));
    for (int64_t il = 0; il < d_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      vec(w, p + "attn_norm.weight", E, 1.0, 0.1);
      mat(w, p + "attn_q.weight", "attn_q", il, E, Dq, sd_e);
      mat(w, p + "attn_k.weight", "attn_k", il, E, Dkv, sd_e);
      mat(w, p + "attn_v.weight", "attn_v", il, E, Dkv, sd_e);
      if (d_.arch == "qwen2") {
        vec(w, p + "attn_q.bias", Dq, 0.0, 0.2);
        vec(w, p + "attn_k.bias", Dkv, 0.0, 0.2);
        vec(w, p + "attn_v.bias", Dkv, 0.0, 0.2);
      }
      if (d_.arch == "qwen3") {
        vec(w, p + "attn_q_norm.weight", d_.head_dim, 1.0, 0.1);
        vec(w, p + "attn_k_norm.weight", d_.head_dim, 1.0, 0.1);
      }
      mat(w, p + "attn_output.weight", "attn_output", il, Dq, E, sd_q);
      vec(w, p + "ffn_norm.weight", E, 1.0, 0.1);
      mat(w, p + "ffn_gate.weight", "ffn_gate", il, E, d_.n_ff, sd_e);
      mat(w, p + "ffn_up.weight", "ffn_up", il, E, d_.n_ff, sd_e);
      mat(w, p + "ffn_down.weight", "ffn_down", il, d_.n_ff, E, sd_f);
    }
  }

  const Options& o_;
  const Dims& d_;
  TypeSpec ts_;
};

void validate(const Dims& d) {
  auto pos = [](const char* flag, int64_t v, int64_t hi) {
    if (v <= 0 || v > hi) fail("{} {}: must be in [1, {}]", flag, v, hi);
  };
  if (d.arch != "llama" && d.arch != "qwen2" && d.arch != "qwen3")
    fail("--arch {}: unknown architecture (llama, qwen2, qwen3)", d.arch);
  pos("--n-embd", d.n_embd, 1 << 16);
  pos("--n-layer", d.n_layer, 512);
  pos("--n-head", d.n_head, 1024);
  pos("--n-head-kv", d.n_head_kv, 1024);
  pos("--head-dim", d.head_dim, 1024);
  pos("--n-ff", d.n_ff, 1 << 18);
  pos("--n-vocab", d.n_vocab, 1 << 20);
  pos("--ctx", d.n_ctx, 1 << 24);
  if (d.n_head % d.n_head_kv != 0) fail("--n-head {} is not a multiple of --n-head-kv {}", d.n_head, d.n_head_kv);
  if (d.head_dim % 2 != 0) fail("--head-dim {}: must be even (rotary pairs)", d.head_dim);
  if (!(d.rope_theta > 0)) fail("--rope-theta {}: must be positive", d.rope_theta);
  if (!(d.rms_eps > 0)) fail("--rms-eps {}: must be positive", d.rms_eps);
  // Refuse outputs beyond 64 GiB of f32 working memory rather than attempting a huge allocation.
  double params = static_cast<double>(d.n_vocab) * d.n_embd * (d.tied ? 1 : 2) +
                  static_cast<double>(d.n_layer) * (2.0 * d.n_embd * d.n_head * d.head_dim +
                                                    2.0 * d.n_embd * d.n_head_kv * d.head_dim + 3.0 * d.n_embd * d.n_ff);
  if (params > 16e9) fail("model of {:.3g} parameters is too large for ignis-mkmodel", params);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ignis-mkmodel: write a GGUF model with random weights in a real architecture's shape"};
  Options o;
  std::string preset_list;
  for (const auto& p : presets()) preset_list += std::string(preset_list.empty() ? "" : ", ") + p.name;
  app.add_option("--preset", o.preset, "shape preset: " + preset_list);
  app.add_option("--arch", o.arch, "llama | qwen2 | qwen3 (custom shape, or override a preset's)");
  app.add_option("--n-embd", o.d.n_embd, "hidden size");
  app.add_option("--n-layer", o.d.n_layer, "number of blocks");
  app.add_option("--n-head", o.d.n_head, "query heads");
  app.add_option("--n-head-kv", o.d.n_head_kv, "key/value heads");
  app.add_option("--head-dim", o.d.head_dim, "per-head size (default n_embd / n_head)");
  app.add_option("--n-ff", o.d.n_ff, "feed-forward size");
  app.add_option("--n-vocab", o.d.n_vocab, "vocabulary size");
  app.add_option("--ctx", o.d.n_ctx, "context_length written to the file");
  app.add_option("--rope-theta", o.d.rope_theta, "rope.freq_base");
  app.add_option("--rms-eps", o.d.rms_eps, "attention.layer_norm_rms_epsilon");
  app.add_flag("--tied", o.tied, "output head shares token_embd");
  app.add_flag("--no-tied", o.no_tied, "separate output.weight");
  app.add_option("--type", o.type, "f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_option("--scale", o.scale, "std of the output logits (larger: peakier distributions)")
      ->capture_default_str();
  app.add_option("--qwen-vocab-dir", o.qwen_vocab_dir,
                 "folder with Qwen2 vocab.json + merges.txt: the real vocabulary (qwen2/qwen3, n_vocab >= 151665 "
                 "or 151669); default: a synthetic byte-level vocabulary");
  app.add_option("--name", o.name, "general.name");
  app.add_option("-o,--output", o.out, "output .gguf")->required();
  CLI11_PARSE(app, argc, argv);

  try {
    Dims given = o.d;
    Dims d;
    if (!o.preset.empty()) {
      bool found = false;
      for (const auto& p : presets())
        if (o.preset == p.name) { d = p.dims; found = true; }
      if (!found) fail("--preset {}: unknown preset ({})", o.preset, preset_list);
    } else {
      if (o.arch.empty()) fail("give --preset NAME or --arch with custom dimensions");
      d.n_ctx = 2048;
      d.rope_theta = 10000.0;
      d.rms_eps = 1e-5;
      d.tied = true;
    }
    if (!o.arch.empty()) d.arch = o.arch;
    auto over = [](int64_t& dst, int64_t v) { if (v != 0) dst = v; };
    over(d.n_embd, given.n_embd);
    over(d.n_layer, given.n_layer);
    over(d.n_head, given.n_head);
    over(d.n_head_kv, given.n_head_kv);
    over(d.n_ff, given.n_ff);
    over(d.n_vocab, given.n_vocab);
    over(d.n_ctx, given.n_ctx);
    if (given.head_dim != 0) d.head_dim = given.head_dim;
    else if (d.head_dim == 0 && d.n_head > 0) d.head_dim = d.n_embd / d.n_head;
    if (d.n_head_kv == 0) d.n_head_kv = d.n_head;
    if (app.count("--rope-theta")) d.rope_theta = given.rope_theta;
    if (app.count("--rms-eps")) d.rms_eps = given.rms_eps;
    if (o.tied && o.no_tied) fail("--tied and --no-tied are exclusive");
    if (o.tied) d.tied = true;
    if (o.no_tied) d.tied = false;
    if (!(o.scale > 0 && o.scale < 1e4)) fail("--scale {}: must be in (0, 1e4)", o.scale);
    validate(d);
    if (!o.qwen_vocab_dir.empty() && d.arch == "llama")
      fail("--qwen-vocab-dir: the Qwen2 vocabulary is for qwen2/qwen3 models, not {}", d.arch);
    o.d = d;
    TypeSpec ts = parse_type(o.type);
    Builder(o, ts).run();
    std::fprintf(stderr, "ignis-mkmodel: wrote %s (%s, %s)\n", o.out.c_str(), d.arch.c_str(), ts.name.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ignis-mkmodel: %s\n", e.what());
    return 1;
  }
  return 0;
}
