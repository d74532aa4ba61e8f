#!/usr/bin/env bash
# Tokenizer throughput, ignis vs llama.cpp (node-llama-cpp@3.21.1), on war-and-peace.txt with the
# Qwen2 and Llama 3 vocabularies. Also checks that both produce the same ids.
#   bench/tokenizer/run.sh [BUILD_DIR] [NODE_LLAMA_CPP_DIR]
# BUILD_DIR: an ignis CMake build (default build); NODE_LLAMA_CPP_DIR: a folder whose node_modules
# has node-llama-cpp (default /work/scratch/nlc). Scratch files go to ${TMPDIR:-/tmp}/ignis-tok-bench.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-$repo/build}
nlc=${2:-/work/scratch/nlc}
shared=${IGNIS_SHARED_DIR:-$repo/../shared}
work=${TMPDIR:-/tmp}/ignis-tok-bench
mkdir -p "$work"
libs="$build/src/text/libignis_text.a $build/src/format/libignis_format.a $build/src/core/libignis_core.a"
cxx="g++ -std=c++20 -O2 -I$repo/src"
$cxx "$here/make_vocab_gguf.cpp" $libs -lfmt -o "$work/make_vocab_gguf"
$cxx "$here/tokenizer_bench.cpp" $libs -lpcre2-8 -lutf8proc -lfmt -o "$work/tokenizer_bench"
cp "$here/llama_cpp_tokenize.mjs" "$nlc/ignis_llama_cpp_tokenize.mjs"
text="$shared/text/war-and-peace.txt"
for v in qwen2 llama3; do
  dir=$shared/hf-tokenizers/$([ $v = qwen2 ] && echo qwen2 || echo llama3.2-gpt2-format)
  "$work/make_vocab_gguf" $v "$dir" "$work/$v.gguf" > /dev/null
  echo "== $v"
  "$work/tokenizer_bench" "$dir" "$text" 5 "$work/$v.ignis.ids"
  (cd "$nlc" && node ignis_llama_cpp_tokenize.mjs "$work/$v.gguf" "$text" 5 "$work/$v.llamacpp.ids")
  if cmp -s "$work/$v.ignis.ids" "$work/$v.llamacpp.ids"; then echo "ids: identical"; else echo "ids: DIFFER"; fi
done
rm -f "$nlc/ignis_llama_cpp_tokenize.mjs"
