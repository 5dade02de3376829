#!/usr/bin/env python3
"""Side-by-side speed of oxillama and llama.cpp on the same files and threads, as ratios, in one run.

    python3 bench/compare.py --build BUILD_DIR --llama-bench PATH [--threads 2] [--reps 3]
                             [--types Q4_0,Q4_K_M,Q8_0] [--work /tmp/oxl-bench] [--roofline]
                             [--n-prompt 512] [--n-gen 128] [--depths 0[,4096...]]

BUILD_DIR holds `oxillama` and `bench/oxl-make-synthetic`; PATH is an existing llama-bench binary.
Makes the reference shape's synthetic model (F16, with the llama SPM vocabulary of
golden/tokenizer/ggml-vocab-llama-spm.gguf), quantizes it with `oxillama quantize`, then runs
`oxillama bench` and `llama-bench` (pp512 and tg128) on each file, alternating, and prints
t/s of both and the ratio oxillama / llama.cpp. --roofline adds, for tg128, oxillama's share of the
memory-bandwidth bound (`oxillama bench --roofline`). --depths runs every test after that many
tokens in the KV cache (both engines' -d: "pp512 @ d4096") and prints one table per depth. A file
one of the engines cannot run gets "failed" in its cells and the others still run. The CPU's name
(lscpu) comes first; the machine's load average before and after is printed, since a shared
machine's other work changes both engines' rates.
"""
import argparse
import csv
import io
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_csv(cmd):
    """CSV rows of a bench command, or None (with its stderr shown) when it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}\n")
        return None
    return list(csv.DictReader(io.StringIO(p.stdout)))


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_name():
    """lscpu's "Model name", or "unknown"."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    for line in out.splitlines():
        if line.strip().startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def field(rows, test, key, depth=0):
    """Column key of the row for pp (n_gen 0) or tg (n_prompt 0) at a depth; nan when absent."""
    for r in rows or []:
        p, g, d = int(r["n_prompt"]), int(r["n_gen"]), int(r.get("n_depth") or 0)
        if d == depth and ((test == "pp" and p > 0 and g == 0) or (test == "tg" and g > 0 and p == 0)):
            return float(r.get(key) or "nan")
    return float("nan")


def cell(x, fmt="{:.2f}"):
    return "failed" if x != x else fmt.format(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--reps", default="3")
    ap.add_argument("--types", default="Q4_0,Q4_K_M,Q8_0")
    ap.add_argument("--work", default="/tmp/oxl-bench")
    ap.add_argument("--roofline", action="store_true")
    ap.add_argument("--n-prompt", default="512")
    ap.add_argument("--n-gen", default="128")
    ap.add_argument("--depths", default="0", help="comma-separated KV cache depths (llama-bench -d)")
    args = ap.parse_args()
    depths = [int(d) for d in args.depths.split(",")]

    os.makedirs(args.work, exist_ok=True)
    oxl = os.path.join(args.build, "oxillama")
    f16 = os.path.join(args.work, "synthetic-0.25B-F16.gguf")
    if not os.path.exists(f16):
        subprocess.run([os.path.join(args.build, "bench", "oxl-make-synthetic"), "--vocab",
                        os.path.join(HERE, "golden/tokenizer/ggml-vocab-llama-spm.gguf"), f16], check=True)
    print(f"CPU: {cpu_name()}")
    print(f"load average before: {load_average()}")
    results = []  # (type, oxillama rows, llama-bench rows)
    for q in args.types.split(","):
        path = os.path.join(args.work, f"synthetic-0.25B-{q}.gguf")
        if not os.path.exists(path):
            subprocess.run([oxl, "quantize", f16, path, q], check=True, stdout=subprocess.DEVNULL)
        common = ["-m", path, "-p", args.n_prompt, "-n", args.n_gen, "-d", args.depths, "-t", args.threads,
                  "-r", args.reps, "-o", "csv"]
        ours = run_csv([oxl, "bench"] + common + (["--roofline"] if args.roofline else []))
        theirs = run_csv([args.llama_bench] + common)
        results.append((q, ours, theirs))
    bound_h, bound_s = (" bound % |", " ---: |") if args.roofline else ("", "")
    for d in depths:
        suffix = f" @ d{d}" if d > 0 else ""
        if len(depths) > 1:
            print(f"\ndepth {d}:\n")
        print(f"| model | test | oxillama t/s | llama.cpp t/s | ratio |{bound_h}")
        print(f"| --- | --- | ---: | ---: | ---: |{bound_s}")
        for q, ours, theirs in results:
            for test, name in (("pp", f"pp{args.n_prompt}"), ("tg", f"tg{args.n_gen}")):
                a, b = field(ours, test, "avg_ts", d), field(theirs, test, "avg_ts", d)
                row = f"| {q} | {name}{suffix} | {cell(a)} | {cell(b)} | {cell(a / b if b == b and b > 0 else float('nan'))} |"
                if args.roofline:
                    share = field(ours, test, "bound_share", d) if test == "tg" else float("nan")
                    row += f" {cell(100 * share, '{:.1f}') if test == 'tg' else ''} |"
                print(row)
        sys.stdout.flush()
    print(f"load average after: {load_average()}")

if __name__ == "__main__":
    main()
