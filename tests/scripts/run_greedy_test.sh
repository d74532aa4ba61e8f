#!/usr/bin/env bash
# ignis run end to end on stories260K (karpathy's trained TinyStories model):
# - greedy continuation of "Once upon a time" equals karpathy's published greedy text (llama2.c run.c
#   -t 0.0, 256 steps from BOS, copied in shared/models/stories260K.md). stdout carries only the
#   continuation, so prompt + stdout is compared with the published text;
# - --json: one parseable object per token, greedy id == top_logprobs[0].id, texts concatenate to the
#   text output; --stop cuts the text before the stop string; same --seed, same sampled text.
set -u
: "${IGNIS_BIN:?IGNIS_BIN is not set}"
: "${IGNIS_SHARED_DIR:?IGNIS_SHARED_DIR is not set}"
MODEL="$IGNIS_SHARED_DIR/models/stories260K.gguf"
GOLDEN_MD="$IGNIS_SHARED_DIR/models/stories260K.md"
if [ ! -f "$MODEL" ] || [ ! -f "$GOLDEN_MD" ]; then echo "SKIP: stories260K not in $IGNIS_SHARED_DIR"; exit 0; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

PROMPT="Once upon a time"
# The published text: the lines between the "-t 0.0" command and the closing fence. run.c ends its
# output with a newline of its own, which is not a generated token: drop it.
awk '/-t 0.0$/{f=1;next} f&&/^```/{exit} f{print}' "$GOLDEN_MD" > "$TMP/golden_nl.txt"
printf '%s' "$(cat "$TMP/golden_nl.txt")" > "$TMP/golden.txt"
if [ "$(head -c ${#PROMPT} "$TMP/golden.txt")" != "$PROMPT" ]; then
  echo "FAIL: could not extract the greedy text from $GOLDEN_MD"; exit 1
fi
# 256 tokens from BOS; "Once upon a time" is 4 of them, so the continuation is 252 tokens.
N_CONT=252

# 1. greedy golden
"$IGNIS_BIN" run -m "$MODEL" -p "$PROMPT" -n $N_CONT --temp 0 -t 2 > "$TMP/out.txt" 2> "$TMP/err.txt"
rc=$?
{ printf '%s' "$PROMPT"; cat "$TMP/out.txt"; } > "$TMP/full.txt"
if [ $rc -ne 0 ]; then
  fail "greedy run exited $rc: $(cat "$TMP/err.txt")"
elif cmp -s "$TMP/full.txt" "$TMP/golden.txt"; then
  pass "greedy continuation equals karpathy's published text ($(wc -c < "$TMP/out.txt") bytes)"
else
  fail "greedy continuation differs from the published text"
  diff <(fold -w 80 "$TMP/golden.txt") <(fold -w 80 "$TMP/full.txt") | head -20
fi
grep -q '^load: [0-9]* ms' "$TMP/err.txt" || fail "stderr lacks 'load: N ms'"
grep -q '^prompt: 5 tokens, ' "$TMP/err.txt" || fail "stderr lacks 'prompt: 5 tokens' (BOS + 4)"
grep -q "^generation: $N_CONT tokens, .* tok/s" "$TMP/err.txt" || fail "stderr lacks 'generation: $N_CONT tokens'"

# 2. --json
"$IGNIS_BIN" run -m "$MODEL" -p "$PROMPT" -n 40 --temp 0 --json > "$TMP/json.txt" 2> "$TMP/err.txt"
rc=$?
"$IGNIS_BIN" run -m "$MODEL" -p "$PROMPT" -n 40 --temp 0 > "$TMP/text40.txt" 2> /dev/null
if [ $rc -ne 0 ]; then
  fail "--json run exited $rc: $(cat "$TMP/err.txt")"
elif "$PY" - "$TMP/json.txt" "$TMP/text40.txt" <<'PYEOF'
import json, math, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
text = open(sys.argv[2], encoding="utf-8").read()
assert len(lines) == 40, f"{len(lines)} lines, expected 40"
joined = ""
for n, line in enumerate(lines):
    o = json.loads(line)
    assert set(o) == {"id", "text", "logprob", "top_logprobs"}, f"line {n}: keys {sorted(o)}"
    top = o["top_logprobs"]
    assert len(top) == 5, f"line {n}: {len(top)} top_logprobs"
    lps = [t["logprob"] for t in top]
    assert all(a >= b for a, b in zip(lps, lps[1:])), f"line {n}: top_logprobs not descending"
    assert all(lp <= 0 for lp in lps) and sum(math.exp(lp) for lp in lps) <= 1.0001, f"line {n}: not log-probs"
    assert o["id"] == top[0]["id"], f"line {n}: greedy id {o['id']} is not the argmax {top[0]['id']}"
    assert abs(o["logprob"] - lps[0]) < 1e-6, f"line {n}: logprob {o['logprob']} != top {lps[0]}"
    assert len({t["id"] for t in top}) == 5, f"line {n}: duplicate ids in top_logprobs"
    joined += o["text"]
assert joined == text, f"json texts {joined!r} != text output {text!r}"
PYEOF
then
  pass "--json: 40 lines, argmax ids, log-probs, texts match the text output"
else
  fail "--json output check"
fi

# 3. --stop: the continuation up to (not including) the first "Lily"; nothing of the stop string shows.
"$IGNIS_BIN" run -m "$MODEL" -p "$PROMPT" -n $N_CONT --temp 0 --stop "Lily" > "$TMP/stop.txt" 2> "$TMP/err.txt"
want=$(tail -c +$(( ${#PROMPT} + 1 )) "$TMP/golden.txt" | awk 'BEGIN{RS="Lily"} {printf "%s", $0; exit}')
if [ "$(cat "$TMP/stop.txt")" == "$want" ] && [ "$want" == ", there was a little girl named " ]; then
  pass "--stop Lily cuts before the stop string"
else
  fail "--stop: got '$(cat "$TMP/stop.txt")', want '$want'"
fi
grep -q '(stop: stop)' "$TMP/err.txt" || fail "--stop: stderr does not say it stopped on the stop string"
# A stop string that never appears changes nothing.
"$IGNIS_BIN" run -m "$MODEL" -p "$PROMPT" -n 40 --temp 0 --stop "zzzq" > "$TMP/stop2.txt" 2> /dev/null
cmp -s "$TMP/stop2.txt" "$TMP/text40.txt" && pass "--stop that never matches: output unchanged" \
  || fail "--stop that never matches changed the output"

# 4. sampling: same seed -> same text; different seed -> different text; -n honoured.
run_seed() { "$IGNIS_BIN" run -m "$MODEL" -p "$PROMPT" -n 60 --temp 1 --top-p 0.9 --seed "$1" 2> "$TMP/err_s.txt"; }
a=$(run_seed 133742); b=$(run_seed 133742); c=$(run_seed 7)
if [ -n "$a" ] && [ "$a" == "$b" ]; then pass "same seed, same text"; else fail "same seed gave different text"; fi
if [ "$a" != "$c" ]; then pass "different seed, different text"; else fail "seeds 133742 and 7 gave the same text"; fi
grep -q '^generation: 60 tokens' "$TMP/err_s.txt" || fail "sampled run did not generate 60 tokens"

# 5. the continuation keeps its leading space (SentencePiece strips it only at the start of a text).
out=$("$IGNIS_BIN" run -m "$MODEL" -p "Once upon a" -n 1 --temp 0 2> /dev/null)
[ "$out" == " time" ] && pass "continuation keeps its leading space" || fail "'Once upon a' -> '$out', want ' time'"

# 6. -n 0 generates nothing; the end of the context stops generation with a warning.
out=$("$IGNIS_BIN" run -m "$MODEL" -p "$PROMPT" -n 0 --temp 0 2> /dev/null)
[ $? -eq 0 ] && [ -z "$out" ] && pass "-n 0: nothing generated" || fail "-n 0 printed '$out'"
"$IGNIS_BIN" run -m "$MODEL" -p "$PROMPT" -c 16 --temp 0 > "$TMP/ctx.txt" 2> "$TMP/err.txt"
if [ $? -eq 0 ] && grep -q 'context (16 tokens) is full' "$TMP/err.txt" && grep -q '^generation: 12 tokens' "$TMP/err.txt"; then
  pass "-c 16: 5 prompt tokens + 12 generated (the last never needs a slot), then a context-full warning"
else
  fail "-c 16: $(cat "$TMP/err.txt")"
fi

# 7. penalties reach the sampler: each changes the greedy text; --repeat-last-n 0 turns them off.
G=(-m "$MODEL" -p "$PROMPT" -n 60 --temp 0)
plain=$("$IGNIS_BIN" run "${G[@]}" 2> /dev/null)
for pen in "--repeat-penalty 1.3" "--presence-penalty 1" "--frequency-penalty 0.5"; do
  # shellcheck disable=SC2086
  out=$("$IGNIS_BIN" run "${G[@]}" $pen 2> /dev/null)
  [ -n "$out" ] && [ "$out" != "$plain" ] && pass "$pen changes the greedy text" || fail "$pen had no effect"
done
out=$("$IGNIS_BIN" run "${G[@]}" --repeat-penalty 1.3 --repeat-last-n 0 2> /dev/null)
[ "$out" == "$plain" ] && pass "--repeat-last-n 0 disables the penalties" || fail "--repeat-last-n 0 still penalised"

# 8. hot sampling reaches byte-fallback tokens: stdout is still valid UTF-8 (never a split character),
#    and --json lines (texts concatenated) equal the text output of the same seed.
HOT=(-m "$MODEL" -p "Once" -n 400 --temp 3 --top-k 0 --top-p 1 --min-p 0 --seed 5)
"$IGNIS_BIN" run "${HOT[@]}" > "$TMP/hot.txt" 2> /dev/null
"$IGNIS_BIN" run "${HOT[@]}" --json > "$TMP/hot.jsonl" 2> /dev/null
if "$PY" - "$TMP/hot.txt" "$TMP/hot.jsonl" <<'PYEOF'
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # strict: raises on a split character
lines = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
assert len(lines) == 400 or lines[-1]["text"] == "", f"{len(lines)} json lines"
assert any(3 <= o["id"] <= 258 for o in lines), "no byte token sampled: the test does not test anything"
assert "".join(o["text"] for o in lines) == text, "json texts differ from the text output"
PYEOF
then pass "hot sampling: valid UTF-8, json texts match the text output"; else fail "hot sampling UTF-8 / json check"; fi

if [ "$FAILS" -ne 0 ]; then echo "$FAILS failure(s)"; exit 1; fi
echo "all passed"
