#!/usr/bin/env bash
# ignis perplexity vs llama-perplexity (goldens in tests/data/perplexity, made by
# scripts/ref/perplexity_golden.sh) on stories260K and tests/data/perplexity/stories.txt:
# - stories260K with -c 64 / 128 / 256: every running estimate "[i]x" and the final PPL equal
#   llama-perplexity's within 0.1%, its +/- within 1%; the last stdout line has llama-perplexity's format;
# - the random tiny-qwen2 (no BOS) / tiny-llama models with -c 128: the same within 1%. Their logits are
#   peaky (PPL ~ 1e11, ln PPL ~ 26), so llama.cpp's F16 K/V cache (ignis keeps K/V in f32) moves
#   ln PPL by ~0.004 (0.4%); with llama-perplexity -ctk f32 -ctv f32 the gap is ~0.1%;
# - --kl-divergence against llama-perplexity's own base file: mean KLD ~ 0, same top token 100%;
# - a base file written by ignis has llama's header and tokens byte for byte and the same size; the
#   model against its own base: KLD ~ 0, 100%;
# - KLD of quantized tiny models against their f32 original: Q8_0 (made by ignis quantize) is closer
#   than Q4_0 (llama-quantize's, committed), both > 0;
# - errors: text too short, odd or tiny -c, corrupt / mismatched base file.
set -u
: "${IGNIS_BIN:?IGNIS_BIN is not set}"
: "${IGNIS_SHARED_DIR:?IGNIS_SHARED_DIR is not set}"
: "${IGNIS_SOURCE_DIR:?IGNIS_SOURCE_DIR is not set}"
MODEL="$IGNIS_SHARED_DIR/models/stories260K.gguf"
D="$IGNIS_SOURCE_DIR/tests/data/perplexity"
M="$IGNIS_SOURCE_DIR/tests/data/models"
TEXT="$D/stories.txt"
if [ ! -f "$MODEL" ]; then echo "SKIP: stories260K not in $IGNIS_SHARED_DIR"; exit 0; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# --- perplexity vs llama-perplexity ------------------------------------------------------------------
for spec in stories260K:64 stories260K:128 stories260K:256 tiny-qwen2-f32:128 tiny-llama-f32:128; do
  name=${spec%%:*}; c=${spec##*:}
  model=$MODEL
  [ "$name" = stories260K ] || model=$M/$name.gguf
  if ! "$IGNIS_BIN" perplexity -m "$model" -f "$TEXT" -c "$c" -t 2 > "$TMP/out" 2> "$TMP/err"; then
    fail "$name -c $c: exit status $?: $(cat "$TMP/err")"; continue
  fi
  last=$(tail -n 1 "$TMP/out")
  if ! [[ "$last" =~ ^Final\ estimate:\ PPL\ =\ [0-9]+\.[0-9]{4}\ \+/-\ [0-9]+\.[0-9]{5}$ ]]; then
    fail "$name -c $c: last line '$last' is not in llama-perplexity's format"
  fi
  tol=1e-3
  [ "$name" = stories260K ] || tol=1e-2
  if msg=$("$PY" - "$D/$name-c$c.golden" "$TMP/out" "$tol" <<'PY'
import re, sys
g = open(sys.argv[1]).read().splitlines()
o = open(sys.argv[2]).read().splitlines()
gc = [float(x) for x in re.findall(r"\[\d+\]([0-9.]+),", g[0])]
oc = [float(x) for x in re.findall(r"\[\d+\]([0-9.]+),", o[-2])]
if len(gc) != len(oc):
    sys.exit(f"{len(oc)} chunks, llama-perplexity {len(gc)}")
for i, (a, b) in enumerate(zip(oc, gc)):
    if abs(a - b) > float(sys.argv[3]) * b:
        sys.exit(f"chunk {i+1}: {a} vs llama-perplexity {b}")
f = re.compile(r"PPL = ([0-9.]+) \+/- ([0-9.]+)")
(gp, ge), (op, oe) = [tuple(map(float, f.search(s).groups())) for s in (g[1], o[-1])]
if abs(op - gp) > float(sys.argv[3]) * gp or abs(oe - ge) > 1e-2 * ge:
    sys.exit(f"PPL {op} +/- {oe} vs llama-perplexity {gp} +/- {ge}")
print(f"{len(oc)} chunks, PPL {op} +/- {oe} (llama-perplexity {gp} +/- {ge})")
PY
  ); then pass "$name -c $c: $msg"; else fail "$name -c $c: $msg"; fi
done

# --- KL divergence ------------------------------------------------------------------------------------
kld_check() {  # name out_file max_kld min_top
  "$PY" - "$2" "$3" "$4" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
k = float(re.search(r"Mean    KLD:\s+(-?[0-9.]+)", t).group(1))
top = float(re.search(r"Same top p:\s+([0-9.]+)", t).group(1))
last = t.rstrip("\n").splitlines()[-1]
if not last.startswith("Same top p:"):
    sys.exit(f"last line is '{last}'")
if abs(k) > float(sys.argv[2]) or top < float(sys.argv[3]):
    sys.exit(f"mean KLD {k}, same top {top}%")
print(f"mean KLD {k}, same top {top}%")
PY
}
if "$IGNIS_BIN" perplexity -m "$MODEL" -t 2 --kl-divergence-base "$D/stories260K-c128x2.kld" --kl-divergence \
    > "$TMP/kld" 2> "$TMP/err"; then
  if msg=$(kld_check llama "$TMP/kld" 1e-4 100); then pass "vs llama-perplexity's base: $msg"; else fail "vs llama's base: $msg"; fi
else
  fail "--kl-divergence on llama's base file: $(cat "$TMP/err")"
fi

if "$IGNIS_BIN" perplexity -m "$MODEL" -f "$TEXT" -c 128 --chunks 2 -t 2 --kl-divergence-base "$TMP/base.kld" \
    > "$TMP/out" 2> "$TMP/err"; then
  hdr=$((20 + 2 * 128 * 4))
  if cmp -s <(head -c $hdr "$TMP/base.kld") <(head -c $hdr "$D/stories260K-c128x2.kld") &&
     [ "$(stat -c %s "$TMP/base.kld")" = "$(stat -c %s "$D/stories260K-c128x2.kld")" ]; then
    pass "base file: header, tokens and size equal llama-perplexity's"
  else
    fail "base file differs from llama-perplexity's in header/tokens or size"
  fi
  "$IGNIS_BIN" perplexity -m "$MODEL" -t 2 --kl-divergence-base "$TMP/base.kld" --kl-divergence > "$TMP/kld" 2> "$TMP/err"
  if msg=$(kld_check self "$TMP/kld" 1e-6 100); then pass "against its own base: $msg"; else fail "self KLD: $msg"; fi
else
  fail "writing a base file: $(cat "$TMP/err")"
fi

# Quantized tiny models against their original (same vocabulary, random weights).
if "$IGNIS_BIN" perplexity -m "$M/tiny-qwen2-f32.gguf" -f "$TEXT" -c 128 --chunks 3 -t 2 \
    --kl-divergence-base "$TMP/tiny.kld" > /dev/null 2> "$TMP/err" &&
   "$IGNIS_BIN" quantize "$M/tiny-qwen2-f32.gguf" "$TMP/tiny-q8_0.gguf" Q8_0 2> "$TMP/err"; then
  k8=$("$IGNIS_BIN" perplexity -m "$TMP/tiny-q8_0.gguf" --kl-divergence-base "$TMP/tiny.kld" --kl-divergence -t 2 2>/dev/null |
       grep -o 'Mean    KLD: *[-0-9.]*' | grep -o '[-0-9.]*$')
  k4=$("$IGNIS_BIN" perplexity -m "$M/tiny-qwen2-q4_0.gguf" --kl-divergence-base "$TMP/tiny.kld" --kl-divergence -t 2 2>/dev/null |
       grep -o 'Mean    KLD: *[-0-9.]*' | grep -o '[-0-9.]*$')
  if [ -n "$k8" ] && [ -n "$k4" ] && "$PY" -c "import sys; a,b=float('$k8'),float('$k4'); sys.exit(0 if 0 < a < b < 10 else 1)"; then
    pass "KLD vs f32: ignis Q8_0 $k8 < llama-quantize Q4_0 $k4"
  else
    fail "KLD vs f32: Q8_0 '$k8', Q4_0 '$k4' (expected 0 < Q8_0 < Q4_0 < 10)"
  fi
else
  fail "tiny model base / quantize: $(cat "$TMP/err")"
fi

# --- errors -------------------------------------------------------------------------------------------
expect_error() {  # description pattern args...
  local what=$1 pat=$2; shift 2
  if "$IGNIS_BIN" perplexity "$@" > "$TMP/out" 2> "$TMP/err"; then fail "$what: exit status 0"; return; fi
  if [ "$(wc -l < "$TMP/err")" = 1 ] && grep -q -- "$pat" "$TMP/err"; then pass "$what: $(head -1 "$TMP/err")"
  else fail "$what: stderr '$(cat "$TMP/err")' lacks '$pat'"; fi
}
expect_error "text too short" "needs at least 8192" -m "$MODEL" -f "$TEXT" -c 4096
expect_error "odd -c" "-c 127 is invalid" -m "$MODEL" -f "$TEXT" -c 127
expect_error "tiny -c" "-c 8 is invalid" -m "$MODEL" -f "$TEXT" -c 8
expect_error "missing text" "nothere.txt" -m "$MODEL" -f "$TMP/nothere.txt"
head -c 5000 "$D/stories260K-c128x2.kld" > "$TMP/short.kld"
expect_error "truncated base" "short.kld has 5000 bytes" -m "$MODEL" --kl-divergence-base "$TMP/short.kld" --kl-divergence
printf 'not a logits file at all' > "$TMP/bad.kld"
expect_error "not a base file" "not a log-probability file" -m "$MODEL" --kl-divergence-base "$TMP/bad.kld" --kl-divergence
expect_error "vocabulary mismatch" "vocabulary of 512 tokens" -m "$IGNIS_SHARED_DIR/models/llama-2-tiny-random.gguf" \
  --kl-divergence-base "$D/stories260K-c128x2.kld" --kl-divergence
expect_error "--chunks 0" "--chunks 0 leaves nothing" -m "$MODEL" --kl-divergence-base "$D/stories260K-c128x2.kld" \
  --kl-divergence --chunks 0
expect_error "--kl-divergence without base" "needs --kl-divergence-base" -m "$MODEL" --kl-divergence

[ "$FAILS" = 0 ] && echo "all perplexity checks passed" || { echo "$FAILS check(s) failed"; exit 1; }
