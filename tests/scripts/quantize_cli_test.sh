#!/usr/bin/env bash
# ignis quantize from the command line: every type name quantizes a committed F16 model into a file
# ignis loads and runs; Q4_K is Q4_K_M (same bytes); errors are one line naming the problem (unknown
# type lists the valid ones, unreadable input, output == input, unsupported architecture).
# (Types and bytes against llama-quantize are checked by tests/quantize.)
set -u
: "${IGNIS_BIN:?IGNIS_BIN is not set}"
: "${IGNIS_SOURCE_DIR:?IGNIS_SOURCE_DIR is not set}"
M="$IGNIS_SOURCE_DIR/tests/data/models"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

IN="$M/tiny-qwen2-f16.gguf"
for t in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K Q4_K_S Q4_K_M Q5_K Q5_K_S Q5_K_M Q6_K q4_k_m; do
  out="$TMP/$t.gguf"
  if ! "$IGNIS_BIN" quantize "$IN" "$out" "$t" -t 2 > "$TMP/out" 2> "$TMP/err"; then
    fail "$t: $(tail -1 "$TMP/err")"; continue
  fi
  if "$IGNIS_BIN" run -m "$out" -p "Hello" -n 4 --temp 0 > "$TMP/run" 2> "$TMP/rerr"; then
    pass "$t: $(tail -1 "$TMP/err" | cut -c1-70); runs"
  else
    fail "$t: output does not run: $(tail -1 "$TMP/rerr")"
  fi
done
cmp -s "$TMP/Q4_K.gguf" "$TMP/Q4_K_M.gguf" && pass "Q4_K == Q4_K_M" || fail "Q4_K and Q4_K_M files differ"
cmp -s "$TMP/Q5_K.gguf" "$TMP/Q5_K_M.gguf" && pass "Q5_K == Q5_K_M" || fail "Q5_K and Q5_K_M files differ"
cmp -s "$TMP/q4_k_m.gguf" "$TMP/Q4_K_M.gguf" && pass "type names are case-insensitive" || fail "q4_k_m differs"
# thread count does not change the bytes
"$IGNIS_BIN" quantize "$IN" "$TMP/t1.gguf" Q4_K_M -t 1 2>/dev/null
cmp -s "$TMP/t1.gguf" "$TMP/Q4_K_M.gguf" && pass "-t 1 == -t 2" || fail "-t 1 output differs from -t 2"
# requantize a quantized file
if "$IGNIS_BIN" quantize "$M/tiny-qwen2-q8_0.gguf" "$TMP/rq.gguf" Q4_0 2> "$TMP/err" &&
   grep -q "requantized" "$TMP/err" && "$IGNIS_BIN" run -m "$TMP/rq.gguf" -p "Hi" -n 2 > /dev/null 2>&1; then
  pass "requantize Q8_0 -> Q4_0"
else
  fail "requantize Q8_0 -> Q4_0: $(tail -2 "$TMP/err")"
fi

expect_error() {  # description pattern args...
  local what=$1 pat=$2; shift 2
  if "$IGNIS_BIN" quantize "$@" > "$TMP/out" 2> "$TMP/err"; then fail "$what: exit status 0"; return; fi
  if [ "$(wc -l < "$TMP/err")" = 1 ] && grep -q -- "$pat" "$TMP/err"; then pass "$what: $(head -1 "$TMP/err")"
  else fail "$what: stderr '$(cat "$TMP/err")' lacks '$pat'"; fi
}
expect_error "unknown type" "valid: Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q4_K_S, Q4_K_M, Q5_K, Q5_K_S, Q5_K_M, Q6_K, Q8_0" \
  "$IN" "$TMP/x.gguf" Q3_K_M
expect_error "missing input" "nothere.gguf" "$TMP/nothere.gguf" "$TMP/x.gguf" Q8_0
printf 'GGUF garbage' > "$TMP/bad.gguf"
expect_error "corrupt input" "bad.gguf" "$TMP/bad.gguf" "$TMP/x.gguf" Q8_0
cp "$IN" "$TMP/same.gguf"
expect_error "output is input" "is the input file" "$TMP/same.gguf" "$TMP/same.gguf" Q8_0
expect_error "output is input (other spelling)" "is the input file" "$TMP/same.gguf" "$TMP/../$(basename "$TMP")/same.gguf" Q8_0
cmp -s "$TMP/same.gguf" "$IN" && pass "input left untouched" || fail "input was modified"
expect_error "unwritable output" "nodir" "$IN" "$TMP/nodir/x.gguf" Q8_0
[ -e "$TMP/x.gguf" ] && fail "a failed run left an output file" || pass "no output file after errors"

[ "$FAILS" = 0 ] && echo "all quantize CLI checks passed" || { echo "$FAILS check(s) failed"; exit 1; }
