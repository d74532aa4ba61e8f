#!/usr/bin/env python3
"""Summaries of real GGUF files, read by llama.cpp's gguf-py (the reference), for tests/format.

Usage: PYTHONPATH=<llama.cpp>/gguf-py /usr/bin/python3 gen_gguf_goldens.py <shared dir> <out dir>
(gguf-py comes from the llama.cpp source bundled in node-llama-cpp: llama/gitRelease.bundle.)

For each file it writes NAME.json with the version, alignment, data offset, every metadata key with
its type and value (arrays: element type, length and an FNV-1a 64 hash of the elements' raw
little-endian bytes, strings each followed by a 0 byte), and every tensor with its type id, shape,
offset relative to the data section, byte size and first/last 8 data bytes in hex.
"""
import json
import os
import sys

import gguf
from gguf import GGUFValueType as VT

FILES = [
    "models/stories260K.gguf",
    "models/llama-2-tiny-random.gguf",
    "tokenizer-vectors/ggml-vocab-llama-spm.gguf",
    "tokenizer-vectors/ggml-vocab-phi-3.gguf",
]
TYPE_NAMES = {
    VT.UINT8: "uint8", VT.INT8: "int8", VT.UINT16: "uint16", VT.INT16: "int16", VT.UINT32: "uint32",
    VT.INT32: "int32", VT.FLOAT32: "float32", VT.BOOL: "bool", VT.STRING: "string", VT.ARRAY: "array",
    VT.UINT64: "uint64", VT.INT64: "int64", VT.FLOAT64: "float64",
}


def fnv1a64(chunks):
    h = 0xCBF29CE484222325
    for c in chunks:
        for b in c:
            h ^= b
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def summarize(path):
    r = gguf.GGUFReader(path)
    kv = []
    for key, f in r.fields.items():
        if key.startswith("GGUF."):
            continue
        t = f.types[0]
        entry = {"key": key, "type": TYPE_NAMES[t]}
        if t == VT.ARRAY:
            et = f.types[1]
            entry["elem_type"] = TYPE_NAMES[et]
            entry["len"] = len(f.data)
            if et == VT.STRING:
                chunks = [bytes(f.parts[i]) + b"\0" for i in f.data]
            else:
                chunks = [f.parts[i].tobytes() for i in f.data]
            entry["fnv"] = fnv1a64(chunks)
        elif t == VT.STRING:
            entry["value"] = bytes(f.parts[f.data[0]]).decode("utf-8")
        else:
            entry["value"] = f.parts[f.data[0]].tolist()[0]
        kv.append(entry)
    tensors = []
    with open(path, "rb") as fh:
        raw = fh.read()
    for ti in r.tensors:
        start = ti.data_offset
        tensors.append({
            "name": ti.name, "type_id": int(ti.tensor_type), "shape": [int(d) for d in ti.shape],
            "offset": int(ti.data_offset - r.data_offset), "n_bytes": int(ti.n_bytes),
            "head": raw[start:start + 8].hex(), "tail": raw[start + ti.n_bytes - 8:start + ti.n_bytes].hex(),
        })
    version = int(r.fields["GGUF.version"].parts[-1][0])
    return {"version": version, "alignment": int(r.alignment), "data_offset": int(r.data_offset),
            "kv": kv, "tensors": tensors}


def main():
    shared, out = sys.argv[1], sys.argv[2]
    for rel in FILES:
        s = summarize(os.path.join(shared, rel))
        name = os.path.basename(rel) + ".json"
        with open(os.path.join(out, name), "w") as fh:
            json.dump(s, fh, indent=1)
            fh.write("\n")
        print(name, len(s["kv"]), "keys", len(s["tensors"]), "tensors")


if __name__ == "__main__":
    main()
