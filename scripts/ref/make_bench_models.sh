#!/usr/bin/env bash
# Writes the benchmark model set (random weights, real shapes) into OUT_DIR (not committed):
#   qwen2.5-0.5b-{f16,q8_0,q4_0,q4_k_m}.gguf, qwen2.5-1.5b-{q4_0,q4_k_m}.gguf, llama-3.2-1b-q4_0.gguf,
#   qwen3-0.6b-q8_0.gguf; with EXTRA=1 also qwen2.5-0.5b-{q4_1,q5_1,q5_k_m,bf16}.gguf and
#   qwen2.5-1.5b-{q5_k_m,q3_k_m,q2_k}.gguf
# F16 files come from ignis-mkmodel; quantized ones from llama.cpp's llama-quantize when LLAMA_DIR has
# it (as real K-quant files are made), else from ignis-mkmodel --type (ignis' reference quantizers).
# Qwen presets use the real Qwen2 vocabulary when SHARED_DIR/hf-tokenizers/qwen2 exists.
#
# Usage: scripts/ref/make_bench_models.sh OUT_DIR [LLAMA_DIR] [IGNIS_BUILD_DIR]
#   LLAMA_DIR default /work/scratch/reference/llama.cpp, IGNIS_BUILD_DIR default <repo>/build.
#   Env SHARED_DIR (default <repo>/../shared), SCALE (default 8), SEED (default 1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: make_bench_models.sh OUT_DIR [LLAMA_DIR] [IGNIS_BUILD_DIR]}
LL=${2:-/work/scratch/reference/llama.cpp}
BUILD=${3:-$ROOT/build}
SHARED_DIR=${SHARED_DIR:-$ROOT/../shared}
SCALE=${SCALE:-8}
SEED=${SEED:-1}
MK="$BUILD/bin/ignis-mkmodel"
QZ="$LL/build/bin/llama-quantize"
mkdir -p "$OUT"
[[ -x "$MK" ]] || cmake --build "$BUILD" --target ignis-mkmodel -j2
VOCAB=()
[[ -f "$SHARED_DIR/hf-tokenizers/qwen2/vocab.json" ]] && VOCAB=(--qwen-vocab-dir "$SHARED_DIR/hf-tokenizers/qwen2")

# build_set PRESET TYPE...: one f16 base, then each TYPE (f16 kept only when listed).
build_set() {
  local preset=$1; shift
  local base="$OUT/$preset-f16.gguf" keep_f16=0 vocab=()
  [[ $preset == qwen* ]] && vocab=("${VOCAB[@]}")
  "$MK" --preset "$preset" --type f16 --scale "$SCALE" --seed "$SEED" "${vocab[@]}" -o "$base"
  for t in "$@"; do
    if [[ $t == f16 ]]; then keep_f16=1; continue; fi
    local out="$OUT/$preset-$t.gguf"
    if [[ -x "$QZ" ]]; then
      "$QZ" "$base" "$out" "${t^^}" 2 >/dev/null 2>&1 || { echo "llama-quantize failed for $out" >&2; exit 1; }
    else
      "$MK" --preset "$preset" --type "$t" --scale "$SCALE" --seed "$SEED" "${vocab[@]}" -o "$out"
    fi
    echo "wrote $out"
  done
  [[ $keep_f16 == 1 ]] && echo "wrote $base" || rm -f "$base"
}

Q05=(f16 q8_0 q4_0 q4_k_m)
Q15=(q4_0 q4_k_m)
if [[ ${EXTRA:-0} == 1 ]]; then  # the other packed types, as users' files have them
  Q05+=(q4_1 q5_1 q5_k_m bf16)
  Q15+=(q5_k_m)
  [[ -x "$QZ" ]] && Q15+=(q3_k_m q2_k)  # (llama.cpp's mixes; ignis-mkmodel has no Q3_K_M)
fi
build_set qwen2.5-0.5b "${Q05[@]}"
build_set qwen2.5-1.5b "${Q15[@]}"
build_set llama-3.2-1b q4_0
build_set qwen3-0.6b q8_0
