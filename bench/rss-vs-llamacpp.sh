#!/usr/bin/env bash
# Peak memory, side by side: the peak resident set (ru_maxrss) of llama.cpp's llama-bench and of
# `ignis bench`, each run as a new process on the same GGUF with the same test (pp512 then tg16, one
# repetition, 2 threads); prints MB and the ratio per model.
#
#   bench/rss-vs-llamacpp.sh MODEL.gguf ...
# Env: SCRATCH (default /work/scratch/bench: the llama.cpp build of vs-llamacpp.sh), IGNIS
#      (default build/bin/ignis), THREADS (2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: rss-vs-llamacpp.sh MODEL.gguf ..." >&2; exit 2; }
SCRATCH=${SCRATCH:-/work/scratch/bench}
IGNIS=${IGNIS:-$ROOT/build/bin/ignis}
THREADS=${THREADS:-2}
LL="$SCRATCH/llama.cpp"
[ -x "$LL/build/bin/llama-bench" ] || { echo "missing $LL/build/bin/llama-bench: run bench/vs-llamacpp.sh once" >&2; exit 2; }
. "$ROOT/bench/llamacpp_libs.sh"
llamacpp_libs "$LL" "$@"
echo "llama.cpp CPU backend: $LLAMA_CPU_LIB"
rss() {  # command... -> peak RSS of that process in MB
  /usr/bin/python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$@"
}
echo "| model | llama-bench peak RSS MB | ignis bench peak RSS MB | ignis / llama |"
echo "|---|---:|---:|---:|"
for m in "$@"; do
  l=$(rss "${LLAMA_ENV[@]}" "$LL/build/bin/llama-bench" -m "$m" -p 512 -n 16 -t "$THREADS" -r 1)
  i=$(rss "$IGNIS" bench -m "$m" -p 512 -n 16 -t "$THREADS" -r 1)
  echo "| $(basename "$m") | $l | $i | $(/usr/bin/python3 -c "print(f'{$i / $l:.2f}')") |"
done
