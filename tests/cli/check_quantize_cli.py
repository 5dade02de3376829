#!/usr/bin/env python3
"""`oxillama quantize` end to end against llama-quantize (golden/quantize/expected.json, and the
outputs of expected-iq.json for the ftypes oxillama writes): every output FTYPE (no importance matrix) and FTYPE-imat (--imatrix synth-small.imatrix.gguf) of
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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gen import spec  # noqa: E402


def llama_ftypes(golden):
    """{llama-quantize name: llama_ftype number} from golden/quantize/llama_ftype.tsv (llama.h)."""
    out = {}
    with open(os.path.join(golden, "quantize", "llama_ftype.tsv")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, number = line.split()
                out[name] = int(number)
    return out


# The ftypes oxillama writes (gen/spec.py FTYPES, quantize=True): their outputs in expected-iq.json
# (the I-quant, ternary and low-bit ftypes) are checked with those of expected.json.
WRITTEN = {ft.name for ft in spec.FTYPES if ft.quantize}

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
    for key, want in expected_iq.items():
        if key.split("-imat")[0] in WRITTEN:
            expected[key] = want
    llama_ftype = llama_ftypes(golden)
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
            if ft != (4, llama_ftype[ftype]):
                problems.append("general.file_type %r, llama.cpp writes u32 %d" % (ft, llama_ftype[ftype]))
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
