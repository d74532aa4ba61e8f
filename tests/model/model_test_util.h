// Helpers shared by the model tests: paths, greedy decoding, SentencePiece piece -> text for
// stories260K, and copying a GGUF with edits (to make broken files).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../temp_dir.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "format/gguf.h"
#include "model/model.h"

namespace ignis::model::test {

inline std::string shared_path(const std::string& rel) { return std::string(IGNIS_SHARED_DIR) + "/" + rel; }
inline std::string stories_path() { return shared_path("models/stories260K.gguf"); }

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline int32_t argmax(const float* v, int64_t n) {
  return static_cast<int32_t>(std::max_element(v, v + n) - v);  // first maximum, like llama2.c
}

// Greedy decoding: feeds `prompt` as one batch, then each argmax token, until n_total tokens have been
// fed or `stop` is produced. Returns the generated tokens (not the prompt).
inline std::vector<int32_t> greedy(const Model& m, std::vector<int32_t> prompt, int64_t n_total, ThreadPool& pool,
                                   int32_t stop = -1) {
  auto cache = m.new_cache(n_total);
  const int64_t n_vocab = m.hparams().n_vocab;
  std::vector<float> logits(n_vocab);
  std::vector<int32_t> out;
  std::vector<int32_t> feed = std::move(prompt);
  int64_t fed = 0;
  while (fed + static_cast<int64_t>(feed.size()) <= n_total) {
    m.forward(*cache, feed, logits.data(), false, pool);
    fed += feed.size();
    const int32_t next = argmax(logits.data(), n_vocab);
    if (next == stop) break;
    out.push_back(next);
    feed = {next};
  }
  return out;
}

// SentencePiece pieces -> text the way llama2.c's run.c prints them: "▁" is a space, "<0xNN>" a byte,
// and the leading space of the piece after BOS (token 1) is dropped.
inline std::string decode_spm(const std::vector<std::string>& vocab, const std::vector<int32_t>& tokens,
                              int32_t prev = 1) {
  std::string text;
  for (int32_t t : tokens) {
    std::string piece = vocab.at(t);
    if (piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece[5] == '>') {
      piece = std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
    } else {
      std::string s;
      for (size_t i = 0; i < piece.size();) {
        if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {
          s += ' ';
          i += 3;
        } else {
          s += piece[i++];
        }
      }
      piece = s;
    }
    if (prev == 1 && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    text += piece;
    prev = t;
  }
  return text;
}

// Copies the metadata and tensors of `src` into a writer, leaving out the keys in drop_keys and the
// tensors for which keep_tensor returns false (the test then adds its own versions).
inline gguf::GgufWriter copy_gguf(const gguf::GgufFile& src, const std::set<std::string>& drop_keys,
                                  const std::function<bool(const gguf::TensorInfo&)>& keep_tensor) {
  using gguf::ValueType;
  gguf::GgufWriter w;
  for (const auto& [key, v] : src.metadata()) {
    if (drop_keys.count(key) || key == "general.alignment") continue;
    switch (v.type) {
      case ValueType::UINT8: w.set_u8(key, static_cast<uint8_t>(v.u)); break;
      case ValueType::INT8: w.set_i8(key, static_cast<int8_t>(v.i)); break;
      case ValueType::UINT16: w.set_u16(key, static_cast<uint16_t>(v.u)); break;
      case ValueType::INT16: w.set_i16(key, static_cast<int16_t>(v.i)); break;
      case ValueType::UINT32: w.set_u32(key, static_cast<uint32_t>(v.u)); break;
      case ValueType::INT32: w.set_i32(key, static_cast<int32_t>(v.i)); break;
      case ValueType::FLOAT32: w.set_f32(key, static_cast<float>(v.f)); break;
      case ValueType::BOOL: w.set_bool(key, v.u != 0); break;
      case ValueType::STRING: w.set_string(key, v.s); break;
      case ValueType::ARRAY: w.set_array(key, v); break;
      case ValueType::UINT64: w.set_u64(key, v.u); break;
      case ValueType::INT64: w.set_i64(key, v.i); break;
      case ValueType::FLOAT64: w.set_f64(key, v.f); break;
    }
  }
  for (const gguf::TensorInfo& t : src.tensors()) {
    if (keep_tensor(t)) w.add_tensor(t.name, t.type, t.shape, t.data, t.n_bytes);
  }
  return w;
}

// A path in this process's own folder under the test temp folder (../temp_dir.h).
inline std::string temp_path(const std::string& name) {
  static const ignis::test::ProcessTempDir dir("ignis_model_");
  return (dir.path / name).string();
}

}  // namespace ignis::model::test

namespace ignis::model::test {

// A small random-weight model of one of the supported architectures, for consistency tests of the
// code paths stories260K does not use (NEOX rope, biases, q/k norms, tied output, rope factors, f16).
struct RandomModelSpec {
  std::string arch = "llama";
  int64_t n_embd = 48, n_layer = 2, n_head = 6, n_head_kv = 2, head_dim = 8, n_ff = 96, n_vocab = 100;
  bool tied = false;
  bool biases = false;      // attn_q/k/v biases (required for qwen2)
  bool qk_norm = false;     // attn_q_norm / attn_k_norm (qwen3)
  bool rope_freqs = false;  // llama 3.1 rope_freqs.weight
  DType matrix_type = DType::F32;
  uint32_t seed = 1;
};

inline std::string write_random_model(const RandomModelSpec& s, const std::string& name) {
  std::mt19937 rng(s.seed);
  gguf::GgufWriter w;
  const std::string a = s.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.name", "random-" + a);
  w.set_u32(a + ".context_length", 256);
  w.set_u32(a + ".embedding_length", static_cast<uint32_t>(s.n_embd));
  w.set_u32(a + ".block_count", static_cast<uint32_t>(s.n_layer));
  w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(s.n_head));
  w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  if (s.head_dim * s.n_head != s.n_embd) {
    w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
    w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  }
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_f32(a + ".rope.freq_base", 10000.0f);
  auto add = [&](const std::string& tname, std::vector<int64_t> shape, float stddev, float mean, DType type) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::normal_distribution<float> dist(mean, stddev);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    std::vector<uint8_t> bytes(row_bytes(type, shape[0]) * static_cast<size_t>(n / shape[0]));
    dtype_traits(type)->from_float(v.data(), bytes.data(), n);
    w.add_tensor(tname, type, shape, bytes.data(), bytes.size());
  };
  auto matrix = [&](const std::string& tname, int64_t n_in, int64_t n_out) {
    add(tname, {n_in, n_out}, 1.0f / std::sqrt(static_cast<float>(n_in)), 0.0f, s.matrix_type);
  };
  auto vec = [&](const std::string& tname, int64_t n, float stddev, float mean) {
    add(tname, {n}, stddev, mean, DType::F32);
  };
  const int64_t n_q = s.n_head * s.head_dim, n_kv = s.n_head_kv * s.head_dim;
  add("token_embd.weight", {s.n_embd, s.n_vocab}, 1.0f, 0.0f, s.matrix_type);
  vec("output_norm.weight", s.n_embd, 0.1f, 1.0f);
  if (!s.tied) matrix("output.weight", s.n_embd, s.n_vocab);
  if (s.rope_freqs) {
    std::vector<float> f(static_cast<size_t>(s.head_dim / 2));
    for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0f + 3.0f * static_cast<float>(i) / f.size();
    w.add_tensor("rope_freqs.weight", DType::F32, {s.head_dim / 2}, f.data(), f.size() * 4);
  }
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    vec(p + "attn_norm.weight", s.n_embd, 0.1f, 1.0f);
    matrix(p + "attn_q.weight", s.n_embd, n_q);
    matrix(p + "attn_k.weight", s.n_embd, n_kv);
    matrix(p + "attn_v.weight", s.n_embd, n_kv);
    matrix(p + "attn_output.weight", n_q, s.n_embd);
    if (s.biases) {
      vec(p + "attn_q.bias", n_q, 0.5f, 0.0f);
      vec(p + "attn_k.bias", n_kv, 0.5f, 0.0f);
      vec(p + "attn_v.bias", n_kv, 0.5f, 0.0f);
    }
    if (s.qk_norm) {
      vec(p + "attn_q_norm.weight", s.head_dim, 0.1f, 1.0f);
      vec(p + "attn_k_norm.weight", s.head_dim, 0.1f, 1.0f);
    }
    vec(p + "ffn_norm.weight", s.n_embd, 0.1f, 1.0f);
    matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
    matrix(p + "ffn_up.weight", s.n_embd, s.n_ff);
    matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
  }
  const std::string path = temp_path(name + ".gguf");
  w.write(path);
  return path;
}

}  // namespace ignis::model::test
