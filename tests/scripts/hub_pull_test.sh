#!/usr/bin/env bash
# `ignis pull -hf REPO[:QUANT]` end to end against the fake hub (tests/hub_server/hub_server.py):
# HF_ENDPOINT / HF_TOKEN / HF_HUB_CACHE / HF_HUB_OFFLINE from the environment, the path on stdout, no
# request the second time, --offline, quant errors, a refused connection failing fast with one line,
# and the progress bar on a terminal only.
set -euo pipefail
: "${IGNIS_BIN:?}" "${IGNIS_SOURCE_DIR:?}"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
work=$(mktemp -d /tmp/ignis_hub_pull.XXXXXX)
srv_pid=
cleanup() { [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

repo=$work/root/org/tiny-GGUF
mkdir -p "$repo"
head -c 250000 /dev/zero | tr '\0' 'a' > "$repo/tiny-q4_k_m.gguf"
head -c 90000 /dev/zero | tr '\0' 'b' > "$repo/tiny-Q8_0.gguf"
echo '# tiny' > "$repo/README.md"

"$PY" "$IGNIS_SOURCE_DIR/tests/hub_server/hub_server.py" --root "$work/root" --port-file "$work/port" \
  --log "$work/log" --token hf_test_token &
srv_pid=$!
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || fail "the fake hub did not start"
port=$(cat "$work/port")

export HF_ENDPOINT=http://127.0.0.1:$port HF_HUB_CACHE=$work/cache HF_HOME=$work/hfhome HF_TOKEN=hf_test_token
unset IGNIS_CACHE HF_HUB_OFFLINE

# 1. Download: the path of the snapshot on stdout, the content of the repo's file.
path=$("$IGNIS_BIN" pull -hf org/tiny-GGUF)
case "$path" in "$work/cache/models--org--tiny-GGUF/snapshots/"*/tiny-q4_k_m.gguf) ;; *) fail "path $path" ;; esac
cmp -s "$path" "$repo/tiny-q4_k_m.gguf" || fail "content differs"
grep -q '"auth": "Bearer hf_test_token"' "$work/log" || fail "HF_TOKEN was not sent"

# 2. Cached: no request at all the second time (also with a differently cased quant).
n=$(wc -l < "$work/log")
[ "$("$IGNIS_BIN" pull -hf org/tiny-GGUF:Q4_K_M)" = "$path" ] || fail "second pull gave another path"
[ "$(wc -l < "$work/log")" = "$n" ] || fail "second pull made requests"

# 3. Offline: from the cache; a quant not cached is a clear error naming the way out.
[ "$("$IGNIS_BIN" pull --offline -hf org/tiny-GGUF)" = "$path" ] || fail "--offline with cache"
if err=$(HF_HUB_OFFLINE=1 "$IGNIS_BIN" pull -hf org/tiny-GGUF:q8_0 2>&1); then fail "offline without cache succeeded"; fi
[[ "$err" == "error: org/tiny-GGUF:q8_0 is not in the cache "*"offline mode is on"*"cached quants: Q4_K_M"* ]] \
  || fail "offline message: $err"

# 4. Quant choice: case-insensitive; an unknown one lists the choices.
q8=$("$IGNIS_BIN" pull -hf org/tiny-GGUF:q8_0)
cmp -s "$q8" "$repo/tiny-Q8_0.gguf" || fail "q8_0 content"
if err=$("$IGNIS_BIN" pull -hf org/tiny-GGUF:Q5_K_M 2>&1); then fail "unknown quant succeeded"; fi
[ "$err" = "error: org/tiny-GGUF: no .gguf file matches quant 'Q5_K_M'; available: Q4_K_M, Q8_0 (use org/tiny-GGUF:QUANT)" ] \
  || fail "unknown quant message: $err"

# --file: plain files of the repo (a small file, served without the CDN), one path per line.
readme=$("$IGNIS_BIN" pull -hf org/tiny-GGUF --file README.md)
[ "$(dirname "$readme")" = "$(dirname "$path")" ] || fail "--file went to another snapshot: $readme"
cmp -s "$readme" "$repo/README.md" || fail "--file content"

# 5. A wrong token: 401 named.
if err=$(HF_TOKEN=wrong "$IGNIS_BIN" pull --refresh -hf org/tiny-GGUF 2>&1); then fail "wrong token succeeded"; fi
[[ "$err" == *"HTTP 401"*"HF_TOKEN"* ]] || fail "401 message: $err"

# 6. Nothing listening: fails in well under 5 s with one line naming host, URL and the way out.
dead=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
t0=$(date +%s%N)
if err=$(HF_ENDPOINT=http://127.0.0.1:$dead "$IGNIS_BIN" pull -hf org/other-GGUF 2>&1); then fail "dead hub succeeded"; fi
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 5000 ] || fail "took $ms ms"
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "more than one line: $err"
[[ "$err" == "error: cannot reach 127.0.0.1 to download org/other-GGUF (http://127.0.0.1:$dead/api/models/org/other-GGUF): "*"; to use a local file pass -m FILE.gguf, or --offline to use the cache" ]] \
  || fail "unreachable message: $err"

# ... and so does a host that does not resolve (.invalid never does; the connect timeout bounds a dead resolver).
t0=$(date +%s%N)
if err=$(HF_ENDPOINT=http://hub.nonexistent.invalid "$IGNIS_BIN" pull -hf org/other-GGUF:Q8_0 2>&1); then fail "bad host succeeded"; fi
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 8000 ] || fail "DNS failure took $ms ms"
[[ "$err" == "error: cannot reach hub.nonexistent.invalid to download org/other-GGUF:Q8_0 (http://hub.nonexistent.invalid/api/models/org/other-GGUF): "*"; to use a local file pass -m FILE.gguf, or --offline to use the cache" ]] \
  || fail "DNS failure message: $err"

# 7. The progress bar only on a terminal: none in a pipe (stderr above was empty on success), one under script(1).
err=$("$IGNIS_BIN" pull --refresh -hf org/tiny-GGUF 2>&1 >/dev/null)
[ -z "$err" ] || fail "stderr not empty in a pipe: $err"
if command -v script >/dev/null; then
  rm -rf "$work/cache"
  out=$(script -qec "$IGNIS_BIN pull -hf org/tiny-GGUF" /dev/null)
  [[ "$out" == *"100% ["*"MB/s"* ]] || fail "no progress bar on a terminal: $out"
fi
echo "hub_pull_test: OK"
