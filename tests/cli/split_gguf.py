#!/usr/bin/env python3
"""Writes the parts of a split model as llama.cpp's `llama-gguf-split --split --split-max-tensors N`
lays them out (tools/gguf-split, llama.cpp d32676d), for models too large to keep split in golden/:
part 1 holds every key of the input then split.no (uint16), split.tensors.count (int32) and
split.count (uint16); the other parts hold those three keys only; each part N tensors
(the last the rest) in the input's order, data padded to 32 bytes. tests/cli/check_split.py checks
that this writes golden/split's llama-gguf-split files byte for byte.
Standard library only; the tensor types of the models it is used on (F32, F16, Q4_0, Q8_0, BF16).

With --no-tensor-first-split, as llama-gguf-split's option: part 1 holds the metadata and no tensor.

usage: split_gguf.py [--no-tensor-first-split] INPUT.gguf OUTPUT_PREFIX MAX_TENSORS
"""
import struct
import sys

ALIGN = 32
BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 8: (32, 34), 30: (1, 2)}  # ggml type: (block, bytes)
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def pad(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Reader:
    def __init__(self, b):
        self.b, self.pos = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("<Q")
        s = self.b[self.pos:self.pos + n]
        self.pos += n
        return s

    def value(self, t):
        if t == 8:
            self.string()
        elif t == 9:
            et, n = self.take("<I"), self.take("<Q")
            for _ in range(n):
                self.value(et)
        else:
            self.pos += SCALAR[t]


def gstr(b):
    return struct.pack("<Q", len(b)) + b


def split(path, prefix, max_tensors, no_tensor_first=False):
    data = open(path, "rb").read()
    r = Reader(data)
    assert r.take("<4s") == b"GGUF"
    r.take("<I")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    kvs = []
    for _ in range(n_kv):
        start = r.pos
        key = r.string()
        r.value(r.take("<I"))
        assert not key.startswith(b"split."), "already split"
        kvs.append(data[start:r.pos])
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        ne = [r.take("<Q") for _ in range(n_dims)]
        ttype, offset = r.take("<I"), r.take("<Q")
        tensors.append((name, ne, ttype, offset))
    data_start = pad(r.pos)
    groups = ([[]] if no_tensor_first else []) + [tensors[i:i + max_tensors] for i in range(0, n_tensors, max_tensors)]
    for no, group in enumerate(groups):
        keys = (kvs if no == 0 else []) + [
            gstr(b"split.no") + struct.pack("<IH", 2, no),
            gstr(b"split.tensors.count") + struct.pack("<Ii", 5, n_tensors),
            gstr(b"split.count") + struct.pack("<IH", 2, len(groups)),  # set last: ggml moves a reset key to the end
        ]
        infos, body = b"", b""
        for name, ne, ttype, offset in group:
            while len(ne) > 1 and ne[-1] == 1:  # ggml_n_dims: trailing dimensions of 1 are not written
                ne = ne[:-1]
            blck, size = BLOCK[ttype]
            n_el = 1
            for d in ne[1:]:
                n_el *= d
            nbytes = ne[0] // blck * size * n_el
            infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
            infos += struct.pack("<IQ", ttype, len(body))
            body += data[data_start + offset:data_start + offset + nbytes]
            body += bytes(pad(nbytes) - nbytes)
        meta = b"GGUF" + struct.pack("<IQQ", 3, len(group), len(keys)) + b"".join(keys) + infos
        meta += bytes(pad(len(meta)) - len(meta))
        with open("%s-%05d-of-%05d.gguf" % (prefix, no + 1, len(groups)), "wb") as f:
            f.write(meta + body)


if __name__ == "__main__":
    args = sys.argv[1:]
    first = "--no-tensor-first-split" in args
    args = [a for a in args if a != "--no-tensor-first-split"]
    split(args[0], args[1], int(args[2]), first)
