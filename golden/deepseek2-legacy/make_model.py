#!/usr/bin/env python3
"""Writes deepseek2-legacy.gguf: ../arch/deepseek2.gguf as DeepSeek-V2 files were converted before
llama.cpp split the K/V up-projection: each layer's attn_k_b (ne {nope, kv_lora_rank, n_head}) and
attn_v_b (ne {kv_lora_rank, v_head, n_head}) joined into the merged attn_kv_b (ne {kv_lora_rank,
n_head * (nope + v_head)}: for head h, rows h*(nope+v_head) + i = column i of attn_k_b's head h
(i < nope), then the rows of attn_v_b's head h), and the keys of those files: no
attention.key_length_mla / value_length_mla, attention.key_length = nope + rope (24),
attention.value_length = v_head (16), attention.head_count_kv = head_count (4). Every other key
and tensor is copied unchanged, in order (attn_kv_b where attn_k_b was). Standard library only.
usage: make_model.py ../arch/deepseek2.gguf deepseek2-legacy.gguf"""
import struct
import sys

ALIGN = 32
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gstr(b):
    return struct.pack("<Q", len(b)) + b


def pad(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def main():
    data = open(sys.argv[1], "rb").read()
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    pos = 24

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
        return p + SCALAR[t]

    kvs, meta = [], {}
    for _ in range(n_kv):
        start = pos
        key, pos = string(pos)
        t = struct.unpack_from("<I", data, pos)[0]
        vpos = pos + 4
        pos = skip(t, vpos)
        if t == 4:
            meta[key] = struct.unpack_from("<I", data, vpos)[0]
        kvs.append((key, data[start:pos]))
    H = meta[b"deepseek2.attention.head_count"]
    C = meta[b"deepseek2.attention.kv_lora_rank"]
    R = meta[b"deepseek2.rope.dimension_count"]
    K = meta[b"deepseek2.attention.key_length_mla"]
    V = meta[b"deepseek2.attention.value_length_mla"]
    nope = K - R
    u32 = {b"deepseek2.attention.key_length": K, b"deepseek2.attention.value_length": V,
           b"deepseek2.attention.head_count_kv": H}
    out_kvs = []
    for key, raw in kvs:
        if key in (b"deepseek2.attention.key_length_mla", b"deepseek2.attention.value_length_mla"):
            continue
        out_kvs.append(gstr(key) + struct.pack("<II", 4, u32[key]) if key in u32 else raw)
    infos = []
    for _ in range(n_tensors):
        name, pos = string(pos)
        nd = struct.unpack_from("<I", data, pos)[0]
        ne = list(struct.unpack_from("<%dQ" % nd, data, pos + 4))
        pos += 4 + 8 * nd
        ttype, off = struct.unpack_from("<IQ", data, pos)
        pos += 12
        assert ttype == 0, "F32 tensors only"
        infos.append((name, ne, off))
    base = pad(pos)
    tensors = {}
    order = []
    for name, ne, off in infos:
        n = 1
        for d in ne:
            n *= d
        tensors[name] = (ne, list(struct.unpack_from("<%df" % n, data, base + off)))
        order.append(name)
    blobs = []
    for name in order:
        if name.endswith(b".attn_v_b.weight"):
            continue
        if name.endswith(b".attn_k_b.weight"):
            kb = tensors[name][1]  # [h][c][i] at (h*C + c)*nope + i
            vb = tensors[name.replace(b"attn_k_b", b"attn_v_b")][1]  # [h][j][c] at (h*V + j)*C + c
            rows = []
            for h in range(H):
                for i in range(nope):
                    rows += [kb[(h * C + c) * nope + i] for c in range(C)]
                for j in range(V):
                    rows += vb[(h * V + j) * C:(h * V + j + 1) * C]
            blobs.append((name.replace(b"attn_k_b", b"attn_kv_b"), [C, H * (nope + V)], rows))
        else:
            blobs.append((name, tensors[name][0], tensors[name][1]))
    info, body = b"", b""
    for name, ne, vals in blobs:
        blob = struct.pack("<%df" % len(vals), *vals)
        info += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        info += struct.pack("<IQ", 0, len(body))
        body += blob + bytes(pad(len(blob)) - len(blob))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(blobs), len(out_kvs)) + b"".join(out_kvs) + info
    head += bytes(pad(len(head)) - len(head))
    with open(sys.argv[2], "wb") as f:
        f.write(head + body)


if __name__ == "__main__":
    main()
