#!/usr/bin/env bash
# Serving side by side: ignis serve and llama-server (built from node-llama-cpp@3.21.1's source bundle,
# -np N, continuous batching) on the same GGUF, driven by bench/serve_bench.mjs at each concurrency.
# The two servers alternate, ROUNDS times, each started fresh per round with new prompts (--seed = round),
# so a busy shared machine disturbs both alike; the summary gives ignis / llama-server ratios per round.
#
#   bench/serve-vs-llamacpp.sh MODEL.gguf [CONCURRENCY=1,16] [REQUESTS=32] [MAX_TOKENS=64]
# Env: THREADS (2), ROUNDS (2), SYSTEM_TOKENS (0: with N, every request shares an N-word system prompt),
#      PROMPT_TOKENS (32), CTX (per-sequence context, 512), IGNIS (default build/bin/ignis),
#      LLAMA_SERVER (default $SCRATCH/llama.cpp/build/bin/llama-server, built if missing),
#      SCRATCH (/work/scratch/bench), IGNIS_ARGS / LLAMA_ARGS (extra server flags).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
M=${1:?usage: serve-vs-llamacpp.sh MODEL.gguf [CONCURRENCY] [REQUESTS] [MAX_TOKENS]}
CONC=${2:-1,16}
REQ=${3:-32}
MAXT=${4:-64}
SCRATCH=${SCRATCH:-/work/scratch/bench}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
SYS=${SYSTEM_TOKENS:-0}
PT=${PROMPT_TOKENS:-32}
CTX=${CTX:-512}
IGNIS=${IGNIS:-$ROOT/build/bin/ignis}
LL=${LLAMA_SERVER:-$SCRATCH/llama.cpp/build/bin/llama-server}
[ -x "$LL" ] || NLC_DIR="$SCRATCH/nlc/node_modules/node-llama-cpp" bash "$ROOT/scripts/ref/build_llamacpp.sh" "$SCRATCH/llama.cpp"
. "$ROOT/bench/llamacpp_libs.sh"
llamacpp_libs "$SCRATCH/llama.cpp" "$M"
echo "llama.cpp CPU backend: $LLAMA_CPU_LIB"
NP=$(echo "$CONC" | tr ',' '\n' | sort -n | tail -1)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
wait_up() { for _ in $(seq 1 600); do curl -sf "$1/health" >/dev/null && return 0; sleep 0.2; done; return 1; }
bench() {  # URL NAME ROUND
  node "$ROOT/bench/serve_bench.mjs" --url "$1" --concurrency "$CONC" --requests "$REQ" --max-tokens "$MAXT" \
    --prompt-tokens "$PT" --system-tokens "$SYS" --seed "$3" --json | sed "s/^{/{\"server\":\"$2\",\"round\":$3,/" \
    | tee -a "$OUT/all.jsonl"
}
for round in $(seq 1 "$ROUNDS"); do
  echo "## round $round: llama-server (-np $NP)"
  # shellcheck disable=SC2086
  "${LLAMA_ENV[@]}" "$LL" -m "$M" -np "$NP" -c $((NP * CTX)) -t "$THREADS" --metrics --port 18401 ${LLAMA_ARGS:-} >/dev/null 2>&1 &
  pid=$!
  wait_up http://127.0.0.1:18401
  bench http://127.0.0.1:18401 llama-server "$round"
  kill $pid; wait $pid 2>/dev/null || true

  echo "## round $round: ignis serve (--max-seqs $NP)"
  # shellcheck disable=SC2086
  "$IGNIS" serve -m "$M" --max-seqs "$NP" -c "$CTX" -t "$THREADS" --port 18402 ${IGNIS_ARGS:-} 2>/dev/null &
  pid=$!
  wait_up http://127.0.0.1:18402
  bench http://127.0.0.1:18402 ignis "$round"
  kill $pid; wait $pid 2>/dev/null || true
done
node - "$OUT/all.jsonl" <<'JS'
const rows = require('fs').readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const f = (x, d = 1) => (x === null || x === undefined ? '-' : x.toFixed(d));
console.log('\n| round | server | concurrency | output tok/s | TTFT p50 / p99 ms | ITL p50 / p99 ms | prompt tokens computed |');
console.log('|---:|---|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(`| ${r.round} | ${r.server} | ${r.concurrency} | ${f(r.output_tok_s)} | ${f(r.ttft_p50_ms, 0)} / ${f(r.ttft_p99_ms, 0)} | ` +
    `${f(r.itl_p50_ms)} / ${f(r.itl_p99_ms)} | ${r.prompt_tokens_computed ?? '-'} |`);
console.log('\n| round | concurrency | tok/s ignis / llama | TTFT p99 ignis / llama | ignis tok/s vs its concurrency-1 rate | llama same |');
console.log('|---:|---:|---:|---:|---:|---:|');
const get = (s, rd, c) => rows.find((r) => r.server === s && r.round === rd && r.concurrency === c);
for (const r of rows.filter((x) => x.server === 'ignis')) {
  const l = get('llama-server', r.round, r.concurrency);
  const i1 = get('ignis', r.round, 1), l1 = get('llama-server', r.round, 1);
  console.log(`| ${r.round} | ${r.concurrency} | ${f(r.output_tok_s / l.output_tok_s, 2)} | ${f(r.ttft_p99_ms / l.ttft_p99_ms, 2)} | ` +
    `${i1 ? f(r.output_tok_s / i1.output_tok_s, 2) : '-'} | ${l1 ? f(l.output_tok_s / l1.output_tok_s, 2) : '-'} |`);
}
JS
