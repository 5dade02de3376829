#!/usr/bin/env python3
"""oxillama embed against llama-embedding's output (golden/embed/NAME.out, made by make.sh there from
the cases in cases.txt). For each case: oxillama embed must exit 0 and print the same text once
every number is blanked, and each number must be within one unit of its last printed digit plus
2e-5 x max(1, |llama.cpp's value|) of llama.cpp's (the printed values are rounded to 2, 6 or 7
decimals or to integers, so a value within 2e-5 relative may round one unit apart).
usage: check_embed.py OXILLAMA_BINARY GOLDEN_EMBED_DIR ARCH_DIR [CASE...]"""
import os
import re
import subprocess
import sys

# the indices ("embedding 3:", "rerank score 3:", "index": 3) are text, compared exactly
NUM = re.compile(r'(?<!embedding )(?<!score )(?<!"index": )-?\d+(?:\.\d+)?')


def numbers(text):
    return [(m.group(0), float(m.group(0))) for m in NUM.finditer(text)], NUM.sub("#", text)


def main():
    binary, gdir, adir = sys.argv[1:4]
    only = set(sys.argv[4:])
    failed = passed = 0
    with open(os.path.join(gdir, "cases.txt"), encoding="utf-8") as f:
        cases = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
    for name, model, *args in cases:
        if only and name not in only:
            continue
        with open(os.path.join(gdir, name + ".out"), encoding="utf-8") as f:
            want = f.read()
        r = subprocess.run([binary, "embed", "-m", os.path.join(adir, model), "-t", "2", *args],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            print(f"FAIL  {name}: exit status {r.returncode}: {r.stderr.strip()[-300:]}")
            failed += 1
            continue
        wn, wshape = numbers(want)
        gn, gshape = numbers(r.stdout)
        if wshape != gshape or len(wn) != len(gn):
            print(f"FAIL  {name}: the text differs from llama-embedding's\n--- expected\n{want}--- got\n{r.stdout}")
            failed += 1
            continue
        worst, worst_i, bad = 0.0, -1, None
        for i, ((ws, wv), (_, gv)) in enumerate(zip(wn, gn)):
            dec = len(ws.split(".")[1]) if "." in ws else 0
            bound = 10.0 ** -dec + 2e-5 * max(1.0, abs(wv))
            d = abs(gv - wv)
            if d > worst:
                worst, worst_i = d, i
            if d > bound and bad is None:
                bad = (i, ws, gv, bound)
        if bad:
            print(f"FAIL  {name}: number {bad[0]}: llama.cpp {bad[1]}, oxillama {bad[2]}, bound {bad[3]:.2g}")
            failed += 1
            continue
        print(f"PASS  {name}: {len(wn)} numbers, max |delta| {worst:.3g}" +
              (f" (number {worst_i}, printed {wn[worst_i][0]})" if worst_i >= 0 else ""))
        passed += 1
    print(f"embed vs llama-embedding: {passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
