#!/usr/bin/env bash
# Regenerates tests/data/quant/*.bin from REFERENCE ggml (llama.cpp source from node-llama-cpp's bundle).
# Usage: scripts/ref/ggml_quant_golden.sh [SCRATCH_DIR]   (default /work/scratch/quant)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
scratch=${1:-/work/scratch/quant}
bundle=${LLAMA_BUNDLE:-/work/scratch/nlc/node_modules/node-llama-cpp/llama/gitRelease.bundle}
mkdir -p "$scratch"
[ -d "$scratch/llama.cpp" ] || git clone -q "$bundle" "$scratch/llama.cpp"
cmake -S "$scratch/llama.cpp" -B "$scratch/ggml-build" -G Ninja -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF >/dev/null
cmake --build "$scratch/ggml-build" -j2 --target ggml ggml-cpu >/dev/null
cc -O2 -I"$scratch/llama.cpp/ggml/include" "$repo/scripts/ref/ggml_quant_golden.c" \
  "$scratch/ggml-build/ggml/src/libggml-cpu.a" "$scratch/ggml-build/ggml/src/libggml-base.a" \
  -lm -lpthread -lstdc++ -o "$scratch/ggml_quant_golden"
mkdir -p "$repo/tests/data/quant"
"$scratch/ggml_quant_golden" "$repo/tests/data/quant"
echo "wrote tests/data/quant from llama.cpp $(git -C "$scratch/llama.cpp" describe --tags --always 2>/dev/null)"
