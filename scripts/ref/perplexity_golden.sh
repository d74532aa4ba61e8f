#!/usr/bin/env bash
# llama-perplexity goldens for `ignis perplexity` (reference-only; needs llama.cpp built by
# scripts/ref/build_llamacpp.sh and ../shared/models/stories260K.gguf).
#
# Usage: scripts/ref/perplexity_golden.sh
# Writes tests/data/perplexity/:
#   <model>-c<C>.golden       llama-perplexity -c C on stories.txt with stories260K (C = 64, 128, 256)
#                             and the committed tiny-qwen2-f32 (no BOS) / tiny-llama-f32 (C = 128):
#                             line 1 the per-chunk running
#                             estimates "[1]x,[2]y,...", line 2 "Final estimate: PPL = X +/- Y"
#                             (llama-perplexity prints the latter on stderr; ignis on stdout).
#   stories260K-c128x2.kld    llama-perplexity --kl-divergence-base for -c 128 --chunks 2 (its binary
#                             log-probability format), for ignis' --kl-divergence reading.
#   stories260K-c128x2.kld.txt llama-perplexity --kl-divergence of the same model against that file.
# Env LLAMA_DIR (default /work/scratch/reference/llama.cpp), SHARED (default <repo>/../shared).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LL=${LLAMA_DIR:-/work/scratch/reference/llama.cpp}
PPL=$LL/build/bin/llama-perplexity
SHARED=${SHARED:-$ROOT/../shared}
MODEL=$SHARED/models/stories260K.gguf
D=$ROOT/tests/data/perplexity
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# llama.cpp's asynchronous log sometimes drops its last lines at exit: retry until the run's output is
# complete (as many running estimates as chunks, and the final line).
for spec in stories260K:64 stories260K:128 stories260K:256 tiny-qwen2-f32:128 tiny-llama-f32:128; do
  name=${spec%%:*}; c=${spec##*:}
  model=$MODEL
  [ "$name" = stories260K ] || model=$ROOT/tests/data/models/$name.gguf
  for try in 1 2 3 4 5; do
    "$PPL" -m "$model" -f "$D/stories.txt" -c "$c" -t 2 > "$TMP/out" 2> "$TMP/err"
    n=$(grep -o 'perplexity over [0-9]* chunks' "$TMP/err" | grep -o '[0-9]*')
    line=$(grep -o '^\[1\].*' "$TMP/out" | sed 's/[[:space:]]*$//' || true)
    final=$(grep -o 'Final estimate: PPL = .*' "$TMP/err" || true)
    if [ -n "$final" ] && [[ "$line" == *"[$n]"*, ]]; then
      printf '%s\n%s\n' "$line" "$final" > "$D/$name-c$c.golden"
      break
    fi
    [ "$try" = 5 ] && { echo "llama-perplexity $name -c $c: incomplete output" >&2; exit 1; }
  done
done
"$PPL" -m "$MODEL" -f "$D/stories.txt" -c 128 --chunks 2 -t 2 --kl-divergence-base "$D/stories260K-c128x2.kld" \
  > /dev/null 2>&1
for try in 1 2 3 4 5; do
  "$PPL" -m "$MODEL" -c 128 -t 2 --kl-divergence-base "$D/stories260K-c128x2.kld" --kl-divergence \
    > "$D/stories260K-c128x2.kld.txt" 2> "$TMP/err"
  grep -q "Same top p:" "$D/stories260K-c128x2.kld.txt" && break
  [ "$try" = 5 ] && { echo "llama-perplexity --kl-divergence: incomplete output" >&2; exit 1; }
done
ls -la "$D"
