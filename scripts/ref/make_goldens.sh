#!/usr/bin/env bash
# Regenerates tests/data/models/*.gguf and tests/data/goldens/*.json with the references.
#
# Usage: scripts/ref/make_goldens.sh [LLAMA_DIR] [IGNIS_BUILD_DIR]
#   LLAMA_DIR: llama.cpp built by scripts/ref/build_llamacpp.sh (default /work/scratch/reference/llama.cpp)
#   IGNIS_BUILD_DIR: a build of this repo with target ignis-mkmodel (default build)
# Env SCRATCH: temp folder (default /tmp/ignis-goldens). ONLY: comma-separated golden names.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LL=${1:-/work/scratch/reference/llama.cpp}
BUILD=${2:-$ROOT/build}
SCRATCH=${SCRATCH:-/tmp/ignis-goldens}
mkdir -p "$SCRATCH"
cmake --build "$BUILD" --target ignis-mkmodel -j2 >/dev/null
cc -O2 -o "$SCRATCH/llama_ref" "$ROOT/scripts/ref/llama_ref.c" -I"$LL/include" -I"$LL/ggml/include" \
  -L"$LL/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$LL/build/bin"
/usr/bin/python3 "$ROOT/scripts/ref/make_goldens.py" --mkmodel "$BUILD/bin/ignis-mkmodel" \
  --quantize "$LL/build/bin/llama-quantize" --llama-ref "$SCRATCH/llama_ref" \
  --models "$ROOT/tests/data/models" --goldens "$ROOT/tests/data/goldens" --scratch "$SCRATCH" \
  --only "${ONLY:-}"
