#!/usr/bin/env python3
"""`oxillama imatrix` against llama-imatrix (golden/quantize, llama.cpp d32676d), on
synth-small-f32.gguf over ../perplexity/stories.txt with -c 128, run from golden/quantize as the
goldens were (so the recorded dataset name is the same):

1. the GGUF layout: keys (general.type, imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size),
   tensor names, order and shapes, and counts equal llama-imatrix's; every in_sum2 value within
   REL_EXACT of llama-imatrix's with an f32 cache and no flash attention
   (synth-small.f32kv-nofa.imatrix.gguf), where both engines' activations agree to float rounding,
   and within REL_DEFAULT of synth-small.imatrix.gguf with the defaults (f16 cache, flash attention:
   activations rounded to halves, where a last-bit difference upstream moves a half by 2^-11);
   the final perplexity line within 1e-5 of llama-imatrix's; the same with --process-output
   (output.weight collected too) against synth-small.process-output.f32kv-nofa.imatrix.gguf, and for ../arch/deepseek2-lite.gguf
   (-c 64 --chunks 4, f32 cache, no flash attention: experts with one count each, shared experts,
   and MLA's 3-D k_b / v_b products with one count) against deepseek2-lite.f32kv-nofa.imatrix.gguf;
2. `oxillama quantize --imatrix OURS ... IQ2_XXS`: every tensor equal to llama-quantize's output with
   llama-imatrix's file (expected-iq.json, IQ2_XXS-imat);
3. --output-format dat: the legacy layout (entries in name order, ncall, nval, (sum / count) * ncall
   in float32, chunk count, dataset name) computed from our GGUF output, and read back by
   `oxillama quantize --imatrix` to the same IQ2_XXS tensors;
4. bad input (an unreadable text, a text shorter than two chunks, -c 0, -c abc, a bad
   --output-format) refused with exit status 1 and a message.

usage: check_imatrix.py OXILLAMA GOLDEN_DIR WORK_DIR
"""
import hashlib
import json
import os
import struct
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import Gguf  # noqa: E402

REL_EXACT = 1e-5
REL_DEFAULT = 5e-5
# llama-imatrix's "Final estimate" lines
LLAMA_PPL = {"default": 926.1361, "f32kv-nofa": 926.1328, "process-output": 926.1328, "deepseek2-lite": 824.0813}

fails = 0


def check(ok, what):
    global fails
    fails += not ok
    print("%s  %s" % ("PASS" if ok else "FAIL", what))
    return ok


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def floats(data):
    return struct.unpack("<%df" % (len(data) // 4), data)


def run_imatrix(oxl, qdir, out, extra, model="synth-small-f32.gguf", ctx="128"):
    args = [oxl, "imatrix", "-m", model, "-f", "../perplexity/stories.txt", "-c", ctx, "-t", "2", "-o", out] + extra
    return subprocess.run(args, cwd=qdir, capture_output=True, text=True)


def compare_gguf(ours, ref, rel_bound, what):
    """Keys, tensor list and counts equal; in_sum2 values within rel_bound (relative, per value)."""
    a, b = Gguf(ours), Gguf(ref)
    check(a.kv == b.kv, "%s: keys %s" % (what, a.kv))
    names_a = [(n, t, ne) for n, t, ne, _ in a.tensors]
    names_b = [(n, t, ne) for n, t, ne, _ in b.tensors]
    if not check(names_a == names_b and len(names_b) > 0, "%s: %d tensors in llama-imatrix's order and shapes" %
                 (what, len(names_a))):
        return
    worst, worst_name, n_values, bad_counts = 0.0, "", 0, []
    for (name, _, _, da), (_, _, _, db) in zip(a.tensors, b.tensors):
        va, vb = floats(da), floats(db)
        if name.endswith(".counts"):
            bad_counts += [] if va == vb else ["%s %s (llama-imatrix: %s)" % (name, va, vb)]
            continue
        for x, y in zip(va, vb):
            rel = abs(x - y) / abs(y) if y != 0 else abs(x)
            n_values += 1
            if not rel <= worst:  # NaN counts as worst
                worst, worst_name = rel, name
    check(not bad_counts, "%s: counts equal llama-imatrix's (first: %s) %s" % (what, floats(a.tensors[1][3]),
                                                                        bad_counts[:2]))
    check(worst <= rel_bound and n_values > 0, "%s: %d in_sum2 values, largest relative difference %.3g (%s), bound %g" %
          (what, n_values, worst, worst_name, rel_bound))


def final_ppl(stdout):
    for line in stdout.splitlines():
        if line.startswith("Final estimate: PPL = "):
            return float(line.split()[4])
    return None


def quantize_matches(oxl, qdir, imatrix, want, work, what):
    out = os.path.join(work, "iq2_xxs.gguf")
    r = subprocess.run([oxl, "quantize", "--quiet", "--imatrix", imatrix, os.path.join(qdir, "synth-small-f32.gguf"),
                        out, "IQ2_XXS", "2"], capture_output=True, text=True)
    if r.returncode != 0:
        check(False, "%s: quantize exit status %d %s" % (what, r.returncode, r.stderr.strip()))
        return
    tensors = Gguf(out).tensors
    bad = [n for n, _, _, d in tensors if n not in want or hashlib.sha256(d).hexdigest() != want[n][2]]
    check(len(tensors) == len(want) and not bad,
          "%s: %d tensors, %d differ from llama-quantize's with llama-imatrix's file %s" % (what, len(tensors),
                                                                                           len(bad), bad[:3]))
    os.remove(out)


def read_dat(path):
    d = open(path, "rb").read()
    o = 0

    def i32():
        nonlocal o
        v = struct.unpack_from("<i", d, o)[0]
        o += 4
        return v

    entries = []
    for _ in range(i32()):
        n = i32()
        name = d[o:o + n].decode()
        o += n
        ncall, nval = i32(), i32()
        vals = struct.unpack_from("<%df" % nval, d, o)
        o += 4 * nval
        entries.append((name, ncall, vals))
    n_chunk = i32()
    n = i32()
    dataset = d[o:o + n].decode()
    o += n
    return entries, n_chunk, dataset, o == len(d)


def main():
    oxl, golden, work = sys.argv[1:4]
    oxl = os.path.abspath(oxl)
    work = os.path.abspath(work)
    os.makedirs(work, exist_ok=True)
    qdir = os.path.join(golden, "quantize")
    with open(os.path.join(qdir, "expected-iq.json")) as f:
        want_iq2 = json.load(f)["IQ2_XXS-imat"]

    # 1. GGUF values, exact path and defaults
    exact = ["-ctk", "f32", "-ctv", "f32", "-fa", "off"]
    runs = {
        "f32kv-nofa": ("synth-small-f32.gguf", "128", exact),
        "default": ("synth-small-f32.gguf", "128", []),
        "process-output": ("synth-small-f32.gguf", "128", exact + ["--process-output"]),
        "deepseek2-lite": ("../arch/deepseek2-lite.gguf", "64", exact + ["--chunks", "4"]),
    }
    refs = {"f32kv-nofa": ("synth-small.f32kv-nofa.imatrix.gguf", REL_EXACT),
            "default": ("synth-small.imatrix.gguf", REL_DEFAULT),
            "process-output": ("synth-small.process-output.f32kv-nofa.imatrix.gguf", REL_EXACT),
            "deepseek2-lite": ("deepseek2-lite.f32kv-nofa.imatrix.gguf", REL_EXACT)}
    ours = {}
    for key, (model, ctx, extra) in runs.items():
        ours[key] = os.path.join(work, "ours-%s.gguf" % key)
        r = run_imatrix(oxl, qdir, ours[key], extra, model, ctx)
        if not check(r.returncode == 0, "%s: exit status %d%s" % (key, r.returncode,
                                                                  "" if r.returncode == 0 else " " + r.stderr[-300:])):
            continue
        ppl = final_ppl(r.stdout)
        check(ppl is not None and abs(ppl - LLAMA_PPL[key]) <= 1e-5 * LLAMA_PPL[key],
              "%s: final PPL %s, llama-imatrix's %.4f" % (key, ppl, LLAMA_PPL[key]))
        n = 4 if key == "deepseek2-lite" else 10
        check("[%d]" % n in r.stdout and "[%d]" % (n + 1) not in r.stdout, "%s: one progress value per chunk, %d chunks" %
              (key, n))
        ref, bound = refs[key]
        compare_gguf(ours[key], os.path.join(qdir, ref), bound, key)

    # 2. quantizing with our file
    if os.path.exists(ours["default"]):
        quantize_matches(oxl, qdir, ours["default"], want_iq2, work, "IQ2_XXS with our GGUF imatrix")

    # 3. the legacy layout, from the same run's statistics
    dat = os.path.join(work, "ours.dat")
    r = run_imatrix(oxl, qdir, dat, ["--output-format", "dat"])
    if check(r.returncode == 0 and os.path.exists(ours["default"]), "dat: exit status %d" % r.returncode):
        entries, n_chunk, dataset, whole = read_dat(dat)
        g = Gguf(ours["default"])
        t = {n: floats(d) for n, _, _, d in g.tensors}
        names = sorted(n[:-len(".in_sum2")] for n in t if n.endswith(".in_sum2"))
        check(whole and [e[0] for e in entries] == names and n_chunk == 10 and dataset == "../perplexity/stories.txt",
              "dat: %d entries in name order, chunk count %d, dataset %r, no trailing bytes" % (len(entries), n_chunk,
                                                                                               dataset))
        mism = 0
        for name, ncall, vals in entries:
            sums, count = t[name + ".in_sum2"], t[name + ".counts"][0]
            mism += ncall != 10 or len(vals) != len(sums)
            mism += sum(v != f32(f32(s / count) * ncall) for v, s in zip(vals, sums))
        check(mism == 0 and entries, "dat: ncall 10 and every value (sum / count) * ncall of the GGUF output "
              "(%d mismatches)" % mism)
        quantize_matches(oxl, qdir, dat, want_iq2, work, "IQ2_XXS with our .dat imatrix (read back)")

    # 4. bad input: status 1 and a message, never a crash
    short = os.path.join(work, "short.txt")
    with open(short, "w") as f:
        f.write("Once upon a time there was a little dog.\n")
    cases = [
        (["-f", os.path.join(work, "missing.txt")], "missing.txt"),
        (["-f", short], "you need at least 256 tokens"),
        (["-c", "0"], "-c expects an integer >= 1"),
        (["-c", "abc"], "-c expects an integer >= 1"),
        (["--output-format", "txt"], "--output-format is gguf or dat"),
    ]
    for extra, msg in cases:
        args = [oxl, "imatrix", "-m", "synth-small-f32.gguf", "-f", "../perplexity/stories.txt", "-c", "128",
                "-o", os.path.join(work, "bad.gguf")] + extra
        r = subprocess.run(args, cwd=qdir, capture_output=True, text=True)
        check(r.returncode == 1 and msg in r.stderr and not os.path.exists(os.path.join(work, "bad.gguf")),
              "refused %s: exit status %d, %s" % (" ".join(extra), r.returncode, r.stderr.strip().splitlines()[-1:]))
    print("# %d checks failed" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
