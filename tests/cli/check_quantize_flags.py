#!/usr/bin/env python3
"""`oxillama quantize` with llama-quantize's --tensor-type, --leave-output-tensor and --override-kv
against llama-quantize's outputs (golden/quantize/expected-flags.json, made by
make_quantize_flags_golden.py): for each case, `oxillama quantize ARGS synth-small-f32.gguf OUT
FTYPE 2` must exit 0 and write
- the tensors in llama-quantize's order with each one's type, shape and data sha256,
- the metadata keys --override-kv names with llama-quantize's value type and value,
- the whole file byte for byte (its sha256).
Then the progress and summary lines on stderr of the "tensor-type" case must be llama-quantize's
(golden/quantize/expected-flags.stderr: its lines with the C++ function-name prefixes removed),
--quiet must leave stderr empty (and the file unchanged), and malformed option values and
unsupported types or ftypes must fail with exit status 1, a message naming the value, and no
output file. An empty expectation fails.

usage: check_quantize_flags.py OXILLAMA GOLDEN_DIR WORK_DIR
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

# (options, FTYPE, substrings the error message must hold)
ERRORS = [
    (["--tensor-type", "attn_v"], "Q4_0", ["--tensor-type", "malformed", "'attn_v'"]),
    (["--tensor-type", "=q8_0"], "Q4_0", ["--tensor-type", "missing tensor name", "'=q8_0'"]),
    (["--tensor-type", "attn_v="], "Q4_0", ["--tensor-type", "missing type", "'attn_v='"]),
    (["--tensor-type", "attn_v=q9_9"], "Q4_0", ["--tensor-type", "unknown ggml type 'q9_9'", "supported:", "q4_K"]),
    (["--tensor-type", "attn_v=i32"], "Q4_0", ["--tensor-type", "unsupported ggml type 'i32'", "supported:"]),
    (["--tensor-type", "attn_v(=q8_0"], "Q4_0", ["--tensor-type", "invalid regex 'attn_v('"]),
    (["--output-tensor-type", "q9_9"], "Q4_0", ["--output-tensor-type", "'q9_9'", "supported:"]),
    (["--token-embedding-type", "i8"], "Q4_0", ["--token-embedding-type", "'i8'", "supported:"]),
    (["--override-kv", "general.name"], "Q4_0", ["--override-kv", "malformed", "'general.name'"]),
    (["--override-kv", "=str:x"], "Q4_0", ["--override-kv", "malformed", "'=str:x'"]),
    (["--override-kv", "general.name=blob:x"], "Q4_0", ["--override-kv", "invalid type", "'general.name=blob:x'"]),
    (["--override-kv", "a.b=int:12x"], "Q4_0", ["--override-kv", "invalid int", "'a.b=int:12x'"]),
    (["--override-kv", "a.b=float:"], "Q4_0", ["--override-kv", "invalid float", "'a.b=float:'"]),
    (["--override-kv", "a.b=bool:yes"], "Q4_0", ["--override-kv", "invalid boolean", "'a.b=bool:yes'"]),
    (["--override-kv", "a.b=str:" + "x" * 128], "Q4_0", ["--override-kv", "cannot exceed 127"]),
    ([], "Q9_Z", ["unsupported ftype 'Q9_Z'", "supported:", "Q4_K_M", "Q8_0"]),
]


def llama_order(name):
    """llama_model_loader's weights_map order: the layer of "blk.N.", -1 outside a block, the name."""
    m = re.match(r"blk\.(\d+)\.", name)
    return (int(m.group(1)) if m else -1, name)


def run(oxl, args):
    r = subprocess.run([oxl, "quantize"] + args, capture_output=True)
    return r.returncode, r.stderr.decode(errors="replace")


def sha_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_output(out, want):
    problems = []
    g = Gguf(out)
    tensors = [(name, GGML_TYPES[t][0], ne, hashlib.sha256(data).hexdigest()) for name, t, ne, data in g.tensors]
    if not want["tensors"]:
        problems.append("the golden lists no tensor")
    order = sorted(want["tensors"], key=llama_order)
    if [t[0] for t in tensors] != order:
        problems.append("tensor order %s, llama-quantize's %s" % ([t[0] for t in tensors], order))
    for name, tname, ne, sha in tensors:
        if name not in want["tensors"]:
            problems.append("%s: not in llama-quantize's output" % name)
            continue
        wt, wne, wsha = want["tensors"][name]
        if (tname, ne, sha) != (wt, wne, wsha):
            problems.append("%s: %s %s %s, llama-quantize's %s %s %s" % (name, tname, ne, sha[:16], wt, wne, wsha[:16]))
    for key, (vtype, value) in want["kv"].items():
        if list(g.kv.get(key, (None, None))) != [vtype, value]:
            problems.append("key %s: %r, llama-quantize's %r" % (key, g.kv.get(key), (vtype, value)))
    sha = sha_file(out)
    if sha != want["file_sha256"]:
        problems.append("file sha256 %s, llama-quantize's %s" % (sha[:16], want["file_sha256"][:16]))
    return problems


def main():
    oxl, golden, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    q = os.path.join(golden, "quantize")
    src = os.path.join(q, "synth-small-f32.gguf")
    with open(os.path.join(q, "expected-flags.json")) as f:
        expected = json.load(f)
    with open(os.path.join(q, "expected-flags.stderr")) as f:
        want_stderr = f.read()
    if not expected or not want_stderr:
        print("FAIL  expected-flags.json or expected-flags.stderr is empty")
        return 1
    fails = 0
    for name, want in sorted(expected.items()):
        out = os.path.join(work, name + ".gguf")
        rc, err = run(oxl, want["args"] + [src, out, want["ftype"], "2"])
        problems = ["exit status %d: %s" % (rc, err.strip()[-400:])] if rc != 0 else check_output(out, want)
        if rc == 0 and name == "tensor-type" and err != want_stderr:
            got, exp = err.splitlines(), want_stderr.splitlines()
            diff = [(i, g, e) for i, (g, e) in enumerate(zip(got, exp)) if g != e]
            problems.append("stderr differs from llama-quantize's (%d lines, its %d); first: %r" %
                            (len(got), len(exp), diff[0] if diff else None))
        if os.path.exists(out):
            os.remove(out)
        fails += bool(problems)
        print("%s  %s%s" % ("FAIL" if problems else "PASS", name, "".join("\n  " + p for p in problems)))

    # --quiet: nothing on stderr, the same file
    want = expected["tensor-type"]
    out = os.path.join(work, "quiet.gguf")
    rc, err = run(oxl, ["--quiet"] + want["args"] + [src, out, want["ftype"], "2"])
    problems = []
    if rc != 0 or err != "":
        problems.append("exit status %d, stderr %r (expected 0 and nothing)" % (rc, err[:200]))
    elif sha_file(out) != want["file_sha256"]:
        problems.append("the file differs from llama-quantize's")
    if os.path.exists(out):
        os.remove(out)
    fails += bool(problems)
    print("%s  --quiet%s" % ("FAIL" if problems else "PASS", "".join("\n  " + p for p in problems)))

    for args, ftype, needles in ERRORS:
        out = os.path.join(work, "error.gguf")
        rc, err = run(oxl, args + [src, out, ftype, "2"])
        problems = []
        if rc != 1:
            problems.append("exit status %d, expected 1" % rc)
        missing = [n for n in needles if n not in err]
        if missing or not err.startswith("error: "):
            problems.append("message %r lacks %r" % (err.strip()[:300], missing or ["error: "]))
        if os.path.exists(out):
            problems.append("an output file was written")
            os.remove(out)
        fails += bool(problems)
        print("%s  error %s %s%s" % ("FAIL" if problems else "PASS", " ".join(args)[:60], ftype,
                                     "".join("\n  " + p for p in problems)))
    n = len(expected) + 1 + len(ERRORS)
    print("# %d checks: %d passed" % (n, n - fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
