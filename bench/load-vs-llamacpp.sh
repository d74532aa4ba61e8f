#!/usr/bin/env bash
# Load to first token, side by side: llama.cpp's llama-simple and `ignis run`, each started as a new
# process that loads the GGUF, evaluates a 2-word prompt and generates one token (greedy, 2 threads for
# ignis; llama-simple uses its defaults). Alternated ROUNDS times with the file in the page cache (one
# warm-up each first), so both read the same cached bytes; prints per-model medians, best and the ratio.
#
#   bench/load-vs-llamacpp.sh [ROUNDS=7] MODEL.gguf ...
# Env: SCRATCH (default /work/scratch/bench: the llama.cpp build of vs-llamacpp.sh), IGNIS
#      (default build/bin/ignis), THREADS (2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-7}; shift || true
[ $# -gt 0 ] || { echo "usage: load-vs-llamacpp.sh [ROUNDS] MODEL.gguf ..." >&2; exit 2; }
SCRATCH=${SCRATCH:-/work/scratch/bench}
IGNIS=${IGNIS:-$ROOT/build/bin/ignis}
THREADS=${THREADS:-2}
. "$ROOT/bench/llamacpp_libs.sh"
llama_simple_setup "$@"
echo "| model | llama-simple ms (median / best) | ignis run ms (median / best) | ignis / llama (median) |"
echo "|---|---:|---:|---:|"
for m in "$@"; do
  L=(); I=()
  wall_ms "${LLAMA_ENV[@]}" "$SIMPLE" -m "$m" -n 1 "Hello world" >/dev/null
  wall_ms "$IGNIS" run -m "$m" -p "Hello world" -n 1 --temp 0 -t "$THREADS" >/dev/null
  for _ in $(seq "$ROUNDS"); do
    L+=("$(wall_ms "${LLAMA_ENV[@]}" "$SIMPLE" -m "$m" -n 1 "Hello world")")
    I+=("$(wall_ms "$IGNIS" run -m "$m" -p "Hello world" -n 1 --temp 0 -t "$THREADS")")
  done
  /usr/bin/python3 - "$(basename "$m")" "${L[*]}" "${I[*]}" <<'PY'
import statistics, sys
name, l, i = sys.argv[1], [int(x) for x in sys.argv[2].split()], [int(x) for x in sys.argv[3].split()]
ml, mi = statistics.median(l), statistics.median(i)
print(f"| {name} | {ml:.0f} / {min(l)} | {mi:.0f} / {min(i)} | {mi / ml:.2f} |")
PY
done
