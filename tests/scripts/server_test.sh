#!/usr/bin/env bash
# ignis serve driven by the official openai npm client (tests/server_js), plain curl for SSE framing,
# and SIGTERM draining. Needs node + npm (the npm registry) and the stories260K model from ../shared.
set -euo pipefail
trap 'echo "server_test.sh: line $LINENO failed (exit $?)" >&2' ERR
: "${IGNIS_BIN:?}" "${IGNIS_SOURCE_DIR:?}" "${IGNIS_SHARED_DIR:?}"
JS="$IGNIS_SOURCE_DIR/tests/server_js"
MODEL="$IGNIS_SHARED_DIR/models/stories260K.gguf"
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true

if [ ! -d "$JS/node_modules/openai" ]; then
  (cd "$JS" && npm ci --no-audit --no-fund --loglevel=error)
fi

# start_server NAME ARGS... -> sets URL_<NAME> and PID_<NAME>
start_server() {
  local name=$1; shift
  local log="$WORK/$name.log"
  "$IGNIS_BIN" serve -m "$MODEL" --port 0 -t 2 "$@" 2>"$log" &
  local pid=$!
  PIDS+=("$pid")
  local url=""
  for _ in $(seq 1 200); do
    url=$(grep -o 'listening on http://[0-9.:]*[0-9]$' "$log" | head -1 | sed 's/listening on //') || true
    if [ -n "$url" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ]; then break; fi
    kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "server $name died"; exit 1; }
    sleep 0.1
  done
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ] || { cat "$log"; echo "server $name not ready"; exit 1; }
  printf -v "URL_$name" '%s' "$url"
  printf -v "PID_$name" '%s' "$pid"
}

start_server main --alias stories --max-queue 1024
start_server key --alias stories --api-key sekret
start_server small --alias stories --max-seqs 1 --max-queue 1

export IGNIS_URL="$URL_main" IGNIS_KEY_URL="$URL_key" IGNIS_KEY=sekret IGNIS_SMALL_URL="$URL_small" IGNIS_MODEL_NAME=stories
node --test --test-concurrency=1 "$JS/openai_client.test.mjs" "$JS/errors.test.mjs" "$JS/serving.test.mjs"

# Plain curl: SSE framing with -N (no buffering).
out=$(curl -sSN "$URL_main/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":3,"temperature":0,"stream":true}')
echo "$out" | grep -q '^data: {' || { echo "no SSE data lines: $out"; exit 1; }
[ "$(echo "$out" | grep -v '^$' | tail -1)" = "data: [DONE]" ] || { echo "SSE does not end with [DONE]: $out"; exit 1; }

# /health is 503 while the model loads: a server whose load is slowed by a FIFO model path would be
# needed to observe it reliably; here we check the status code contract on a loading server by racing it.
"$IGNIS_BIN" serve -m "$MODEL" --port 0 2>"$WORK/race.log" &
race=$!; PIDS+=("$race")
codes=""
for _ in $(seq 1 100); do
  u=$(grep -o 'listening on http://[0-9.:]*' "$WORK/race.log" | head -1 | sed 's/listening on //') || true
  # 000: not reachable yet (or the log line was read half-written); only answers count.
  if [ -n "$u" ]; then c=$(curl -s -o /dev/null -w '%{http_code}' "$u/health" || true); [ "$c" = 000 ] || codes="$codes $c"; [ "$c" = 200 ] && break; fi
  sleep 0.02
done
case "$codes" in *200*) ;; *) echo "health never became 200: $codes"; exit 1;; esac
for c in $codes; do case "$c" in 200|503) ;; *) echo "unexpected /health status $c"; exit 1;; esac; done
kill "$race"; wait "$race" || true

# SIGTERM: the in-flight stream finishes, then the server exits 0.
curl -sN "$URL_main/v1/completions" -H 'content-type: application/json' \
  -d '{"prompt":"Once upon a time","max_tokens":400,"temperature":0,"stream":true,"ignore_eos":true}' >"$WORK/drain.out" &
cpid=$!
for _ in $(seq 1 100); do [ -s "$WORK/drain.out" ] && break; sleep 0.05; done
kill -TERM "$PID_main"
crc=0; wait "$cpid" || crc=$?
[ "$crc" = 0 ] || { echo "the in-flight stream failed (curl exit $crc) at SIGTERM"; cat "$WORK/main.log"; exit 1; }
rc=0; wait "$PID_main" || rc=$?
[ "$rc" = 0 ] || { echo "server exited $rc after SIGTERM"; cat "$WORK/main.log"; exit 1; }
tail -c 200 "$WORK/drain.out" | grep -q 'data: \[DONE\]' || { echo "in-flight stream was cut at SIGTERM"; exit 1; }
echo "server tests: all passed"
