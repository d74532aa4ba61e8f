#include "engine/batch_forward.h"

namespace ignis::engine {

void forward_batch(const model::Model& m, std::span<BatchSeq> seqs, ThreadPool& pool) {
  for (BatchSeq& s : seqs) m.forward(*s.cache, s.tokens, s.logits, s.all_logits, pool);
}

}  // namespace ignis::engine
