#!/usr/bin/env bash
# Serving side by side: ignis serve and llama-server (built from node-llama-cpp@3.21.1's source bundle,
# -np N, continuous batching) on the same GGUF, driven by bench/serve_bench.mjs at each concurrency.
#
#   bench/serve-vs-llamacpp.sh MODEL.gguf [CONCURRENCY=1,16] [REQUESTS=32] [MAX_TOKENS=64]
# Env: SCRATCH (default /work/scratch/bench; the llama.cpp build lives in $SCRATCH/llama.cpp), THREADS (2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
M=${1:?usage: serve-vs-llamacpp.sh MODEL.gguf [CONCURRENCY] [REQUESTS] [MAX_TOKENS]}
CONC=${2:-1,16}
REQ=${3:-32}
MAXT=${4:-64}
SCRATCH=${SCRATCH:-/work/scratch/bench}
THREADS=${THREADS:-2}
LL="$SCRATCH/llama.cpp/build/bin/llama-server"
[ -x "$LL" ] || NLC_DIR="$SCRATCH/nlc/node_modules/node-llama-cpp" bash "$ROOT/scripts/ref/build_llamacpp.sh" "$SCRATCH/llama.cpp"
NP=$(echo "$CONC" | tr ',' '\n' | sort -n | tail -1)
wait_up() { for _ in $(seq 1 600); do curl -sf "$1/health" >/dev/null && return 0; sleep 0.2; done; return 1; }

echo "## llama-server (-np $NP)"
"$LL" -m "$M" -np "$NP" -c $((NP * 512)) -t "$THREADS" --port 18401 >/dev/null 2>&1 &
pid=$!
wait_up http://127.0.0.1:18401
node "$ROOT/bench/serve_bench.mjs" --url http://127.0.0.1:18401 --concurrency "$CONC" --requests "$REQ" --max-tokens "$MAXT"
kill $pid; wait $pid 2>/dev/null || true

echo "## ignis serve (--max-seqs $NP)"
"$ROOT/build/bin/ignis" serve -m "$M" --max-seqs "$NP" -c 512 -t "$THREADS" --port 18402 2>/dev/null &
pid=$!
wait_up http://127.0.0.1:18402
node "$ROOT/bench/serve_bench.mjs" --url http://127.0.0.1:18402 --concurrency "$CONC" --requests "$REQ" --max-tokens "$MAXT"
kill $pid; wait $pid 2>/dev/null || true
