#!/usr/bin/env python3
"""Writes gguf_py_fixture.gguf with llama.cpp's gguf-py writer (the reference), for tests/format.

Usage: PYTHONPATH=<llama.cpp>/gguf-py /usr/bin/python3 gen_gguf_fixture.py <out dir>

The file holds one key of every GGUF value type, arrays of several element types, nested arrays
(2 and 3 levels), general.alignment = 64, and F32 / F16 / Q8_0 / I32 tensors. gguf_read_test.cpp
checks exactly these values.
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGUFValueType as VT


def main():
    path = os.path.join(sys.argv[1], "gguf_py_fixture.gguf")
    w = gguf.GGUFWriter(path, arch="fixture")  # writes general.architecture = "fixture"
    w.data_alignment = 64
    w.add_key_value("general.alignment", 64, VT.UINT32)
    w.add_key_value("v.u8", 200, VT.UINT8)
    w.add_key_value("v.i8", -100, VT.INT8)
    w.add_key_value("v.u16", 60000, VT.UINT16)
    w.add_key_value("v.i16", -30000, VT.INT16)
    w.add_key_value("v.u32", 4000000000, VT.UINT32)
    w.add_key_value("v.i32", -2000000000, VT.INT32)
    w.add_key_value("v.u64", 2**63 + 5, VT.UINT64)
    w.add_key_value("v.i64", -(2**62), VT.INT64)
    w.add_key_value("v.f32", 1.5, VT.FLOAT32)
    w.add_key_value("v.f64", -2.25e-300, VT.FLOAT64)
    w.add_key_value("v.bool", True, VT.BOOL)
    w.add_key_value("v.str", "h\u00e9llo w\u00f6rld", VT.STRING)
    w.add_key_value("v.empty_str", "", VT.STRING)
    w.add_key_value("a.u8", [1, 2, 255], VT.ARRAY, VT.UINT8)
    w.add_key_value("a.i16", [-1, 2], VT.ARRAY, VT.INT16)
    w.add_key_value("a.u64", [2**64 - 1, 7], VT.ARRAY, VT.UINT64)
    w.add_key_value("a.f32", [0.25, -3.0], VT.ARRAY, VT.FLOAT32)
    w.add_key_value("a.f64", [0.5, -1e10], VT.ARRAY, VT.FLOAT64)
    w.add_key_value("a.bool", [True, False], VT.ARRAY, VT.BOOL)
    w.add_key_value("a.str", ["a", "", "ccc"], VT.ARRAY, VT.STRING)
    w.add_key_value("a.nested", [[1, 2], [3], [4, 5, 6]], VT.ARRAY)
    w.add_key_value("a.nested3", [[["x"], ["y", "z"]], [["w"]]], VT.ARRAY)
    w.add_tensor("t.f32", np.arange(12, dtype=np.float32).reshape(3, 4))
    w.add_tensor("t.f16", np.array([1, -2, 0.5, 3, 4, 5, 6, 7], dtype=np.float16))
    q8 = np.arange(68, dtype=np.uint8).reshape(2, 34)  # two Q8_0 blocks of 34 bytes
    w.add_tensor("t.q8_0", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("t.i32", np.array([-5, 0, 5, 2**31 - 1, -2**31], dtype=np.int32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
