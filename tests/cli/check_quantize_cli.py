#!/usr/bin/env python3
"""`oxillama quantize` end to end against llama-quantize (golden/quantize/expected.json): every
output FTYPE (no importance matrix) and FTYPE-imat (--imatrix synth-small.imatrix.gguf) of
synth-small-f32.gguf must have, read back from the file the command wrote,
- general.file_type = llama.cpp's LLAMA_FTYPE number for the ftype (include/llama.h), as a u32;
- the tensors in llama-quantize's order (llama_model_loader's weights_map: the layer number of
  "blk.N.", -1 outside a block, then the name);
- each tensor's type, shape and data sha256 as llama-quantize wrote them.
The golden records no whole-file digest for these outputs (the metadata holds the imatrix file
name), so the file is compared part by part. An empty expectation fails; exit status checked.

usage: check_quantize_cli.py OXILLAMA GOLDEN_DIR WORK_DIR
"""
import hashlib
import json
import os
import re
import struct
import subprocess
import sys

LLAMA_FTYPE = {"F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10, "Q3_K_S": 11,
               "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18,
               "Q2_K_S": 21, "BF16": 32}
# ggml type id: (name, block size, bytes per block) -- ggml/src/ggml.c type_traits
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
              7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
              12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 30: ("BF16", 1, 2)}
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf(path):
    """(kv: {key: (type, value)}, tensors: [(name, type, ne, data bytes)] in file order)."""
    with open(path, "rb") as f:
        buf = f.read()
    off = 0

    def take(fmt):
        nonlocal off
        v = struct.unpack_from("<" + fmt, buf, off)
        off += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal off
        n = take("Q")
        s = buf[off:off + n].decode("utf-8")
        off += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            at, n = take("I"), take("Q")
            return [value(at) for _ in range(n)]
        return take(SCALAR[t])

    if buf[:4] != b"GGUF" or struct.unpack_from("<I", buf, 4)[0] != 3:
        raise ValueError("%s: not a GGUF v3 file" % path)
    off = 8
    n_tensors, n_kv = take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        t = take("I")
        kv[k] = (t, value(t))
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = take("I")
        ne = [take("Q") for _ in range(nd)]
        infos.append((name, take("I"), ne, take("Q")))
    align = kv.get("general.alignment", (4, 32))[1]
    data = (off + align - 1) // align * align
    tensors = []
    for name, t, ne, o in infos:
        tname, blck, size = GGML_TYPES[t]
        n = 1
        for d in ne:
            n *= d
        tensors.append((name, tname, ne, buf[data + o:data + o + n // blck * size]))
    return kv, tensors


def llama_order(name):
    m = re.match(r"blk\.(\d+)\.", name)
    return (int(m.group(1)) if m else -1, name)


def main():
    oxl, golden, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    q = os.path.join(golden, "quantize")
    with open(os.path.join(q, "expected.json")) as f:
        expected = json.load(f)
    if not expected:
        print("FAIL  expected.json lists no output")
        return 1
    fails = n_tensors = 0
    for key, want in sorted(expected.items()):
        ftype = key[:-5] if key.endswith("-imat") else key
        out = os.path.join(work, key + ".gguf")
        args = [oxl, "quantize"]
        if key.endswith("-imat"):
            args += ["--imatrix", os.path.join(q, "synth-small.imatrix.gguf")]
        args += [os.path.join(q, "synth-small-f32.gguf"), out, ftype, "2"]
        r = subprocess.run(args, capture_output=True)
        problems = []
        if r.returncode != 0:
            problems.append("exit status %d: %s" % (r.returncode, r.stderr.decode(errors="replace").strip()))
        else:
            kv, tensors = read_gguf(out)
            ft = kv.get("general.file_type")
            if ft != (4, LLAMA_FTYPE[ftype]):
                problems.append("general.file_type %r, llama.cpp writes u32 %d" % (ft, LLAMA_FTYPE[ftype]))
            names = [t[0] for t in tensors]
            order = sorted(want, key=llama_order)
            if names != order:
                problems.append("tensor order %s, llama-quantize's %s" % (names, order))
            for name, tname, ne, data in tensors:
                if name not in want:
                    problems.append("%s: not in llama-quantize's output" % name)
                    continue
                wt, wne, wsha = want[name]
                sha = hashlib.sha256(data).hexdigest()
                if tname != wt or ne != wne or sha != wsha:
                    problems.append("%s: %s %s %s, llama-quantize's %s %s %s" % (name, tname, ne, sha[:16], wt, wne,
                                                                             wsha[:16]))
            n_tensors += len(tensors)
            os.remove(out)
        fails += bool(problems)
        print("%s  %s%s" % ("FAIL" if problems else "PASS", key, "".join("\n  " + p for p in problems)))
    print("# checked %d outputs (%d tensors): %d equal llama-quantize's" % (len(expected), n_tensors,
                                                                         len(expected) - fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
