#!/usr/bin/env bash
# -hf for a repo without .gguf files, end to end against the fake hub (tests/hub_server/hub_server.py):
# `ignis pull -hf ORG/NAME` prints the snapshot FOLDER holding exactly the checkpoint's files (sharded
# index + every shard + tokenizer files; no .bin/.pth/original/), answers from the cache the second time
# and with --offline, and repos lacking weights or tokenizer fail with one line. When the ignis-mkhf tool
# is built, a real random-weight folder with a generation_config.json is served and `ignis run -hf` loads
# the snapshot folder and reports the defaults it took from generation_config.json.
set -euo pipefail
: "${IGNIS_BIN:?}" "${IGNIS_SOURCE_DIR:?}"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
work=$(mktemp -d /tmp/ignis_hub_ckpt.XXXXXX)
srv_pid=
cleanup() { [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

repo=$work/root/org/ckpt
mkdir -p "$repo/original" "$repo/onnx"
echo '{"architectures": ["LlamaForCausalLM"]}' > "$repo/config.json"
echo '{"eos_token_id": 2, "temperature": 0.6}' > "$repo/generation_config.json"
cat > "$repo/model.safetensors.index.json" <<'JSON'
{"metadata": {"total_size": 3}, "weight_map": {"a": "model-00001-of-00002.safetensors",
 "b": "model-00002-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}}
JSON
head -c 70000 /dev/urandom > "$repo/model-00001-of-00002.safetensors"
head -c 30000 /dev/urandom > "$repo/model-00002-of-00002.safetensors"
echo '{"model": {}}' > "$repo/tokenizer.json"
echo '{}' > "$repo/tokenizer_config.json"
head -c 1000 /dev/urandom > "$repo/pytorch_model.bin"
head -c 1000 /dev/urandom > "$repo/original/consolidated.00.pth"
echo onnx > "$repo/onnx/model.onnx"
echo '# ckpt' > "$repo/README.md"
mkdir -p "$work/root/org/bin-only"
echo '{}' > "$work/root/org/bin-only/config.json"
echo x > "$work/root/org/bin-only/pytorch_model.bin"

mkhf="${IGNIS_BINARY_DIR:-}/bin/ignis-mkhf"
qwen2_tok="${IGNIS_SHARED_DIR:-$IGNIS_SOURCE_DIR/../shared}/hf-tokenizers/qwen2"
have_real=0
if [ -x "$mkhf" ] && [ -f "$qwen2_tok/vocab.json" ]; then
  "$mkhf" --arch qwen2 --dtype f32 --shards 2 --tokenizer "$qwen2_tok" -o "$work/root/org/real" >/dev/null
  echo '{"do_sample": false, "eos_token_id": [151643, 151645], "temperature": 0.7}' > "$work/root/org/real/generation_config.json"
  have_real=1
fi

"$PY" "$IGNIS_SOURCE_DIR/tests/hub_server/hub_server.py" --root "$work/root" --port-file "$work/port" --log "$work/log" &
srv_pid=$!
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || fail "the fake hub did not start"
export HF_ENDPOINT=http://127.0.0.1:$(cat "$work/port") HF_HUB_CACHE=$work/cache HF_HOME=$work/hfhome
unset IGNIS_CACHE HF_HUB_OFFLINE HF_TOKEN

# 1. The snapshot folder on stdout, holding exactly the checkpoint's files, equal to the repo's.
dir=$("$IGNIS_BIN" pull -hf org/ckpt)
case "$dir" in "$work/cache/models--org--ckpt/snapshots/"????????????????????????????????????????) ;; *) fail "path $dir" ;; esac
[ -d "$dir" ] || fail "$dir is not a folder"
got=$(cd "$dir" && find . -type l -o -type f | sed 's|^\./||' | sort | tr '\n' ' ')
want="config.json generation_config.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json tokenizer.json tokenizer_config.json "
[ "$got" = "$want" ] || fail "files: $got"
for f in $want; do cmp -s "$dir/$f" "$repo/$f" || fail "$f differs"; done
! grep -q 'pytorch_model.bin\|original/\|onnx/\|README' "$work/log" || fail "asked for a file it does not need"

# 2. Cached: no request the second time; --offline answers from the cache.
n=$(wc -l < "$work/log")
[ "$("$IGNIS_BIN" pull -hf org/ckpt)" = "$dir" ] || fail "second pull gave another path"
[ "$("$IGNIS_BIN" pull --offline -hf org/ckpt)" = "$dir" ] || fail "--offline pull"
[ "$(wc -l < "$work/log")" = "$n" ] || fail "cached pulls made requests"

# 3. One-line errors: a repo with only .bin weights, a quant on a repo without .gguf files, offline without cache.
if err=$("$IGNIS_BIN" pull -hf org/bin-only 2>&1); then fail "bin-only succeeded"; fi
[ "$err" = "error: org/bin-only: the repo has no .gguf files and no safetensors weights (model.safetensors or model.safetensors.index.json); .bin/.pth checkpoints are not supported" ] \
  || fail "bin-only message: $err"
if err=$("$IGNIS_BIN" pull -hf org/ckpt:Q4_K_M 2>&1); then fail "quant on a checkpoint succeeded"; fi
[[ "$err" == "error: org/ckpt: the repo has no .gguf files, so ':Q4_K_M' selects nothing"* ]] || fail "quant message: $err"
if err=$("$IGNIS_BIN" pull --offline -hf org/bin-only 2>&1); then fail "offline uncached succeeded"; fi
[[ "$err" == "error: org/bin-only is not in the cache "*"offline mode is on"* ]] || fail "offline message: $err"
if err=$("$IGNIS_BIN" run -hf org/bin-only -p hi 2>&1); then fail "run bin-only succeeded"; fi
[[ "$err" == *"org/bin-only: the repo has no .gguf files and no safetensors weights"* ]] || fail "run message: $err"

# 4. A loadable folder: `ignis run -hf` loads the snapshot folder; generation_config.json's do_sample=false
#    makes it greedy unless --temp is given, and its eos ids are reported.
if [ "$have_real" = 1 ]; then
  err=$("$IGNIS_BIN" run -hf org/real -p "Hello" -n 4 2>&1 >/dev/null) || fail "run -hf org/real: $err"
  if [ -n "${VERBOSE:-}" ]; then printf "%s\n" "$err"; fi
  [[ "$err" == *"load: "*"/models--org--real/snapshots/"* ]] || fail "run did not load the snapshot: $err"
  [[ "$err" == *"sampling defaults from "*"/generation_config.json: temperature=0"* ]] || fail "no defaults line: $err"
  [[ "$err" == *"end of generation also at token ids from "*"generation_config.json: 151643 151645"* ]] || fail "no eos line: $err"
  [[ "$err" != *"seed: "* ]] || fail "greedy run printed a seed: $err"
  err=$("$IGNIS_BIN" run -hf org/real --offline -p "Hello" -n 2 --temp 0.9 --seed 1 2>&1 >/dev/null) || fail "run --temp: $err"
  [[ "$err" != *"sampling defaults from"* ]] || fail "--temp did not win: $err"
  [[ "$err" == *"seed: 1"* ]] || fail "--temp 0.9 did not sample: $err"
else
  echo "hub_checkpoint_test: ignis-mkhf or the qwen2 tokenizer missing; skipped the run part"
fi
echo "hub_checkpoint_test: OK"
