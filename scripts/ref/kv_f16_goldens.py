#!/usr/bin/env python3
"""Adds llama.cpp's teacher-forced logits with an f16 KV cache to existing goldens.

Reference tool only. For each golden NAME (tests/data/goldens/NAME.json) it runs llama_ref (built as
scripts/ref/make_goldens.sh builds it) on the golden's model and tf_tokens with `--kv f16` (flash
attention off, 2 threads) and stores the result as the golden's "llama_cpp_kv_f16" section:
{"reference": ..., "tf_logits": [[n_vocab floats] x len(tf_tokens)]}, logits rounded to 4 decimals like
the other sections. Everything else in the golden is left as it is.

Usage: kv_f16_goldens.py --llama-ref BIN [--goldens DIR] [--models DIR] NAME...
"""
import argparse
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-ref", required=True, help="llama_ref binary")
    ap.add_argument("--goldens", default=os.path.join(ROOT, "tests/data/goldens"))
    ap.add_argument("--models", default=os.path.join(ROOT, "tests/data/models"))
    ap.add_argument("names", nargs="+")
    args = ap.parse_args()
    for name in args.names:
        path = os.path.join(args.goldens, name + ".json")
        with open(path) as f:
            g = json.load(f)
        model = os.path.join(args.models, g["model"])
        r = subprocess.run([args.llama_ref, model, "--kv", "f16", "--threads", "2", "--tf",
                            ",".join(map(str, g["tf_tokens"]))], check=True, capture_output=True, text=True)
        ll = json.loads(r.stdout)
        g["llama_cpp_kv_f16"] = {
            "reference": ll["reference"],
            "tf_logits": [[round(v, 4) for v in row] for row in ll["tf_logits"]],
        }
        with open(path, "w") as f:
            json.dump(g, f, separators=(",", ":"))
        print(name, ll["reference"])


if __name__ == "__main__":
    main()
