// The packed kernels of packed_avx2.h compiled with AVX-VNNI as well (vpdpbusd on 256-bit vectors, for
// the 32-element types' int8 dots): AVX2 CPUs that have it (Alder Lake and later Intel client parts, Zen 5).
#include "backend/cpu/packed_avx2.h"

#if !defined(__AVXVNNI__)
#error "packed_avxvnni.cpp needs -mavxvnni"
#endif

namespace ignis::cpu {

PackedKernels packed_kernels_avxvnni(DType t) { return avx2_family_kernels(t); }

}  // namespace ignis::cpu
