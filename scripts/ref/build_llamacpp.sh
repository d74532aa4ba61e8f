#!/usr/bin/env bash
# Builds llama.cpp's tools (reference only, never linked into ignis) from the source bundle shipped
# inside node-llama-cpp (llama/gitRelease.bundle).
#
# Usage: scripts/ref/build_llamacpp.sh [DEST_DIR] [JOBS]
#   DEST_DIR defaults to /work/scratch/reference/llama.cpp; JOBS defaults to 2.
#   Env NLC_DIR overrides the node-llama-cpp install folder
#   (default /work/scratch/nlc/node_modules/node-llama-cpp).
# Result: DEST_DIR/build/bin/{llama-quantize,llama-perplexity,llama-bench,llama-server,llama-tokenize,
#         llama-cli,llama-simple} and DEST_DIR/build/bin/libllama.so (+ ggml libs).
set -euo pipefail
DEST=${1:-/work/scratch/reference/llama.cpp}
JOBS=${2:-2}
NLC_DIR=${NLC_DIR:-/work/scratch/nlc/node_modules/node-llama-cpp}
BUNDLE="$NLC_DIR/llama/gitRelease.bundle"
if [[ ! -d "$DEST/.git" ]]; then
  [[ -f "$BUNDLE" ]] || { echo "build_llamacpp.sh: bundle not found: $BUNDLE" >&2; exit 1; }
  git clone -q "$BUNDLE" "$DEST"
fi
cmake -S "$DEST" -B "$DEST/build" -DLLAMA_CURL=OFF -DGGML_NATIVE=ON -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=ON
cmake --build "$DEST/build" -j"$JOBS" --target llama-quantize llama-simple llama-tokenize llama-perplexity \
  llama-bench llama-cli llama-server
echo "llama.cpp tools in $DEST/build/bin"
