#!/usr/bin/env bash
# Resident memory of `ignis serve` over many sequential requests (issue 4: no growth over 10,000).
#
#   bench/serve_rss.sh [MODEL.gguf] [REQUESTS=10000] [EVERY=500]
# Default model: stories260K from the shared data folder. Env: IGNIS (the ignis binary; default
# build/bin/ignis), PORT (18411), MAX_GROWTH_KB (fail above this growth after warm-up; default: report only).
# NOTE: the KV arena's pages are touched lazily and the block pool hands out least recently freed blocks
# first (to keep prefix-cache entries longest), so RSS climbs until every block has been used once and is
# flat from then on. A small --kv-memory (8M: 400 stories260K blocks) makes that happen within the first
# few hundred requests, so growth measured after the warm-up is growth of everything else.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
M=${1:-${IGNIS_SHARED_DIR:-$ROOT/../shared}/models/stories260K.gguf}
N=${2:-10000}
EVERY=${3:-500}
IGNIS=${IGNIS:-$ROOT/build/bin/ignis}
PORT=${PORT:-18411}
"$IGNIS" serve -m "$M" -t 1 --max-seqs 4 -c 256 --kv-memory 8M --port "$PORT" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
node "$ROOT/bench/serve_rss.mjs" --url "http://127.0.0.1:$PORT" --pid "$pid" --requests "$N" --every "$EVERY" \
  ${MAX_GROWTH_KB:+--max-growth-kb "$MAX_GROWTH_KB"}
