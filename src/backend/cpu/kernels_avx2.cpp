// AVX2 + FMA + F16C kernels (the bodies live in vec_dot_x86.h; int8 dots via maddubs/madd).
#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_dot_x86.h"

namespace ignis::cpu {
namespace {

constexpr VecDotEntry kAvx2[] = {
    IGNIS_AVX2_FLOAT_KERNELS,
    IGNIS_X86_QUANT_KERNELS,
};

constexpr ActQuantEntry kAvx2Act[] = {IGNIS_X86_ACT_QUANTIZERS};

}  // namespace

KernelTable avx2_kernels() { return {kAvx2, static_cast<int>(sizeof(kAvx2) / sizeof(kAvx2[0])), kAvx2Act, 3}; }

}  // namespace ignis::cpu
