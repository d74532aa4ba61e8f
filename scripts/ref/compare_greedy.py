#!/usr/bin/python3
"""Compares ignis' greedy continuation with llama.cpp's on any GGUF (e.g. the real-shape bench models).

  compare_greedy.py --ignis build/bin/ignis --llama-ref /tmp/ignis-goldens/llama_ref \
      --tokenize LLAMA_DIR/build/bin/llama-tokenize MODEL.gguf "prompt text" [-n 32]

The prompt is tokenized by llama.cpp (llama-tokenize --ids, no BOS added unless the model asks) and by
ignis (ignis run); the two token lists must be equal. Then both generate n tokens greedily and the
sequences are compared by vLLM's rule: at the first position where they differ, each one's token must
be among the other's top 5; nothing after it is compared. Exit status 0 when the rule holds.
"""
import argparse
import json
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ignis", required=True)
    ap.add_argument("--llama-ref", required=True)
    ap.add_argument("--tokenize", required=True, help="llama-tokenize binary")
    ap.add_argument("model")
    ap.add_argument("prompt")
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv", default="f32", help="llama.cpp KV cache type, f32 or f16")
    a = ap.parse_args()

    out = subprocess.run([a.tokenize, "-m", a.model, "-p", a.prompt, "--ids", "--log-disable"],
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    ids = json.loads(out)
    ref = json.loads(subprocess.run([a.llama_ref, a.model, "--prompt", ",".join(map(str, ids)), "--n-predict",
                                     str(a.n), "--top", "5", "--threads", str(a.threads), "--kv", a.kv],
                                    check=True, capture_output=True, text=True).stdout)
    ig = subprocess.run([a.ignis, "run", "-m", a.model, "-p", a.prompt, "-n", str(a.n), "--temp", "0", "--json",
                         "-t", str(a.threads)], check=True, capture_output=True, text=True).stdout
    steps = [json.loads(line) for line in ig.splitlines() if line.startswith("{")]
    got = [s["id"] for s in steps]
    want = ref["greedy"]
    i = 0
    while i < min(len(got), len(want)) and got[i] == want[i]:
        i += 1
    print(f"{a.model}: prompt {len(ids)} tokens, {i} of {len(want)} greedy tokens identical")
    if len(got) != len(want):
        print(f"ignis produced {len(got)} tokens, llama.cpp {len(want)}")
        return 1 if i < min(len(got), len(want)) else 0
    if i == len(want):
        return 0
    ref_top = [e[0] for e in ref["greedy_top"][i]]
    our_top = [e["id"] for e in steps[i]["top_logprobs"]]
    ok = got[i] in ref_top and want[i] in our_top
    print(f"first difference at step {i}: ignis {got[i]} (llama.cpp top5 {ref_top}), llama.cpp {want[i]} "
          f"(ignis top5 {our_top}): vLLM rule {'holds' if ok else 'FAILS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
