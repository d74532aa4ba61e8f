// Run-time ISA selection for the CPU kernels.
#include <cstdlib>
#include <cstring>

#include "backend/cpu/kernels.h"

namespace ignis::cpu {

bool isa_supported(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("bmi2");
    case Isa::kAvx512:
      return isa_supported(Isa::kAvx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16") &&
             __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("gfni");
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

Isa isa_cap() {
  static const Isa cap = [] {
    const char* env = std::getenv("IGNIS_ISA");
    if (env && std::strcmp(env, "scalar") == 0) return Isa::kScalar;
    if (env && std::strcmp(env, "avx2") == 0) return Isa::kAvx2;
    return Isa::kAvx512;
  }();
  return cap;
}

Isa best_isa() {
  static const Isa best = [] {
    const Isa cap = isa_cap();
    for (int i = static_cast<int>(cap); i > 0; --i)
      if (isa_supported(static_cast<Isa>(i))) return static_cast<Isa>(i);
    return Isa::kScalar;
  }();
  return best;
}

const char* isa_label(Isa isa) {
  static constexpr const char* kNames[] = {"scalar", "avx2", "avx512"};
  return kNames[static_cast<int>(isa)];
}

namespace {

// Only call for an ISA the CPU supports: the table getters live in ISA-flagged objects.
KernelTable table_for(Isa isa) {
  switch (isa) {
    case Isa::kScalar: break;
    case Isa::kAvx2: return avx2_kernels();
    case Isa::kAvx512: return avx512_kernels();
  }
  return scalar_kernels();
}

}  // namespace

FromFloatFn find_act_quantizer(DType act, Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  const KernelTable table = table_for(isa);
  for (int i = 0; i < table.n_act_quants; ++i)
    if (table.act_quants[i].type == act) return table.act_quants[i].from_float;
  return nullptr;
}

FromFloatFn best_act_quantizer(DType act) {
  for (int i = static_cast<int>(best_isa()); i >= 0; --i)
    if (FromFloatFn f = find_act_quantizer(act, static_cast<Isa>(i))) return f;
  const DTypeTraits* tr = dtype_traits(act);
  return tr ? tr->from_float : nullptr;
}

const VecDotEntry* find_kernels(DType t, Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  const KernelTable table = table_for(isa);
  for (int i = 0; i < table.n_entries; ++i)
    if (table.entries[i].type == t) return &table.entries[i];
  return nullptr;
}

VecDotFn find_vec_dot(DType t, Isa isa) {
  const VecDotEntry* e = find_kernels(t, isa);
  return e ? e->vec_dot : nullptr;
}

const VecDotEntry* best_kernels(DType t) {
  for (int i = static_cast<int>(best_isa()); i >= 0; --i)
    if (const VecDotEntry* e = find_kernels(t, static_cast<Isa>(i))) return e;
  return nullptr;
}

VecDotFn best_vec_dot(DType t) {
  const VecDotEntry* e = best_kernels(t);
  return e ? e->vec_dot : nullptr;
}

}  // namespace ignis::cpu
