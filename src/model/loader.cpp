#include "model/loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

#include "backend/cpu/packed.h"
#include "core/error.h"

namespace ignis::model {

std::string blk(int64_t il, std::string_view suffix) { return fmt::format("blk.{}.{}", il, suffix); }

ModelLoader::ModelLoader(const gguf::GgufFile& file, std::string arch, cpu::PackedStore* store)
    : file_(file), arch_(std::move(arch)), store_(store) {
  // Weights copied in the background give their file pages back once the copy is in use (the model
  // owns the file and, destroyed first, its store).
  if (store_) store_->on_repacked([f = &file_](const void* p, size_t n) { f->release_pages(p, n); });
}

bool ModelLoader::has(std::string_view suffix) const { return file_.has(key(suffix)); }

namespace {

bool is_unsigned(gguf::ValueType t) {
  using gguf::ValueType;
  return t == ValueType::UINT8 || t == ValueType::UINT16 || t == ValueType::UINT32 || t == ValueType::UINT64;
}

int64_t int_value(const gguf::GgufFile& f, const std::string& k, const gguf::Value& v) {
  if (!gguf::is_integer_type(v.type)) {
    fail("{}: metadata key {} has type {}, expected an integer", f.path(), k, gguf::value_type_name(v.type));
  }
  if (is_unsigned(v.type)) {
    if (v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("{}: metadata key {} = {} is out of range", f.path(), k, v.u);
    }
    return static_cast<int64_t>(v.u);
  }
  return v.i;
}

double float_value(const gguf::GgufFile& f, const std::string& k, const gguf::Value& v) {
  if (v.type == gguf::ValueType::FLOAT32 || v.type == gguf::ValueType::FLOAT64) return v.f;
  if (gguf::is_integer_type(v.type)) return static_cast<double>(int_value(f, k, v));
  fail("{}: metadata key {} has type {}, expected a number", f.path(), k, gguf::value_type_name(v.type));
}

}  // namespace

int64_t ModelLoader::req_int(std::string_view suffix, int64_t lo, int64_t hi) const {
  const std::string k = key(suffix);
  const gguf::Value* v = file_.find(k);
  if (!v) fail("{}: metadata key {} is missing", path(), k);
  const int64_t x = int_value(file_, k, *v);
  if (x < lo || x > hi) fail("{}: metadata key {} = {} is out of range [{}, {}]", path(), k, x, lo, hi);
  return x;
}

int64_t ModelLoader::opt_int(std::string_view suffix, int64_t def, int64_t lo, int64_t hi) const {
  return has(suffix) ? req_int(suffix, lo, hi) : def;
}

float ModelLoader::req_float(std::string_view suffix, double lo, double hi) const {
  const std::string k = key(suffix);
  const gguf::Value* v = file_.find(k);
  if (!v) fail("{}: metadata key {} is missing", path(), k);
  const double x = float_value(file_, k, *v);
  if (!std::isfinite(x) || x < lo || x > hi) {
    fail("{}: metadata key {} = {} is out of range [{}, {}]", path(), k, x, lo, hi);
  }
  return static_cast<float>(x);
}

float ModelLoader::opt_float(std::string_view suffix, float def, double lo, double hi) const {
  return has(suffix) ? req_float(suffix, lo, hi) : def;
}

std::string ModelLoader::opt_string(std::string_view suffix, const std::string& def) const {
  const std::string k = key(suffix);
  const gguf::Value* v = file_.find(k);
  if (!v) return def;
  if (v->type != gguf::ValueType::STRING) {
    fail("{}: metadata key {} has type {}, expected a string", path(), k, gguf::value_type_name(v->type));
  }
  return v->s;
}

void ModelLoader::read_common_hparams(HParams& hp) const {
  hp.arch = arch_;
  if (const gguf::Value* v = file_.find("general.name"); v && v->type == gguf::ValueType::STRING) hp.name = v->s;

  if (opt_int("expert_count", 0, 0, 1 << 16) > 0) {
    fail("{}: metadata key {} > 0: mixture-of-experts {} models are not supported", path(), key("expert_count"),
         arch_);
  }
  hp.n_ctx_train = req_int("context_length", 1, int64_t{1} << 32);
  hp.n_embd = req_int("embedding_length", 1, 1 << 20);
  hp.n_layer = req_int("block_count", 1, 1 << 12);
  hp.n_ff = req_int("feed_forward_length", 1, 1 << 22);
  hp.n_head = req_int("attention.head_count", 1, 1 << 14);
  hp.n_head_kv = opt_int("attention.head_count_kv", hp.n_head, 1, hp.n_head);
  hp.rms_eps = req_float("attention.layer_norm_rms_epsilon", 0.0, 1.0);
  hp.rope_theta = opt_float("rope.freq_base", 10000.0f, 1e-3, 1e12);

  if (!has("attention.key_length") && hp.n_embd % hp.n_head != 0) {
    fail("{}: {} = {} is not a multiple of {} = {}", path(), key("embedding_length"), hp.n_embd,
         key("attention.head_count"), hp.n_head);
  }
  hp.head_dim = opt_int("attention.key_length", hp.n_embd / hp.n_head, 1, 1 << 14);
  const int64_t v_len = opt_int("attention.value_length", hp.head_dim, 1, 1 << 14);
  if (v_len != hp.head_dim) {
    fail("{}: {} = {} differs from {} = {}; only equal K and V head sizes are supported", path(),
         key("attention.value_length"), v_len, key("attention.key_length"), hp.head_dim);
  }
  hp.n_rot = opt_int("rope.dimension_count", hp.head_dim, 2, hp.head_dim);

  // NOTE: llama.cpp's default scaling type is "linear" with factor 1 (no scaling); the factor may be
  // under rope.scaling.factor or the older rope.scale_linear.
  const std::string scaling = opt_string("rope.scaling.type", "linear");
  if (scaling != "none" && scaling != "linear") {
    fail("{}: metadata key {} = '{}' is not supported (supported: none, linear)", path(),
         key("rope.scaling.type"), scaling);
  }
  float factor = has("rope.scaling.factor") ? req_float("rope.scaling.factor", 0.0, 1e6)
                                            : opt_float("rope.scale_linear", 0.0f, 0.0, 1e6);
  hp.rope_freq_scale = (scaling == "none" || factor == 0.0f) ? 1.0f : 1.0f / factor;

  // The vocabulary size is the number of rows of the embedding matrix.
  const gguf::TensorInfo* emb = find("token_embd.weight", Need::kRequired);
  if (emb->shape.size() != 2) {
    fail("{}: tensor token_embd.weight has {} dimensions, expected 2", path(), emb->shape.size());
  }
  hp.n_vocab = emb->shape[1];
  // (array_size: the vocabulary is not read for this, see GgufFile.)
  if (const uint64_t n_tok = file_.array_size("tokenizer.ggml.tokens"); n_tok > static_cast<uint64_t>(hp.n_vocab)) {
    fail("{}: tokenizer.ggml.tokens has {} tokens but token_embd.weight has only {} rows", path(), n_tok, hp.n_vocab);
  }
}

void ModelLoader::check_hparams(const HParams& hp) const {
  if (hp.n_head % hp.n_head_kv != 0) {
    fail("{}: {} = {} is not a multiple of {} = {}", path(), key("attention.head_count"), hp.n_head,
         key("attention.head_count_kv"), hp.n_head_kv);
  }
  if (hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim) {
    fail("{}: {} = {} must be even and at most the head size {}", path(), key("rope.dimension_count"), hp.n_rot,
         hp.head_dim);
  }
}

const gguf::TensorInfo* ModelLoader::find(const std::string& name, Need need) const {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (!t && need == Need::kRequired) fail("{}: tensor {} is missing", path(), name);
  return t;
}

void ModelLoader::count(const gguf::TensorInfo& t) {
  for (const gguf::TensorInfo* b : bound_) {
    if (b == &t) return;
  }
  bound_.push_back(&t);
  bytes_ += t.n_bytes;
  params_ += static_cast<uint64_t>(t.n_elements());
}

namespace {

void check_shape(const std::string& path, const gguf::TensorInfo& t, const std::vector<int64_t>& want) {
  if (t.shape != want) {
    fail("{}: tensor {} has shape [{}], expected [{}]", path, t.name, fmt::join(t.shape, ", "),
         fmt::join(want, ", "));
  }
}

}  // namespace

cpu::WeightView ModelLoader::matrix(const std::string& name, int64_t n_in, int64_t n_out, Need need, Pack pack) {
  const gguf::TensorInfo* t = find(name, need);
  if (!t) return {};
  check_shape(path(), *t, {n_in, n_out});
  const DTypeTraits* tr = dtype_traits(t->type);
  if (!tr || !tr->to_float) {
    fail("{}: tensor {} has type {}, which is not a weight type", path(), name, dtype_name(t->type));
  }
  if (n_in % tr->block_size != 0) {
    fail("{}: tensor {} has rows of {} elements, not a multiple of the {} block size {}", path(), name, n_in,
         tr->name, tr->block_size);
  }
  count(*t);
  const cpu::WeightView v{t->type, t->data, n_in, n_out};
  return pack == Pack::kYes ? this->pack(v) : v;
}

cpu::WeightView ModelLoader::fuse(std::initializer_list<cpu::WeightView*> parts) {
  if (store_) {
    std::vector<cpu::WeightView> views;
    for (const cpu::WeightView* p : parts) views.push_back(*p);
    const cpu::WeightView f = store_->add_fused(views);
    if (f.data) {
      if (!f.repacked)  // (a background copy gives the pages back itself once it is in use)
        for (const cpu::WeightView* p : parts)
          file_.release_pages(p->data, row_bytes(p->type, p->n_in) * static_cast<size_t>(p->n_out));
      return f;
    }
  }
  for (cpu::WeightView* p : parts) *p = pack(*p);
  return {};
}

cpu::WeightView ModelLoader::pack(const cpu::WeightView& w) {
  if (!store_) return w;
  const cpu::WeightView p = store_->add(w);
  if (p.packed && p.data != w.data) file_.release_pages(w.data, row_bytes(w.type, w.n_in) * static_cast<size_t>(w.n_out));
  return p;
}

cpu::WeightView ModelLoader::tied_output(cpu::WeightView& tok_embd) {
  const cpu::WeightView p = pack(tok_embd);
  // (Copies made in the background are readable, F16's off AMX.)
  const bool copy = p.repacked ? !(p.type == DType::F16 && cpu::f16_on_amx()) : p.data != tok_embd.data;
  if (p.packed && copy && cpu::packed_rows_readable(p.type)) tok_embd = p;
  return p;
}

const float* ModelLoader::vector(const std::string& name, int64_t n, Need need) {
  const gguf::TensorInfo* t = find(name, need);
  if (!t) return nullptr;
  check_shape(path(), *t, {n});
  if (t->type != DType::F32) fail("{}: tensor {} has type {}, expected f32", path(), name, dtype_name(t->type));
  count(*t);
  const auto* v = static_cast<const float*>(t->data);
  if (!store_) return v;
  // Out of the mapping: the weights' pages around it stay given back (PackedStore::copy_floats).
  const float* c = store_->copy_floats(v, n);
  file_.release_pages(v, static_cast<size_t>(n) * sizeof(float));
  return c;
}

}  // namespace ignis::model
