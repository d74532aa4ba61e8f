#!/usr/bin/env bash
# ignis bench: llama-bench's table and JSON fields (one row / object per test and thread count, the
# repetitions' samples, their mean and deviation, peak RSS and load time), the warning for tests past
# the training context, and bad flags and bad files as exit code 1 with one stderr line naming them.
set -u
: "${IGNIS_BIN:?IGNIS_BIN is not set}"
: "${IGNIS_SHARED_DIR:?IGNIS_SHARED_DIR is not set}"
: "${IGNIS_BINARY_DIR:?IGNIS_BINARY_DIR is not set}"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
export HF_ENDPOINT=http://127.0.0.1:9 IGNIS_CACHE="$TMP/cache"

# The project's own random-weight model of Qwen2's shape, quantized (the packed kernels' path).
MODEL="$TMP/tiny-qwen2-q4_0.gguf"
"$IGNIS_BINARY_DIR/bin/ignis-mkmodel" --preset tiny-qwen2 --type q4_0 --ctx 64 -o "$MODEL" > /dev/null ||
  { echo "FAIL: ignis-mkmodel"; exit 1; }

# 1. The table: header, separator, one row per (thread count, test) in llama-bench's order.
timeout 300 "$IGNIS_BIN" bench -m "$MODEL" -p 16 -n 4 -t 1,2 -r 2 > "$TMP/md" 2> "$TMP/md.err" || fail "md run: $(cat "$TMP/md.err")"
"$PY" - "$TMP/md" <<'EOF' || fail "md table: $(cat "$TMP/md")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
cols = [c.strip() for c in lines[0].strip("|").split("|")]
assert cols == ["model", "size", "params", "backend", "threads", "test", "t/s"], cols
assert re.fullmatch(r"\|[ \-:|]+\|", lines[1]), lines[1]
rows = [[c.strip() for c in l.strip("|").split("|")] for l in lines[2:]]
assert [(r[4], r[5]) for r in rows] == [("1", "pp16"), ("1", "tg4"), ("2", "pp16"), ("2", "tg4")], rows
for r in rows:
    assert r[0].startswith("qwen2 ") and r[0].endswith("Q4_0"), r[0]
    assert r[3] == "CPU", r
    m = re.fullmatch(r"([0-9.]+) ± ([0-9.]+)", r[6])
    assert m and float(m.group(1)) > 0, r[6]
EOF

# 1b. The model column names general.file_type as llama-bench does (a Q4_K_M mix: "Q4_K - Medium").
KM="$TMP/tiny-qwen2-q4_k_m.gguf"
"$IGNIS_BINARY_DIR/bin/ignis-mkmodel" --preset tiny-qwen2 --type q4_k_m --ctx 64 -o "$KM" > /dev/null || fail "ignis-mkmodel q4_k_m"
timeout 300 "$IGNIS_BIN" bench -m "$KM" -p 8 -n 0 -t 1 -r 1 > "$TMP/km" 2> "$TMP/km.err" || fail "q4_k_m run: $(cat "$TMP/km.err")"
row=$(sed -n 3p "$TMP/km" | cut -d'|' -f2 | xargs)
[[ $row == "qwen2 "*" Q4_K - Medium" ]] || fail "q4_k_m model column: '$row'"

# 2. JSON: one object per line with llama-bench's field names plus peak_rss_bytes and load_ms.
timeout 300 "$IGNIS_BIN" bench -m "$MODEL" -p 16,8 -n 4 -t 2 -r 3 -o json > "$TMP/json" 2> "$TMP/json.err" ||
  fail "json run: $(cat "$TMP/json.err")"
"$PY" - "$TMP/json" "$MODEL" <<'EOF' || fail "json objects: $(cat "$TMP/json")"
import json, math, sys
objs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert [(o["n_prompt"], o["n_gen"]) for o in objs] == [(16, 0), (8, 0), (0, 4)], objs
for o in objs:
    assert o["model_filename"] == sys.argv[2], o["model_filename"]
    assert o["n_threads"] == 2, o
    s = o["samples_ts"]
    assert len(s) == 3 and all(v > 0 for v in s), s
    assert math.isclose(o["avg_ts"], sum(s) / 3, rel_tol=1e-9), (o["avg_ts"], s)
    m = sum(s) / 3
    sd = math.sqrt(sum((v - m) ** 2 for v in s) / 2)
    assert math.isclose(o["stddev_ts"], sd, rel_tol=1e-6, abs_tol=1e-9), (o["stddev_ts"], sd)
    assert len(o["samples_ns"]) == 3
    assert isinstance(o["peak_rss_bytes"], int) and o["peak_rss_bytes"] > 1 << 20, o["peak_rss_bytes"]
    assert o["load_ms"] >= 0
EOF

# 2b. Depth (-d, llama-bench's): each depth's tests in order, named "pp8 @ d24", n_depth in the JSON; the
# depth's tokens are in the cache before the clock starts, so a rate counts only the test's own tokens.
timeout 300 "$IGNIS_BIN" bench -m "$MODEL" -p 8 -n 4 -d 0,24 -t 1 -r 2 > "$TMP/dmd" 2> "$TMP/dmd.err" ||
  fail "depth md run: $(cat "$TMP/dmd.err")"
"$PY" - "$TMP/dmd" <<'EOF' || fail "depth table: $(cat "$TMP/dmd")"
import sys
rows = [[c.strip() for c in l.strip("|").split("|")] for l in open(sys.argv[1]).read().splitlines()[2:]]
assert [r[5] for r in rows] == ["pp8", "tg4", "pp8 @ d24", "tg4 @ d24"], rows
EOF
timeout 300 "$IGNIS_BIN" bench -m "$MODEL" -p 8 -n 4 -d 24 -t 1 -r 2 -o json > "$TMP/djson" 2> "$TMP/djson.err" ||
  fail "depth json run: $(cat "$TMP/djson.err")"
"$PY" - "$TMP/djson" <<'EOF' || fail "depth json: $(cat "$TMP/djson")"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert [(o["n_prompt"], o["n_gen"], o["n_depth"]) for o in objs] == [(8, 0, 24), (0, 4, 24)], objs
for o in objs:
    n = o["n_prompt"] + o["n_gen"]
    assert all(abs(ts - n / (ns * 1e-9)) < 1e-6 * ts for ts, ns in zip(o["samples_ts"], o["samples_ns"])), o
EOF
# Depth and test together past the training context (64): a warning naming the total.
timeout 300 "$IGNIS_BIN" bench -m "$MODEL" -p 0 -n 8 -d 60 -t 1 -r 1 -o json > "$TMP/dlong" 2> "$TMP/dlong.err" ||
  fail "depth long run: $(cat "$TMP/dlong.err")"
grep -q "a test of 68 tokens is longer than the model's training context 64" "$TMP/dlong.err" ||
  fail "depth long: no warning: $(cat "$TMP/dlong.err")"

# 3. A test longer than the training context (64 here) runs, with a warning.
timeout 300 "$IGNIS_BIN" bench -m "$MODEL" -p 80 -n 0 -t 1 -r 1 -o json > "$TMP/long" 2> "$TMP/long.err" ||
  fail "long run: $(cat "$TMP/long.err")"
grep -q '"n_prompt":80' "$TMP/long" || fail "long: no pp80 result: $(cat "$TMP/long")"
grep -q "longer than the model's training context 64" "$TMP/long.err" || fail "long: no warning: $(cat "$TMP/long.err")"

# 4. Bad flags and files: exit 1, nothing on stdout, one line on stderr containing WORD (cli_errors.sh).
. "$(dirname "$0")/cli_errors.sh"
expect_error() { expect_cli_error bench "$@"; }
M=(-m "$MODEL")
expect_error "-t"            "${M[@]}" -t 0
expect_error "-t"            "${M[@]}" -t 100000
expect_error "-t"            "${M[@]}" -t 1,x
expect_error "-p"            "${M[@]}" -p -5
expect_error "-p"            "${M[@]}" -p 2000000
expect_error "-p"            "${M[@]}" -p 12abc
expect_error "-n"            "${M[@]}" -n 99999999
expect_error "-d"            "${M[@]}" -d -1
expect_error "-d"            "${M[@]}" -d 5000000
expect_error "-d"            "${M[@]}" -d 8,x
expect_error "-r"            "${M[@]}" -r 0
expect_error "-r"            "${M[@]}" -r 5000
expect_error "-o"            "${M[@]}" -o xml
expect_error "nothing to measure" "${M[@]}" -p 0 -n 0
expect_error "--cache-type"  "${M[@]}" --cache-type q3
expect_error "exactly one"   -p 8
expect_error "nope.gguf"     -m "$TMP/nope.gguf"
printf 'not a model' > "$TMP/bad.gguf"
expect_error "bad magic"     -m "$TMP/bad.gguf"
head -c 4000 "$MODEL" > "$TMP/trunc.gguf"
expect_error "trunc.gguf"    -m "$TMP/trunc.gguf"

if [ $FAILS -ne 0 ]; then echo "$FAILS failure(s)"; exit 1; fi
echo "all bench CLI checks passed"
