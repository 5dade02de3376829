#!/usr/bin/env python3
"""Side-by-side speed of oxillama and llama.cpp on the same files and threads, as ratios, in one run.

    python3 bench/compare.py --build BUILD_DIR --llama-bench PATH [--threads 2] [--reps 3]
                             [--types Q4_0,Q4_K_M,Q8_0] [--work /tmp/oxl-bench] [--roofline]

BUILD_DIR holds `oxillama` and `oxl-make-synthetic`; PATH is an existing llama-bench binary.
Makes the reference shape's synthetic model (F16, with the llama SPM vocabulary of
golden/tokenizer/ggml-vocab-llama-spm.gguf), quantizes it with `oxillama quantize`, then runs
`oxillama bench` and `llama-bench` (pp512 and tg128) on each file, alternating, and prints
t/s of both and the ratio oxillama / llama.cpp.
"""
import argparse
import csv
import io
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_csv(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def rate(rows, test):
    """avg t/s of the row for pp (n_gen 0) or tg (n_prompt 0)."""
    for r in rows:
        p, g = int(r["n_prompt"]), int(r["n_gen"])
        if (test == "pp" and p > 0 and g == 0) or (test == "tg" and g > 0 and p == 0):
            return float(r["avg_ts"])
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--reps", default="3")
    ap.add_argument("--types", default="Q4_0,Q4_K_M,Q8_0")
    ap.add_argument("--work", default="/tmp/oxl-bench")
    args = ap.parse_args()

    os.makedirs(args.work, exist_ok=True)
    oxl = os.path.join(args.build, "oxillama")
    f16 = os.path.join(args.work, "synthetic-0.25B-F16.gguf")
    if not os.path.exists(f16):
        subprocess.run([os.path.join(args.build, "oxl-make-synthetic"), "--vocab",
                        os.path.join(HERE, "golden/tokenizer/ggml-vocab-llama-spm.gguf"), f16], check=True)
    print(f"| model | test | oxillama t/s | llama.cpp t/s | ratio |")
    print(f"| --- | --- | ---: | ---: | ---: |")
    for q in args.types.split(","):
        path = os.path.join(args.work, f"synthetic-0.25B-{q}.gguf")
        if not os.path.exists(path):
            subprocess.run([oxl, "quantize", f16, path, q], check=True, stdout=subprocess.DEVNULL)
        common = ["-m", path, "-t", args.threads, "-r", args.reps, "-o", "csv"]
        ours = run_csv([oxl, "bench"] + common)
        theirs = run_csv([args.llama_bench] + common)
        for test, name in (("pp", "pp512"), ("tg", "tg128")):
            a, b = rate(ours, test), rate(theirs, test)
            print(f"| {q} | {name} | {a:.2f} | {b:.2f} | {a / b:.2f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
