#!/usr/bin/python3
"""Goldens for ignis's SentencePiece reader: token ids from Debian's python3-sentencepiece.

Run with /usr/bin/python3 (it has the sentencepiece module):
    /usr/bin/python3 scripts/ref/sentencepiece_golden.py [SHARED_DIR]
Writes tests/data/text/sentencepiece_golden.json: for each model (path relative to SHARED_DIR),
each input text with sp.encode(text) (no BOS/EOS) and sp.decode(ids).
Inputs: llama.cpp's tokenizer-vector inputs plus extra cases (CJK, emoji, control characters,
runs of spaces, user-defined/control token spellings).
"""
import json
import os
import sys

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared")

MODELS = [
    "hf-tokenizers/llama2/tokenizer.model",
    "hf-tokenizers/mistral/tokenizer.model.v1",
    "hf-tokenizers/mistral/mistral_instruct_tokenizer_240216.model.v2",
    "hf-tokenizers/mistral/mistral_instruct_tokenizer_240323.model.v3",
    "hf-tokenizers/mistral/mistral_instruct_tokenizer_241114.model.v7",
]

EXTRA = [
    "",
    "Hello world",
    "  leading and trailing  ",
    "tabs\tand\nnewlines\r\n",
    "\x00\x01\x1f control \x7f",
    "日本語のテキストと中文文本",
    "emoji 🦙🚀😶‍🌫️ family 👨‍👩‍👧",
    "[INST] What is <s> and </s>? [/INST]",
    "Ünïcödé façade naïve café",
    "مرحبا بالعالم",
    "   ",
    "a" * 300,
]


def inputs():
    path = os.path.join(SHARED, "tokenizer-vectors", "ggml-vocab-llama-spm.gguf.inp")
    raw = open(path, encoding="utf-8").read()
    texts = raw.split("\n__ggml_vocab_test__\n")
    if texts and texts[-1] == "":
        texts.pop()
    return texts + EXTRA


def main():
    out = {"generator": "python3-sentencepiece " + spm.__version__, "models": []}
    texts = inputs()
    for rel in MODELS:
        sp = spm.SentencePieceProcessor(model_file=os.path.join(SHARED, rel))
        cases = []
        for t in texts:
            ids = sp.encode(t)
            cases.append({"text": t, "ids": ids, "decoded": sp.decode(ids)})
        out["models"].append({"model": rel, "cases": cases})
    dst = os.path.join(REPO, "tests", "data", "text", "sentencepiece_golden.json")
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    print("wrote", dst)


if __name__ == "__main__":
    main()
