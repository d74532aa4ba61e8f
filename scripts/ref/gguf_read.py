"""A small, independent GGUF reader for the reference scripts (F32 / F16 / BF16 tensors).

Usage as a module:
    g = GgufReader("model.gguf")
    g.meta["qwen2.embedding_length"]      # metadata values (python ints/floats/str/lists)
    g.tensor("token_embd.weight")          # numpy float32 array, shape in numpy order
                                           # (ggml shape [ne0, ne1] -> numpy (ne1, ne0))
Written from the GGUF v3 specification (ggml/docs/gguf.md); shares no code with ignis or llama.cpp.
"""
import struct
import sys

import numpy as np

# value type ids -> struct format (scalars)
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# tensor type ids -> (numpy dtype, elements per block, bytes per block)
_TENSOR = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 30: ("bf16", 1, 2)}


class GgufError(Exception):
    pass


class GgufReader:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.buf = f.read()
        self.pos = 0
        magic = self.buf[:4]
        if magic != b"GGUF":
            raise GgufError(f"{path}: not a GGUF file")
        self.pos = 4
        self.version = self._u("<I")
        if self.version not in (2, 3):
            raise GgufError(f"{path}: unsupported GGUF version {self.version}")
        n_tensors = self._u("<Q")
        n_kv = self._u("<Q")
        self.meta = {}
        for _ in range(n_kv):
            key = self._str()
            vt = self._u("<I")
            self.meta[key] = self._value(vt)
        self.infos = {}
        order = []
        for _ in range(n_tensors):
            name = self._str()
            nd = self._u("<I")
            shape = [self._u("<Q") for _ in range(nd)]
            ttype = self._u("<I")
            off = self._u("<Q")
            self.infos[name] = (shape, ttype, off)
            order.append(name)
        self.names = order
        align = int(self.meta.get("general.alignment", 32))
        self.data_start = (self.pos + align - 1) // align * align

    def _u(self, fmt):
        v = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def _str(self):
        n = self._u("<Q")
        s = self.buf[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def _value(self, vt):
        if vt in _SCALAR:
            return self._u(_SCALAR[vt])
        if vt == _STRING:
            return self._str()
        if vt == _ARRAY:
            et = self._u("<I")
            n = self._u("<Q")
            return [self._value(et) for _ in range(n)]
        raise GgufError(f"{self.path}: unknown metadata value type {vt}")

    def tensor(self, name):
        if name not in self.infos:
            raise GgufError(f"{self.path}: tensor {name} is missing")
        shape, ttype, off = self.infos[name]
        if ttype not in _TENSOR:
            raise GgufError(f"{self.path}: tensor {name} has type {ttype}; this reader handles F32/F16/BF16 only")
        kind, _, nbytes = _TENSOR[ttype]
        n = 1
        for d in shape:
            n *= d
        start = self.data_start + off
        raw = self.buf[start:start + n * nbytes]
        if kind == "f32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif kind == "f16":
            a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        else:  # bf16: the high half of an f32
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        return a.reshape(list(reversed(shape)))

    def has(self, name):
        return name in self.infos


if __name__ == "__main__":
    g = GgufReader(sys.argv[1])
    for k, v in g.meta.items():
        if isinstance(v, list) and len(v) > 8:
            v = f"[{len(v)} items] {v[:4]}..."
        print(f"{k} = {v}")
    for n in g.names:
        print(n, g.infos[n][0], "type", g.infos[n][1])
