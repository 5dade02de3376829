#!/usr/bin/env python3
"""Rewrites an F32 model with separate attention projections (blk.N.attn_q/k/v.weight, no biases)
into one with the fused blk.N.attn_qkv.weight that llama.cpp's create_tensor_qkv accepts instead:
Q, K and V rows stacked in that order (ne1 = q + k + v rows), every other tensor and key unchanged.
Standard library only (the reader of split_gguf.py).

usage: fuse_qkv.py INPUT.gguf OUTPUT.gguf
"""
import os
import struct
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from split_gguf import Reader, gstr, pad  # noqa: E402


def fuse(path, out):
    data = open(path, "rb").read()
    r = Reader(data)
    assert r.take("<4s") == b"GGUF"
    version = r.take("<I")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    start = r.pos
    for _ in range(n_kv):
        r.string()
        r.value(r.take("<I"))
    kvs = data[start:r.pos]
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        ne = [r.take("<Q") for _ in range(r.take("<I"))]
        ttype, offset = r.take("<I"), r.take("<Q")
        tensors.append((name, ne, ttype, offset))
    data_start = pad(r.pos)

    def raw(ne, ttype, offset):
        assert ttype == 0, "F32 only"
        n = 4
        for d in ne:
            n *= d
        return data[data_start + offset:data_start + offset + n]

    by_name = {t[0]: t for t in tensors}
    outs = []  # (name, ne, bytes)
    for name, ne, ttype, offset in tensors:
        if name.endswith(b".attn_q.weight"):
            blk = name[:-len(b"attn_q.weight")]
            parts = [by_name[blk + p] for p in (b"attn_q.weight", b"attn_k.weight", b"attn_v.weight")]
            rows = sum(p[1][1] for p in parts)
            outs.append((blk + b"attn_qkv.weight", [ne[0], rows], b"".join(raw(p[1], p[2], p[3]) for p in parts)))
        elif name.endswith(b".attn_k.weight") or name.endswith(b".attn_v.weight"):
            continue
        else:
            outs.append((name, ne, raw(ne, ttype, offset)))
    infos, body = b"", b""
    for name, ne, b in outs:
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", 0, len(body))
        body += b + bytes(pad(len(b)) - len(b))
    meta = b"GGUF" + struct.pack("<IQQ", version, len(outs), n_kv) + kvs + infos
    meta += bytes(pad(len(meta)) - len(meta))
    with open(out, "wb") as f:
        f.write(meta + body)


if __name__ == "__main__":
    fuse(sys.argv[1], sys.argv[2])
