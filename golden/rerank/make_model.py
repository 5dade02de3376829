#!/usr/bin/env python3
"""Writes reranker.gguf: golden/arch/bert.gguf turned into a tiny reranker, as llama.cpp loads one
(llama_model_bert with cls / cls.output tensors, bert.pooling_type 4 = rank): every key and tensor
of bert.gguf unchanged except bert.pooling_type (4 instead of 2) and tokenizer.ggml.add_eos_token
(true, so a query/document pair is BOS query EOS document EOS), plus the classification head with
random F32 weights drawn as golden/arch's (std 1/sqrt(fan_in) matrices, 0.05*N(0,1) biases) from
Python's random.Random(SEED):
  cls.weight (64, 64), cls.bias (64), cls.output.weight (64, 1), cls.output.bias (1).
Standard library only.
usage: make_model.py ../arch/bert.gguf reranker.gguf"""
import math
import random
import struct
import sys

SEED = 20261201
ALIGN = 32


def gstr(b):
    return struct.pack("<Q", len(b)) + b


def pad(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def main():
    src, out = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    scalar = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string(p):
        n = struct.unpack_from("<Q", data, p)[0]
        return data[p + 8:p + 8 + n], p + 8 + n

    def skip(t, p):
        if t == 8:
            return string(p)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, p)
            p += 12
            for _ in range(n):
                p = skip(et, p)
            return p
        return p + scalar[t]

    kvs, seen = [], set()
    for _ in range(n_kv):
        start = pos
        key, pos = string(pos)
        t = struct.unpack_from("<I", data, pos)[0]
        pos = skip(t, pos + 4)
        seen.add(key)
        if key == b"bert.pooling_type":
            kvs.append(gstr(key) + struct.pack("<II", 4, 4))
        elif key == b"tokenizer.ggml.add_eos_token":
            kvs.append(gstr(key) + struct.pack("<I?", 7, True))
        else:
            kvs.append(data[start:pos])
    assert b"bert.pooling_type" in seen
    if b"tokenizer.ggml.add_eos_token" not in seen:
        kvs.append(gstr(b"tokenizer.ggml.add_eos_token") + struct.pack("<I?", 7, True))
    tensors = []
    for _ in range(n_tensors):
        name, pos = string(pos)
        nd = struct.unpack_from("<I", data, pos)[0]
        ne = list(struct.unpack_from("<%dQ" % nd, data, pos + 4))
        pos += 4 + 8 * nd
        ttype, off = struct.unpack_from("<IQ", data, pos)
        pos += 12
        assert ttype == 0, "F32 tensors only"
        tensors.append((name, ne, off))
    base = pad(pos)
    blobs = []
    for name, ne, off in tensors:
        n = 1
        for d in ne:
            n *= d
        blobs.append((name, ne, data[base + off:base + off + 4 * n]))
    rng = random.Random(SEED)
    E = 64

    def mat(ne0, ne1):
        s = 1.0 / math.sqrt(ne0)
        return struct.pack("<%df" % (ne0 * ne1), *[rng.gauss(0.0, 1.0) * s for _ in range(ne0 * ne1)])

    def bias(n):
        return struct.pack("<%df" % n, *[0.05 * rng.gauss(0.0, 1.0) for _ in range(n)])

    blobs += [(b"cls.weight", [E, E], mat(E, E)), (b"cls.bias", [E], bias(E)),
              (b"cls.output.weight", [E, 1], mat(E, 1)), (b"cls.output.bias", [1], bias(1))]
    infos, body = b"", b""
    for name, ne, blob in blobs:
        while len(ne) > 1 and ne[-1] == 1:
            ne = ne[:-1]
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", 0, len(body))
        body += blob + bytes(pad(len(blob)) - len(blob))
    meta = b"GGUF" + struct.pack("<IQQ", 3, len(blobs), len(kvs)) + b"".join(kvs) + infos
    meta += bytes(pad(len(meta)) - len(meta))
    with open(out, "wb") as f:
        f.write(meta + body)


if __name__ == "__main__":
    main()
