#!/usr/bin/env bash
# llama-quantize goldens for `ignis quantize`, and a load check of ignis' output in llama.cpp.
# Reference-only (needs llama.cpp built by scripts/ref/build_llamacpp.sh); not run in CI.
#
# Usage:
#   scripts/ref/quantize_check.sh goldens   writes tests/data/quantize/:
#       plan-<model>-<TYPE>.tsv  llama-quantize --dry-run's type for every tensor. First line
#                                "# arch=A n_layer=N n_head=H n_head_kv=K"; then rows
#                                name <TAB> input type <TAB> ne0,ne1,.. <TAB> llama-quantize's type.
#                                Models: qwen2.5-0.5b (ignis-mkmodel preset, F16; the vocabulary is cut
#                                to 1024 rows to keep the file small: no type depends on the row count)
#                                and the committed tiny-llama-f32 (untied output.weight).
#       hash-<input>-<TYPE>.tsv   name <TAB> type <TAB> sha256 of the tensor's bytes in llama-quantize's
#                                output (default recipe; --allow-requantize for quantized inputs), for
#                                inputs committed under tests/data/models.
#   scripts/ref/quantize_check.sh check IGNIS_BIN
#       quantizes small generated models (and with BIG=1 the Qwen2.5-0.5B-shaped one) to every type with
#       ignis and with llama-quantize, compares every tensor's type and bytes, and runs llama-simple on
#       ignis' output (it must load and generate). CHECK_TYPES="Q4_K_M Q8_0" limits the types.
# Env LLAMA_DIR (default /work/scratch/reference/llama.cpp), MKMODEL (ignis-mkmodel binary),
# SCRATCH (default /tmp/ignis-quantize).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LL=${LLAMA_DIR:-/work/scratch/reference/llama.cpp}
Q=$LL/build/bin/llama-quantize
SIMPLE=$LL/build/bin/llama-simple
SCRATCH=${SCRATCH:-/tmp/ignis-quantize}
MODELS=$ROOT/tests/data/models
OUT=$ROOT/tests/data/quantize
mkdir -p "$SCRATCH"
TYPES="Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K Q4_K Q5_K"

# dry-run log -> plan tsv
plan_tsv() {  # model.gguf type out.tsv
  "$Q" --dry-run "$1" "$2" > "$SCRATCH/dry.log" 2>&1
  /usr/bin/python3 - "$1" "$SCRATCH/dry.log" "$3" "$ROOT/scripts/ref" <<'PY'
import re, sys
sys.path.insert(0, sys.argv[4])
from gguf_read import GgufReader
g = GgufReader(sys.argv[1])
arch = g.meta["general.architecture"]
nh = g.meta.get(f"{arch}.attention.head_count", 0)
hdr = (f"# arch={arch} n_layer={g.meta[arch + '.block_count']} n_head={nh} "
       f"n_head_kv={g.meta.get(arch + '.attention.head_count_kv', nh)}")
rows = []
pat = re.compile(r"^\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[([^\]]*)\], type =\s*(\S+), size =.*?(?:\((\w+)\))?\s*$")
for line in open(sys.argv[2]):
    m = pat.match(line.rstrip("\n"))
    if not m:
        continue
    name, shape, tin, tout = m.groups()
    dims = [int(x) for x in shape.split(",")]
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    rows.append(f"{name}\t{tin}\t{','.join(map(str, dims))}\t{tout or tin}")
if len(rows) != len(g.names):
    sys.exit(f"parsed {len(rows)} tensors of {len(g.names)} from the dry-run log")
with open(sys.argv[3], "w") as f:
    f.write(hdr + "\n" + "\n".join(rows) + "\n")
PY
}

# quantized file -> hash tsv
hash_tsv() {  # model.gguf out.tsv
  /usr/bin/python3 - "$1" "$2" "$ROOT/scripts/ref" <<'PY'
import hashlib, sys
sys.path.insert(0, sys.argv[3])
from gguf_read import GgufReader
SIZES = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22),
         7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34), 10: ("q2_K", 256, 84), 11: ("q3_K", 256, 110),
         12: ("q4_K", 256, 144), 13: ("q5_K", 256, 176), 14: ("q6_K", 256, 210), 30: ("bf16", 1, 2)}
g = GgufReader(sys.argv[1])
with open(sys.argv[2], "w") as f:
    for name in g.names:
        shape, t, off = g.infos[name]
        tname, blk, bb = SIZES[t]
        n = 1
        for d in shape:
            n *= d
        start = g.data_start + off
        data = g.buf[start:start + n // blk * bb]
        f.write(f"{name}\t{tname}\t{hashlib.sha256(data).hexdigest()}\n")
PY
}

case "${1:-}" in
goldens)
  MK=${MKMODEL:-$ROOT/build/bin/ignis-mkmodel}
  [ -f "$SCRATCH/qwen2.5-0.5b-f16.gguf" ] || "$MK" --preset qwen2.5-0.5b --n-vocab 1024 --type f16 -o "$SCRATCH/qwen2.5-0.5b-f16.gguf" >/dev/null
  for t in $TYPES; do
    plan_tsv "$SCRATCH/qwen2.5-0.5b-f16.gguf" "$t" "$OUT/plan-qwen2.5-0.5b-$t.tsv"
  done
  for t in Q4_0 Q8_0 Q4_K_M Q6_K; do
    plan_tsv "$MODELS/tiny-llama-f32.gguf" "$t" "$OUT/plan-tiny-llama-$t.tsv"
  done
  # byte goldens: from F32 / F16, and requantized from Q6_K
  for spec in tiny-qwen2-f32:Q4_0 tiny-qwen2-f32:Q4_1 tiny-qwen2-f32:Q5_0 tiny-qwen2-f32:Q5_1 \
              tiny-qwen2-f32:Q8_0 tiny-qwen2-f16:Q4_K_M tiny-qwen2-f16:Q5_K_M tiny-qwen2-bf16:Q6_K \
              tiny-llama-f32:Q4_K_M small-qwen2-q6_k:Q4_K_M small-qwen2-q6_k:Q5_K_M small-qwen2-q6_k:Q4_0; do
    in=${spec%%:*}; t=${spec##*:}
    "$Q" --allow-requantize "$MODELS/$in.gguf" "$SCRATCH/$in-$t.gguf" "$t" 2 > "$SCRATCH/q.log" 2>&1 ||
      { cat "$SCRATCH/q.log"; exit 1; }
    hash_tsv "$SCRATCH/$in-$t.gguf" "$OUT/hash-$in-$t.tsv"
  done
  echo "wrote $(ls "$OUT" | wc -l) files to $OUT"
  ;;
check)
  IGNIS=${2:?usage: quantize_check.sh check IGNIS_BIN}
  MK=${MKMODEL:-$ROOT/build/bin/ignis-mkmodel}
  "$MK" --preset small-qwen2 --type f16 --scale 6 -o "$SCRATCH/small-qwen2-f16.gguf" >/dev/null
  "$MK" --preset small-llama --type f32 --scale 6 -o "$SCRATCH/small-llama-f32.gguf" >/dev/null
  [ -n "${BIG:-}" ] && [ ! -f "$SCRATCH/qwen2.5-0.5b-f16.gguf" ] &&
    "$MK" --preset qwen2.5-0.5b --n-vocab 1024 --type f16 -o "$SCRATCH/qwen2.5-0.5b-f16.gguf" >/dev/null
  fails=0
  for in in small-qwen2-f16 small-llama-f32 ${BIG:+qwen2.5-0.5b-f16}; do
    for t in ${CHECK_TYPES:-Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K}; do
      o="$SCRATCH/ignis-$in-$t.gguf"
      "$IGNIS" quantize "$SCRATCH/$in.gguf" "$o" "$t" 2>/dev/null
      "$Q" "$SCRATCH/$in.gguf" "$SCRATCH/llama-$in-$t.gguf" "$t" 2 > /dev/null 2>&1
      hash_tsv "$o" "$SCRATCH/h-ignis.tsv"
      hash_tsv "$SCRATCH/llama-$in-$t.gguf" "$SCRATCH/h-llama.tsv"
      same="tensors equal llama-quantize's"
      if ! cmp -s "$SCRATCH/h-ignis.tsv" "$SCRATCH/h-llama.tsv"; then
        same="tensors DIFFER from llama-quantize's: $(diff "$SCRATCH/h-ignis.tsv" "$SCRATCH/h-llama.tsv" | grep -c '^<')"
        fails=$((fails + 1))
      fi
      if "$SIMPLE" -m "$o" -n 8 "Hello" > "$SCRATCH/simple.out" 2> "$SCRATCH/simple.err"; then
        echo "ok   $in $t: $same; llama-simple: $(tr '\n' ' ' < "$SCRATCH/simple.out" | head -c 60)"
      else
        echo "FAIL $in $t: $same; llama-simple failed: $(tail -2 "$SCRATCH/simple.err")"; fails=$((fails + 1))
      fi
    done
  done
  [ "$fails" = 0 ]
  ;;
*)
  echo "usage: $0 goldens | check IGNIS_BIN" >&2
  exit 2
  ;;
esac
