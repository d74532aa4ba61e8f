#!/usr/bin/env bash
# ignis run -m DIR on a Hugging Face folder (written by ignis-mkhf): greedy output equals that of the
# GGUF ignis convert writes (and, with --quant Q8_0, that of convert --type f32 + ignis quantize Q8_0);
# bad folders and bad --quant values give exit code 1, nothing on stdout and one stderr line naming the
# file and the problem.
set -u
: "${IGNIS_BIN:?IGNIS_BIN is not set}"
: "${IGNIS_SHARED_DIR:?IGNIS_SHARED_DIR is not set}"
: "${IGNIS_BINARY_DIR:?IGNIS_BINARY_DIR is not set}"
TOK="$IGNIS_SHARED_DIR/hf-tokenizers/qwen2"
MKHF="$IGNIS_BINARY_DIR/bin/ignis-mkhf"
if [ ! -f "$TOK/vocab.json" ]; then echo "SKIP: $TOK not found"; exit 0; fi
if [ ! -x "$MKHF" ]; then echo "FAIL: $MKHF not built"; exit 1; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
export HF_ENDPOINT=http://127.0.0.1:9 IGNIS_CACHE="$TMP/cache"  # no network

mkhf() {  # mkhf DIR FLAGS...
  local dir=$1; shift
  "$MKHF" "$@" --tokenizer "$TOK" -o "$dir" > /dev/null || { echo "FAIL: ignis-mkhf $*"; exit 1; }
}
run() { timeout 120 "$IGNIS_BIN" run -p "Hello, world" -n 8 --temp 0 -t 2 --json "$@" 2> "$TMP/run.err"; }

# same_output NAME ARGS_A -- ARGS_B: both runs succeed with the same stdout (token ids and logprobs).
same_output() {
  local name=$1; shift
  local a=() b=()
  while [ "$1" != "--" ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  if ! run "${a[@]}" > "$TMP/a.out"; then echo "FAIL: $name: run ${a[*]}: $(cat "$TMP/run.err")"; FAILS=$((FAILS + 1)); return; fi
  if ! run "${b[@]}" > "$TMP/b.out"; then echo "FAIL: $name: run ${b[*]}: $(cat "$TMP/run.err")"; FAILS=$((FAILS + 1)); return; fi
  if [ "$(wc -l < "$TMP/a.out")" -ne 8 ] || ! cmp -s "$TMP/a.out" "$TMP/b.out"; then
    echo "FAIL: $name: outputs differ"; diff "$TMP/a.out" "$TMP/b.out" | head -5; FAILS=$((FAILS + 1))
  else
    echo "ok: $name: tokens $(sed -n 's/^{"id":\([0-9]*\).*/\1/p' "$TMP/a.out" | tr '\n' ' ')"
  fi
}

# expect_error WORDS ARGS...: exit 1, empty stdout, one stderr line containing every |-separated word.
. "$(dirname "$0")/cli_errors.sh"
expect_error() { local words=$1; shift; expect_cli_error run "$words" -p hi -n 1 "$@"; }

# Greedy tokens: the folder itself vs the converted GGUF in the checkpoint's dtype (BF16, permuted Q/K).
D="$TMP/mistral"
mkhf "$D" --arch mistral --dtype bf16
"$IGNIS_BIN" convert "$D" -o "$TMP/mistral.bf16.gguf" --type bf16 2> /dev/null
"$IGNIS_BIN" convert "$D" -o "$TMP/mistral.f32.gguf" --type f32 2> /dev/null
"$IGNIS_BIN" quantize "$TMP/mistral.f32.gguf" "$TMP/mistral.q8_0.gguf" Q8_0 2> /dev/null
same_output "folder = converted bf16 GGUF" -m "$D" -- -m "$TMP/mistral.bf16.gguf"
same_output "folder --quant Q8_0 = convert f32 + quantize Q8_0" -m "$D" --quant Q8_0 -- -m "$TMP/mistral.q8_0.gguf"

# Two shards (qwen3, F32).
Q="$TMP/qwen3"
mkhf "$Q" --arch qwen3 --dtype f32 --shards 2
"$IGNIS_BIN" convert "$Q" -o "$TMP/qwen3.f32.gguf" --type f32 2> /dev/null
same_output "sharded folder = converted f32 GGUF" -m "$Q" -- -m "$TMP/qwen3.f32.gguf"

# Bad folders and flags.
expect_error "--quant q3: unknown type|Q4_K_M" -m "$D" --quant q3
expect_error "mistral.bf16.gguf|--quant Q8_0 applies to Hugging Face model folders" -m "$TMP/mistral.bf16.gguf" --quant Q8_0
B="$TMP/bad"
cp -r "$D" "$B" && rm "$B/config.json"
expect_error "$B: not a Hugging Face model folder (config.json is missing)" -m "$B"
rm -rf "$B" && cp -r "$D" "$B"
sed -i 's/"MistralForCausalLM"/"GPT2LMHeadModel"/' "$B/config.json"
expect_error "$B/config.json|GPT2LMHeadModel is not supported" -m "$B"
rm -rf "$B" && cp -r "$D" "$B"
printf '\xff\xff\xff\xff\xff\xff\x00\x00' | dd of="$B/model.safetensors" conv=notrunc status=none
expect_error "$B/model.safetensors|header length" -m "$B"
rm -rf "$B" && cp -r "$D" "$B"
printf '\x40\x00\x00\x00\x00\x00\x00\x00{"a": [' | dd of="$B/model.safetensors" conv=notrunc status=none
expect_error "$B/model.safetensors|header is not valid JSON" -m "$B"
rm -rf "$B" && cp -r "$Q" "$B" && rm "$B/model-00002-of-00002.safetensors"
expect_error "model-00002-of-00002.safetensors|cannot open" -m "$B"

if [ $FAILS -ne 0 ]; then echo "$FAILS failure(s)"; exit 1; fi
echo "all passed"
