#!/usr/bin/env bash
# The whole job, side by side: llama.cpp's llama-simple and `ignis run`, each a new process that loads
# the GGUF, evaluates the reference prompt (the issue's "A server handles 240 requests per second. ..."
# as plain text, no chat template) and generates N tokens greedily (2 threads for ignis; llama-simple
# uses its defaults). Wall time of the process, alternated ROUNDS times with the file in the page cache
# (one warm-up each first); prints per-model medians, best and the ratio. With IGNIS_B set, a second
# ignis binary takes its turn in every round too (an A/B of two builds against the same yardstick).
#
#   bench/job-vs-llamacpp.sh [ROUNDS=5] [N=80] MODEL.gguf ...
# Env: SCRATCH (default /work/scratch/bench: the llama.cpp build of vs-llamacpp.sh), IGNIS
#      (default build/bin/ignis), IGNIS_B (unset), THREADS (2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-5}; shift || true
N=${1:-80}; shift || true
[ $# -gt 0 ] || { echo "usage: job-vs-llamacpp.sh [ROUNDS] [N] MODEL.gguf ..." >&2; exit 2; }
SCRATCH=${SCRATCH:-/work/scratch/bench}
IGNIS=${IGNIS:-$ROOT/build/bin/ignis}
IGNIS_B=${IGNIS_B:-}
THREADS=${THREADS:-2}
. "$ROOT/bench/llamacpp_libs.sh"
llama_simple_setup "$@"
echo "$N tokens"
PROMPT="A server handles 240 requests per second. Traffic increases by 35%. How many requests per second must it handle? Show the calculation."
ignis_job() { wall_ms "$1" run -m "$2" -p "$PROMPT" -n "$N" --temp 0 -t "$THREADS"; }
if [ -n "$IGNIS_B" ]; then
  echo "| model | llama-simple ms (median / best) | ignis ms | ignis B ms | ignis / llama | ignis B / llama |"
  echo "|---|---:|---:|---:|---:|---:|"
else
  echo "| model | llama-simple ms (median / best) | ignis run ms (median / best) | ignis / llama (median) |"
  echo "|---|---:|---:|---:|"
fi
for m in "$@"; do
  L=(); I=(); B=()
  wall_ms "${LLAMA_ENV[@]}" "$SIMPLE" -m "$m" -n "$N" "$PROMPT" >/dev/null
  ignis_job "$IGNIS" "$m" >/dev/null
  for _ in $(seq "$ROUNDS"); do
    L+=("$(wall_ms "${LLAMA_ENV[@]}" "$SIMPLE" -m "$m" -n "$N" "$PROMPT")")
    I+=("$(ignis_job "$IGNIS" "$m")")
    [ -z "$IGNIS_B" ] || B+=("$(ignis_job "$IGNIS_B" "$m")")
  done
  /usr/bin/python3 - "$(basename "$m")" "${L[*]}" "${I[*]}" "${B[*]:-}" <<'PY'
import statistics, sys
name, l, i = sys.argv[1], [int(x) for x in sys.argv[2].split()], [int(x) for x in sys.argv[3].split()]
b = [int(x) for x in sys.argv[4].split()]
ml, mi = statistics.median(l), statistics.median(i)
if b:
    mb = statistics.median(b)
    print(f"| {name} | {ml:.0f} / {min(l)} | {mi:.0f} / {min(i)} | {mb:.0f} / {min(b)} | {mi / ml:.2f} | {mb / ml:.2f} |")
else:
    print(f"| {name} | {ml:.0f} / {min(l)} | {mi:.0f} / {min(i)} | {mi / ml:.2f} |")
PY
done
