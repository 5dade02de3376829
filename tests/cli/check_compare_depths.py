#!/usr/bin/env python3
"""bench/compare.py --depths against two stand-in engines that print llama-bench's CSV fields with
known rates (oxillama: pp 100 + p + d, tg 10 + g + d t/s; llama-bench: a quarter of pp, half of tg),
so the tables must show those rates and ratios 4.00 and 2.00 at each depth, rows named as
llama-bench names them, the CPU's name first. Checks compare.py's exit status too.
usage: check_compare_depths.py SOURCE_DIR WORK_DIR"""
import os
import re
import shutil
import subprocess
import sys

FAKE = r'''#!/usr/bin/env python3
import sys
a = sys.argv[1:]
ours = a and a[0] == "bench"
opt = {a[i]: a[i + 1] for i in range(1 if ours else 0, len(a) - 1) if a[i].startswith("-")}
p, g = int(opt["-p"]), int(opt["-n"])
print("n_prompt,n_gen,n_depth,avg_ts")
for d in (int(x) for x in opt["-d"].split(",")):
    for pp, tg in ((p, 0), (0, g)):
        ts = 100 + pp + d if pp else 10 + tg + d
        if not ours:
            ts = ts / 4 if pp else ts / 2
        print(f'"{pp}","{tg}","{d}","{ts:.6f}"')
'''


def main():
    src, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for name in ("oxillama", "llama-bench"):
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(FAKE)
        os.chmod(path, 0o755)
    for q in ("F16", "X"):
        open(os.path.join(work, f"synthetic-0.25B-{q}.gguf"), "w").close()
    p = subprocess.run([sys.executable, os.path.join(src, "bench/compare.py"), "--build", work, "--llama-bench",
                        os.path.join(work, "llama-bench"), "--work", work, "--types", "X", "--reps", "1",
                        "--n-prompt", "32", "--n-gen", "8", "--depths", "0,64"], capture_output=True, text=True)
    out = p.stdout
    want = [
        r"^CPU: \S",
        r"\ndepth 0:\n\n\| model \| test \| oxillama t/s \| llama\.cpp t/s \| ratio \|\n\| --- \| --- \| ---: \| ---: \| ---: \|\n"
        r"\| X \| pp32 \| 132\.00 \| 33\.00 \| 4\.00 \|\n\| X \| tg8 \| 18\.00 \| 9\.00 \| 2\.00 \|\n",
        r"\ndepth 64:\n\n\| model \| test \| oxillama t/s \| llama\.cpp t/s \| ratio \|\n\| --- \| --- \| ---: \| ---: \| ---: \|\n"
        r"\| X \| pp32 @ d64 \| 196\.00 \| 49\.00 \| 4\.00 \|\n\| X \| tg8 @ d64 \| 82\.00 \| 41\.00 \| 2\.00 \|\n",
    ]
    bad = [w for w in want if not re.search(w, out)]
    if p.returncode != 0 or bad:
        print(f"compare.py exit {p.returncode}\n{out}\n{p.stderr}\nnot found: {bad}")
        return 1
    print("compare-depths: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
