// One engine step's model evaluation: several sequences, each with its own KV view and tokens.
//
// NOTE: this is the seam between the engine and the model: Model::forward_batch reads each weight once
// for all sequences of the step and keeps each sequence's results independent of the others (batch
// invariance), so the engine may batch freely.
#pragma once

#include <span>

#include "core/thread_pool.h"
#include "model/model.h"

namespace ignis::engine {

using BatchSeq = model::SeqBatch;

inline void forward_batch(const model::Model& m, std::span<BatchSeq> seqs, ThreadPool& pool) {
  m.forward_batch(seqs, pool);
}

}  // namespace ignis::engine
