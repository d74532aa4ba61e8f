#!/usr/bin/env bash
# ignis run -hf without network fails fast with one clear line (which host, which file, and --offline /
# -m as the way out), and never hangs. The hub is pointed at a refused port (HF_ENDPOINT) and an empty
# cache (IGNIS_CACHE), so the test needs no network and cannot find a cached model.
set -u
: "${IGNIS_BIN:?IGNIS_BIN is not set}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
export HF_ENDPOINT=http://127.0.0.1:9 IGNIS_CACHE="$TMP/cache"
unset HF_HUB_OFFLINE

# check NAME MAX_SECONDS ARGS...: exit 1 within MAX_SECONDS, empty stdout, one stderr line; echoes it.
check() {
  local name=$1 max=$2; shift 2
  local t0 t1 rc
  t0=$(date +%s)
  timeout 120 "$IGNIS_BIN" run "$@" > "$TMP/out" 2> "$TMP/err"
  rc=$?
  t1=$(date +%s)
  if [ $rc -ne 1 ] || [ -s "$TMP/out" ] || [ "$(wc -l < "$TMP/err")" -ne 1 ] || [ $((t1 - t0)) -gt "$max" ]; then
    echo "FAIL: $name: rc $rc after $((t1 - t0)) s, stderr: $(head -c 600 "$TMP/err")"
    FAILS=$((FAILS + 1))
    return 1
  fi
  echo "ok: $name ($((t1 - t0)) s): $(cat "$TMP/err")"
}
must_say() {  # must_say NAME WORD...: every WORD appears in the last stderr line
  local name=$1; shift
  for w in "$@"; do
    grep -qiF -- "$w" "$TMP/err" || { echo "FAIL: $name: stderr does not mention '$w'"; FAILS=$((FAILS + 1)); }
  done
}

check "-hf, refused port" 20 -hf ggml-org/models:Q4_0 -p hi -n 1
must_say "-hf, refused port" "127.0.0.1" "ggml-org/models" "--offline" "-m"

# No -m and no -hf: the default model, Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q4_K_M.
check "default model, refused port" 20 -p hi -n 1
must_say "default model, refused port" "127.0.0.1" "Qwen/Qwen2.5-1.5B-Instruct-GGUF" "-m"

# --offline with an empty cache: answers from the cache only, so it fails at once without a request.
check "--offline, empty cache" 5 -hf ggml-org/models:Q4_0 -p hi --offline
must_say "--offline, empty cache" "ggml-org/models" "-m"

if [ "$FAILS" -ne 0 ]; then echo "$FAILS failure(s)"; exit 1; fi
echo "all passed"
