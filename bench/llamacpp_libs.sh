# Sourced by the side-by-side scripts: sets LLAMA_ENV (an env(1) prefix for llama.cpp's tools) so they
# run on this CPU.
#
# NOTE: on a Xeon with AMX (Sapphire Rapids class; seen 2026-12-01) the -march=native GCC 12 build of
# llama.cpp's CPU backend dies with SIGILL at its first AMX tile load (tinygemm_kernel_amx, every
# quantized model), while node-llama-cpp@3.21.1's prebuilt "sapphirerapids" CPU backend (the library
# its users get on that CPU, same llama.cpp commit) runs and uses AMX. So when a short probe of the
# native build fails, the tools are pointed at the prebuilt backend (LD_LIBRARY_PATH with
# libggml-cpu.so.0 and libggml-base.so.0 linked to the prebuilt ones), and the scripts say so.
#   llamacpp_libs LLAMA_DIR MODEL.gguf ...    (LLAMA_DIR: the llama.cpp checkout with build/bin/llama-bench;
#   needs $SCRATCH set; probes every model: F16 files never reach the AMX path, quantized ones do)
probe_all() {  # LLAMA_DIR MODEL...: a 64-token prefill of every model with "${LLAMA_ENV[@]}"
  local m LL=$1
  shift
  for m in "$@"; do
    # (the group's redirection also silences the shell's own "Illegal instruction" report)
    { "${LLAMA_ENV[@]}" "$LL/build/bin/llama-bench" -m "$m" -p 64 -n 0 -r 1 -t 1 >/dev/null 2>&1; } 2>/dev/null || return 1
  done
}
#
# LLAMA_CPU_VARIANT=haswell (or another of the package's libggml-cpu-*.so names) skips the probe and
# takes that prebuilt backend: with IGNIS_ISA=avx2 IGNIS_AVXVNNI=0 for ignis, an AVX2-only machine's side
# by side on an AVX-512 host; alderlake with IGNIS_ISA=avx2, an AVX2 + AVX-VNNI machine's (Intel client
# parts since Alder Lake) on a host with AVX-VNNI.
llamacpp_libs() {
  LLAMA_ENV=(env)
  LLAMA_CPU_LIB="native build"
  if [ -z "${LLAMA_CPU_VARIANT:-}" ] && probe_all "$@"; then return 0; fi
  local pre="$SCRATCH/nlc/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64" variant
  [ -d "$pre" ] || { echo "llama-bench fails and there is no prebuilt CPU backend at $pre" >&2; return 1; }
  grep -qw amx_int8 /proc/cpuinfo && variant=sapphirerapids || variant=$(
    grep -qw avx512f /proc/cpuinfo && echo icelake || { grep -qw avx_vnni /proc/cpuinfo && echo alderlake || echo haswell; })
  variant=${LLAMA_CPU_VARIANT:-$variant}
  [ -f "$pre/libggml-cpu-$variant.so" ] || { echo "no prebuilt CPU backend libggml-cpu-$variant.so in $pre" >&2; return 1; }
  local dir="$SCRATCH/llama-prebuilt-$variant"
  mkdir -p "$dir"
  ln -sf "$pre/libggml-cpu-$variant.so" "$dir/libggml-cpu.so.0"
  ln -sf "$pre/libggml-base.so" "$dir/libggml-base.so.0"
  LLAMA_ENV=(env "LD_LIBRARY_PATH=$dir")
  LLAMA_CPU_LIB="node-llama-cpp prebuilt libggml-cpu-$variant.so"
  [ -n "${LLAMA_CPU_VARIANT:-}" ] || LLAMA_CPU_LIB+=" (the native build fails here)"
  probe_all "$@" || { echo "llama-bench fails with both the native and the prebuilt $variant backend" >&2; return 1; }
}

# The fresh-process scripts (load-vs-llamacpp.sh, job-vs-llamacpp.sh): llama_simple_setup MODEL... sets
# LL and SIMPLE (llama.cpp's llama-simple, built by vs-llamacpp.sh; exits if missing), LLAMA_ENV as
# llamacpp_libs does, and prints the backend; wall_ms COMMAND... runs it silently and prints its wall
# milliseconds (exits if it fails). Needs SCRATCH.
llama_simple_setup() {
  LL="$SCRATCH/llama.cpp"
  SIMPLE="$LL/build/bin/llama-simple"
  [ -x "$SIMPLE" ] || { echo "missing $SIMPLE: run bench/vs-llamacpp.sh once to build llama.cpp" >&2; exit 2; }
  llamacpp_libs "$LL" "$@"
  echo "llama.cpp CPU backend: $LLAMA_CPU_LIB"
}
wall_ms() {
  local t0=$EPOCHREALTIME
  "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  echo $(((${t1/./} - ${t0/./}) / 1000))
}
