// One engine step's model evaluation: several sequences, each with its own KV view and tokens.
//
// NOTE: this is the seam between the engine and the model's batched forward. The sequences' tokens are
// evaluated so that each one's results do not depend on what else is in the batch (batch invariance).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"

namespace ignis::engine {

struct BatchSeq {
  model::KvCache* cache = nullptr;
  std::span<const int32_t> tokens;
  float* logits = nullptr;  // [n_rows, n_vocab] or nullptr
  bool all_logits = false;  // rows for every token, else the last token's only
};

void forward_batch(const model::Model& m, std::span<BatchSeq> seqs, ThreadPool& pool);

}  // namespace ignis::engine
