#!/usr/bin/env python3
"""`oxillama quantize` end to end against llama-quantize (golden/quantize/expected.json, and the
IQ_KEYS outputs of expected-iq.json): every output FTYPE (no importance matrix) and FTYPE-imat (--imatrix synth-small.imatrix.gguf) of
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
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import GGML_TYPES, Gguf  # noqa: E402

LLAMA_FTYPE = {"F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10, "Q3_K_S": 11,
               "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18,
               "Q2_K_S": 21, "BF16": 32, "IQ4_NL": 25}
# The outputs of expected-iq.json (the I-quant ftypes) for the ftypes oxillama writes.
IQ_KEYS = ("IQ4_NL", "IQ4_NL-imat")
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
    with open(os.path.join(q, "expected-iq.json")) as f:
        expected_iq = json.load(f)
    for key in IQ_KEYS:
        if key not in expected_iq:
            print("FAIL  expected-iq.json has no output %s" % key)
            return 1
        expected[key] = expected_iq[key]
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
            g = Gguf(out)
            tensors = [(name, GGML_TYPES[t][0], ne, data) for name, t, ne, data in g.tensors]
            ft = g.kv.get("general.file_type")
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
