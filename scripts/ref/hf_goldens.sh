#!/bin/bash
# Regenerates tests/data/hf/*.logits.json: random-weight Hugging Face folders written by ignis-mkhf
# (the same invocations as tests/hf/convert_test.cpp), run through the independent PyTorch reference
# scripts/ref/torch_hf_forward.py. Needs Debian's python3-torch (/usr/bin/python3).
#
# With LLAMA_REF=path/to/llama_ref (scripts/ref/llama_ref.c built against llama.cpp), each folder is also
# converted with `ignis convert` (f32 and q8_0) and run teacher-forced in llama.cpp; the script prints
# llama.cpp's max relative difference from the torch golden and whether the argmax agrees. This is the
# check that llama.cpp loads the converted files and computes the same logits (reference-only: CI has no
# llama.cpp). llama.cpp's q8_0 rows are committed as tests/data/hf/NAME.q8_0.llamacpp.json (the test
# compares ignis's q8_0 logits with them). Build llama_ref as scripts/ref/llama_ref.c says.
# usage: [LLAMA_REF=...] scripts/ref/hf_goldens.sh BUILD_DIR [SCRATCH_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: hf_goldens.sh BUILD_DIR [SCRATCH_DIR]}
scratch=${2:-$(mktemp -d)}
tok="$src/../shared/hf-tokenizers/qwen2"
tokens="151643 9707 11 1879 0 1234 50000 151644 8948 198 151645 151679"
compare_llamacpp() {  # torch golden, llama_ref json, output golden (llama.cpp's rows, same layout)
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import json, math, sys
g = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
rows = []
for l in r["tf_logits"]:
    m = max(l)
    rows.append({"sample": l[::g["sample_stride"]], "argmax": l.index(m), "max": m,
                 "logsumexp": m + math.log(sum(math.exp(x - m) for x in l)),
                 "top5": sorted(range(len(l)), key=lambda i: -l[i])[:5]})
out = dict(g, source="llama.cpp (scripts/ref/llama_ref.c --tf) on the file written by ignis convert", rows=rows)
json.dump(out, open(sys.argv[3], "w"), indent=1)
rel, ok = 0.0, True
for t, row in enumerate(g["rows"]):
    l = r["tf_logits"][t]
    s = row["sample"]; st = g["sample_stride"]
    scale = max(abs(x) for x in s)
    err = max(abs(l[i * st] - s[i]) for i in range(len(s)))
    m = max(l); lse = m + math.log(sum(math.exp(x - m) for x in l))
    err = max(err, abs(m - row["max"]), abs(lse - row["logsumexp"]))
    rel = max(rel, err / scale)
    ok = ok and (l.index(m) == row["argmax"])
print(f"max relative difference from torch {rel:.3g}; argmax " +
      (f"agrees at all {len(g['rows'])} positions" if ok else "differs at some position"))
PY
}
mk() {  # name, mkhf flags
  local name=$1; shift
  "$build/bin/ignis-mkhf" "$@" --tokenizer "$tok" -o "$scratch/$name"
  /usr/bin/python3 "$src/scripts/ref/torch_hf_forward.py" "$scratch/$name" "$src/tests/data/hf/$name.logits.json" $tokens
  echo "wrote tests/data/hf/$name.logits.json"
  if [ -n "${LLAMA_REF:-}" ]; then
    for type in f32 q8_0; do
      "$build/bin/ignis" convert "$scratch/$name" -o "$scratch/$name.$type.gguf" --type "$type"
      "$LLAMA_REF" "$scratch/$name.$type.gguf" --tf "$(echo $tokens | tr ' ' ,)" > "$scratch/$name.$type.llama.json"
      out="$scratch/$name.$type.llamacpp.json"
      [ "$type" = q8_0 ] && out="$src/tests/data/hf/$name.q8_0.llamacpp.json"
      echo "llama.cpp $name $type: $(compare_llamacpp "$src/tests/data/hf/$name.logits.json" "$scratch/$name.$type.llama.json" "$out")"
    done
  fi
}
mk llama --arch llama --dtype f32 --llama3-rope
mk mistral --arch mistral --dtype bf16
mk qwen2 --arch qwen2 --dtype f16
mk qwen3 --arch qwen3 --dtype f32 --shards 2
