#!/usr/bin/python3
"""Makes the committed test models (tests/data/models) and their goldens (tests/data/goldens).

Needs the references: llama.cpp built by scripts/ref/build_llamacpp.sh (llama-quantize, libllama),
llama_ref (scripts/ref/llama_ref.c built against it), and Debian's python3-torch for torch_forward.py.
Normally run through scripts/ref/make_goldens.sh. The goldens' format is described in
tests/data/goldens/README.md.

Models: ignis-mkmodel writes the f32 base models (random weights, peaky --scale); every other type is
made from the f32 file by llama.cpp's own llama-quantize (--pure for single-type files, the default
recipe for q4_k_m). Each model's golden records llama.cpp's greedy continuation (64 tokens, top 5 per
step) and teacher-forced logits; f32/f16/bf16 models also carry the torch float64 reference.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

SCALE = 8.0
SEED = 1
N_PREDICT = 64
N_TF = 32          # teacher-forced positions for f32 / f16 / bf16 models
N_TF_QUANT = 16    # ... for quantized models
# A fixed prompt and teacher-forcing sequence (ids < 509, so valid for every 512-token test vocab).
PROMPT = [17, 308, 45, 122, 401, 77, 256, 9]
TF_SEQ = [17, 308, 45, 122, 401, 77, 256, 9, 330, 61, 480, 199, 2, 144, 271, 365,
          88, 500, 13, 222, 310, 57, 436, 101, 250, 33, 415, 170, 64, 290, 7, 388]

# (base preset, [(type, llama-quantize type or None for the f32 file itself, pure)])
MATRIX = [
    ("tiny-qwen2", [("f32", None, False), ("f16", "F16", True), ("bf16", "BF16", True), ("q8_0", "Q8_0", True),
                    ("q4_0", "Q4_0", True), ("q4_1", "Q4_1", True), ("q5_0", "Q5_0", True),
                    ("q5_1", "Q5_1", True)]),
    ("tiny-llama", [("f32", None, False), ("q8_0", "Q8_0", True)]),
    ("tiny-qwen3", [("f32", None, False), ("q4_1", "Q4_1", True)]),
    ("small-qwen2", [("q2_k", "Q2_K", True), ("q3_k", "Q3_K", True), ("q4_k", "Q4_K", True),
                     ("q5_k", "Q5_K", True), ("q6_k", "Q6_K", True), ("q4_k_m", "Q4_K_M", False)]),
    ("small-llama", [("q4_k_m", "Q4_K_M", False)]),
    ("small-qwen3", [("q4_k_m", "Q4_K_M", False)]),
]


def run(cmd, **kw):
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kw)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def tensor_types(path):
    sys.path.insert(0, HERE)
    from gguf_read import GgufReader
    g = GgufReader(path)
    names = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 10: "q2_K",
             11: "q3_K", 12: "q4_K", 13: "q5_K", 14: "q6_K", 30: "bf16"}
    return {n: names.get(g.infos[n][1], str(g.infos[n][1])) for n in g.names}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkmodel", required=True)
    ap.add_argument("--quantize", required=True, help="llama-quantize binary")
    ap.add_argument("--llama-ref", required=True, help="llama_ref binary")
    ap.add_argument("--models", required=True, help="output folder for committed models")
    ap.add_argument("--goldens", required=True, help="output folder for goldens")
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--only", default="", help="comma-separated golden names to (re)make")
    args = ap.parse_args()
    os.makedirs(args.models, exist_ok=True)
    os.makedirs(args.goldens, exist_ok=True)
    os.makedirs(args.scratch, exist_ok=True)
    only = set(x for x in args.only.split(",") if x)

    for preset, variants in MATRIX:
        base = os.path.join(args.scratch, f"{preset}-f32.gguf")
        mk_cmd = [args.mkmodel, "--preset", preset, "--scale", str(SCALE), "--seed", str(SEED), "--type", "f32"]
        run(mk_cmd + ["-o", base])
        for typ, qtype, pure in variants:
            name = f"{preset}-{typ}"
            if only and name not in only:
                continue
            out = os.path.join(args.models, name + ".gguf")
            recipe = [" ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(mk_cmd))]
            if qtype is None:
                run(mk_cmd + ["-o", out])
            else:
                qcmd = [args.quantize] + (["--pure"] if pure else []) + [base, out, qtype, "2"]
                run(qcmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                recipe.append("llama-quantize " + ("--pure " if pure else "") + f"F32.gguf {name}.gguf {qtype}")
            plain = typ in ("f32", "f16", "bf16")
            n_tf = N_TF if plain else N_TF_QUANT
            tf = TF_SEQ[:n_tf]
            r = subprocess.run([args.llama_ref, out, "--prompt", ",".join(map(str, PROMPT)), "--n-predict",
                                str(N_PREDICT), "--top", "5", "--tf", ",".join(map(str, tf))],
                               check=True, capture_output=True, text=True)
            ll = json.loads(r.stdout)
            golden = {
                "model": name + ".gguf",
                "model_sha256": sha256(out),
                "made_by": recipe,
                "type": typ,
                "tensor_types": tensor_types(out),
                "n_vocab": ll["n_vocab"],
                "prompt": PROMPT,
                "n_predict": N_PREDICT,
                "tf_tokens": tf,
                "llama_cpp": {
                    "reference": ll["reference"],
                    "greedy": ll["greedy"],
                    "greedy_top5": ll["greedy_top"],
                    "tf_logits": [[round(v, 4) for v in row] for row in ll["tf_logits"]],
                },
            }
            if plain:
                tp = os.path.join(args.scratch, name + ".torch.json")
                run(["/usr/bin/python3", os.path.join(HERE, "torch_forward.py"), out, "--tokens",
                     ",".join(map(str, PROMPT)), "--greedy", str(N_PREDICT), "--out", tp + ".greedy"])
                run(["/usr/bin/python3", os.path.join(HERE, "torch_forward.py"), out, "--tokens",
                     ",".join(map(str, tf)), "--out", tp])
                with open(tp) as f:
                    t = json.load(f)
                with open(tp + ".greedy") as f:
                    tg = json.load(f)
                golden["torch"] = {
                    "reference": t["reference"],
                    "greedy": tg["greedy"],
                    "greedy_top5": tg["greedy_top5"],
                    "tf_logits": [[round(v, 4) for v in row] for row in t["logits"]],
                }
            with open(os.path.join(args.goldens, name + ".json"), "w") as f:
                json.dump(golden, f, separators=(",", ":"))
                f.write("\n")
            print(f"{name}: {os.path.getsize(out)} bytes, greedy {ll['greedy'][:8]}...", file=sys.stderr)


if __name__ == "__main__":
    main()
