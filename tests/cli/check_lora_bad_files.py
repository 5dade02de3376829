#!/usr/bin/env python3
"""Bad LoRA adapters and control vectors are refused with an error naming the key or tensor at
fault: `oxillama run` exits 1 (not a crash) and prints the expected message. The files are written
here (standard library GGUF writer) for golden/arch/llama.gguf (n_embd 64, 2 layers).

usage: check_lora_bad_files.py OXILLAMA MODEL WORKDIR"""
import os
import struct
import subprocess
import sys

F32, F16 = 0, 1


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, value):
    if isinstance(value, str):
        return s(key) + struct.pack("<I", 8) + s(value)
    if isinstance(value, float):
        return s(key) + struct.pack("<If", 6, value)
    if isinstance(value, list):  # uint32 array
        return s(key) + struct.pack("<IIQ", 9, 4, len(value)) + b"".join(struct.pack("<I", v) for v in value)
    return s(key) + struct.pack("<II", 4, value)


def gguf(path, kvs, tensors, cut=None):
    """tensors: (name, ne list, type); data zero-filled f32 or f16 (values 0.01)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    head += b"".join(kv(k, v) for k, v in kvs)
    data = b""
    infos = b""
    for name, ne, t in tensors:
        n = 1
        for d in ne:
            n *= d
        blob = struct.pack("<%df" % n, *([0.01] * n)) if t == F32 else struct.pack("<%de" % n, *([0.01] * n))
        infos += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", t, len(data))
        data += blob + b"\0" * ((32 - len(blob) % 32) % 32)
    b = head + infos
    b += b"\0" * ((32 - len(b) % 32) % 32) + data
    with open(path, "wb") as f:
        f.write(b[:cut] if cut else b)


LORA = [("general.type", "adapter"), ("general.architecture", "llama"), ("adapter.type", "lora"),
        ("adapter.lora.alpha", 8.0)]
Q = "blk.0.attn_q.weight"
GOOD = [(Q + ".lora_a", [64, 4], F32), (Q + ".lora_b", [4, 64], F32)]


def meta(**over):
    return [(k, over.get(k.replace(".", "_"), v)) for k, v in LORA]


CASES = [
    ("lora", "type.gguf", meta(general_type="model"), GOOD, "general.type must be 'adapter', is 'model'"),
    ("lora", "arch.gguf", meta(general_architecture="qwen3"), GOOD,
     "general.architecture 'qwen3' is not the model's 'llama'"),
    ("lora", "atype.gguf", meta(adapter_type="ia3"), GOOD, "adapter.type must be 'lora', is 'ia3'"),
    ("lora", "alpha.gguf", meta(adapter_lora_alpha="8"), GOOD, "adapter.lora.alpha must be a float32, is string"),
    ("lora", "alora.gguf", LORA + [("adapter.alora.invocation_tokens", [1, 2])], GOOD,
     "adapter.alora.invocation_tokens: activated LoRA is not supported"),
    ("lora", "suffix.gguf", LORA, GOOD + [(Q + ".lora_c", [4], F32)],
     "LoRA tensor 'blk.0.attn_q.weight.lora_c' has an unexpected suffix"),
    ("lora", "no-b.gguf", LORA, GOOD[:1], "LoRA tensor pair for 'blk.0.attn_q.weight' is missing its lora_b"),
    ("lora", "no-a.gguf", LORA, GOOD[1:], "LoRA tensor pair for 'blk.0.attn_q.weight' is missing its lora_a"),
    ("lora", "absent.gguf", LORA, [("blk.7.attn_q.weight.lora_a", [64, 4], F32),
                                   ("blk.7.attn_q.weight.lora_b", [4, 64], F32)],
     "LoRA tensor 'blk.7.attn_q.weight' does not exist in the base model"),
    ("lora", "shape.gguf", LORA, [(Q + ".lora_a", [32, 4], F32), (Q + ".lora_b", [4, 64], F32)],
     r"LoRA tensor 'blk.0.attn_q.weight' has shape a (32, 4), b (4, 64); the base model's is (64, 64)"),
    ("lora", "rank.gguf", LORA, [(Q + ".lora_a", [64, 4], F32), (Q + ".lora_b", [8, 64], F32)],
     "LoRA tensor 'blk.0.attn_q.weight': lora_a has rank 4, lora_b 8"),
    ("lora", "3d.gguf", LORA, [(Q + ".lora_a", [64, 4, 2], F32), (Q + ".lora_b", [4, 64], F32)],
     "tensor 'blk.0.attn_q.weight.lora_a' must be 2-D"),
    ("lora", "embd.gguf", LORA, [("token_embd.weight.lora_a", [512, 4], F32),
                                 ("token_embd.weight.lora_b", [4, 64], F32)],
     "LoRA tensor 'token_embd.weight': adapting the token embedding is not supported"),
    ("lora", "cut.gguf", LORA, GOOD, "cut.gguf", 200),
    ("cvec", "empty.gguf", [("general.architecture", "controlvector")], [], "no direction tensors"),
    ("cvec", "zero.gguf", [], [("direction.0", [64], F32)], "tensor 'direction.0': layer 0 has no direction"),
    ("cvec", "name.gguf", [], [("dir.1", [64], F32)], "tensor 'dir.1' is not direction.<layer>"),
    ("cvec", "f16.gguf", [], [("direction.1", [64], F16)], "tensor 'direction.1' must be f32"),
    ("cvec", "2d.gguf", [], [("direction.1", [64, 2], F32)], "tensor 'direction.1' must be 1-D"),
    ("cvec", "lens.gguf", [], [("direction.1", [64], F32), ("direction.2", [32], F32)],
     "tensor 'direction.2' has 32 values, the others 64"),
    ("cvec", "n_embd.gguf", [], [("direction.1", [32], F32)], "n_embd 32 does not match the model's 64"),
    ("cvec", "no-values.gguf", [], [("direction.1", [0], F32)], "tensor 'direction.1' has 0 values"),
    ("cvec", "far-layer.gguf", [], [("direction.900000", [64], F32)],
     "tensor 'direction.900000': 900000 layers of 64 values is more than oxillama takes"),
]


def main():
    bin_, model, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    fails = 0
    for case in CASES:
        kind, name, kvs, tensors, want = case[:5]
        path = os.path.join(work, kind + "-" + name)
        gguf(path, kvs, tensors, case[5] if len(case) > 5 else None)
        opt = "--lora" if kind == "lora" else "--control-vector"
        r = subprocess.run([bin_, "run", "-m", model, opt, path, "-p", "Once", "-n", "1", "-t", "1"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        ok = r.returncode == 1 and want in r.stderr
        fails += not ok
        print("%s  %s %s: exit %d, %s" % ("PASS" if ok else "FAIL", opt, name, r.returncode,
                                        r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "no message"))
    print("%d passed, %d failed" % (len(CASES) - fails, fails))
    return 1 if fails else 0


sys.exit(main())
