// attend_tile built with AVX2+FMA (the portable loops, vectorized by the compiler).
#include "model/attention_generic.h"

namespace ignis::model {

void attend_tile_avx2(const AttnTile& tile, float* scratch) { attend_tile_generic(tile, scratch); }

}  // namespace ignis::model
