#!/usr/bin/env python3
"""Issue-5 parity on converted files: each dense golden/arch model converted to F16 and Q8_0 by
`oxillama quantize` must be byte-identical to the file llama-quantize wrote (its sha256,
`llama_quantize_sha256`) and give, under `oxillama run --temp 0`, llama.cpp's greedy continuation
of the same converted file (golden/arch-converted/expected.jsonl, made with llama-quantize and
llama-simple; see the README there). An empty expectation file, a row without a field, or a listed
model missing from golden/arch is a failure.

usage: check_converted.py OXILLAMA GOLDEN_DIR WORK_DIR
"""
import hashlib
import json
import os
import subprocess
import sys

FIELDS = ("model", "type", "prompt", "n_predict", "continuation_hex", "llama_quantize_sha256")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    oxl, golden, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    expected = os.path.join(golden, "arch-converted", "expected.jsonl")
    with open(expected) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    if not rows:
        print("FAIL  %s lists no converted model" % expected)
        return 1
    fails = 0
    n_hash = n_text = 0
    for i, r in enumerate(rows):
        missing = [k for k in FIELDS if k not in r]
        if missing:
            print("FAIL  %s line %d has no %s" % (expected, i + 1, ", ".join(missing)))
            fails += 1
            continue
        src = os.path.join(golden, "arch", r["model"] + ".gguf")
        if not os.path.isfile(src):
            print("FAIL  %s %s: %s is missing" % (r["model"], r["type"], src))
            fails += 1
            continue
        dst = os.path.join(work, "%s-%s.gguf" % (r["model"], r["type"]))
        q = subprocess.run([oxl, "quantize", src, dst, r["type"]], capture_output=True)
        if q.returncode != 0:
            print("FAIL  %s %s: oxillama quantize exited %d\n  %s" %
                  (r["model"], r["type"], q.returncode, q.stderr.decode(errors="replace").strip()))
            fails += 1
            continue
        digest = sha256_of(dst)
        same_file = digest == r["llama_quantize_sha256"]
        n_hash += same_file
        # llama-simple sizes its context to the prompt and the tokens to generate, which llama.cpp
        # pads to 256: the same -c here (phi3's LongRoPE picks its factors by it)
        run = subprocess.run([oxl, "run", "-m", dst, "-p", r["prompt"], "-n", str(r["n_predict"]),
                              "--temp", "0", "-t", "2", "-c", "256"], capture_output=True)
        # llama-simple prints each piece with printf("%s"), so a <0x00> byte token shows as nothing
        got = run.stdout.replace(b"\x00", b"")
        want = r["prompt"].encode() + bytes.fromhex(r["continuation_hex"])
        same_text = run.returncode == 0 and got == want
        n_text += same_text
        ok = same_file and same_text
        fails += not ok
        print("%s  %s %s" % ("PASS" if ok else "FAIL", r["model"], r["type"]))
        if not same_file:
            print("  file sha256 %s, llama-quantize's %s" % (digest, r["llama_quantize_sha256"]))
        if run.returncode != 0:
            print("  oxillama run exited %d" % run.returncode)
        if got != want:
            print("  want %r\n  got  %r" % (want, got))
    print("# checked %d converted models: %d byte-identical to llama-quantize's file, %d give llama.cpp's "
          "greedy text" % (len(rows), n_hash, n_text))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
