#!/usr/bin/env python3
"""oxillama gguf-split (split, merge, --dry-run) and quantize --keep-split against llama.cpp's
llama-gguf-split and llama-quantize: every case of golden/split/cases.tsv is run, its exit status
must be 0, and the sha256 of its stdout (the output folder's path replaced by OUT) and of each file
it writes must be golden/split/expected.tsv's.
usage: check_gguf_split.py OXILLAMA_BINARY REPO_ROOT WORK_DIR
       check_gguf_split.py --make LLAMA_CPP_BIN_DIR REPO_ROOT WORK_DIR   (writes expected.tsv)"""
import glob
import hashlib
import os
import shutil
import subprocess
import sys


def sha(b):
    return hashlib.sha256(b).hexdigest()


def command(make, tool, kind, inp, args, out):
    if kind == "split":
        return ([os.path.join(tool, "llama-gguf-split")] if make else [tool, "gguf-split"]) + args + [inp, out]
    if kind == "merge":
        return ([os.path.join(tool, "llama-gguf-split")] if make else [tool, "gguf-split"]) + ["--merge", inp,
                                                                                             out + ".gguf"]
    if make:
        return [os.path.join(tool, "llama-quantize"), "--keep-split", inp, out + ".gguf"] + args + ["2"]
    return [tool, "quantize", "--keep-split", "--quiet", inp, out + ".gguf"] + args + ["2"]


def main():
    make = sys.argv[1] == "--make"
    tool, root, work = sys.argv[2:5] if make else sys.argv[1:4]
    gdir = os.path.join(root, "golden", "split")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cases = []
    with open(os.path.join(gdir, "cases.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, kind, inp, *args = line.rstrip("\n").split("\t")
                cases.append((name, kind, inp, args))
    got = []
    failed = 0
    for name, kind, inp, args in cases:
        d = os.path.join(work, name)
        os.makedirs(d)
        if inp.startswith("@"):
            first = sorted(glob.glob(os.path.join(work, inp[1:], "*.gguf")))
            inp = first[0] if first else "(case %s wrote nothing)" % inp[1:]
        else:
            inp = os.path.join(root, inp)
        cmd = command(make, tool, kind, inp, args, os.path.join(d, name))
        r = subprocess.run(cmd, capture_output=True, check=False)
        if r.returncode != 0:
            print("FAIL  %s: exit status %d: %s" % (name, r.returncode, r.stderr.decode()[-400:]))
            failed += 1
            continue
        stdout = r.stdout.replace(d.encode(), b"OUT") if kind == "split" else b""
        rows = [(name, "stdout", sha(stdout))] if kind == "split" else []
        for fn in sorted(os.listdir(d)):
            with open(os.path.join(d, fn), "rb") as f:
                rows.append((name, fn, sha(f.read())))
        got += rows
        if not make:
            want = [r for r in expected if r[0] == name]
            if rows != want:
                print("FAIL  %s: %s\n  expected %s\n  got      %s\n  stdout: %s" % (
                    name, " ".join(cmd), want, rows, stdout.decode()[:600]))
                failed += 1
            else:
                print("PASS  %s: %d files%s as llama.cpp's" % (name, len(rows) - (kind == "split"),
                                                              " and stdout" if kind == "split" else ""))
    if make:
        with open(os.path.join(gdir, "expected.tsv"), "w", encoding="utf-8") as f:
            f.write("# case\tfile (or stdout)\tsha256; made by tests/cli/check_gguf_split.py --make (README.md)\n")
            for row in got:
                f.write("\t".join(row) + "\n")
        print("wrote %d rows" % len(got))
        return 1 if failed else 0
    print("gguf-split / quantize --keep-split vs llama.cpp: %d cases, %d failed" % (len(cases), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    expected = []
    if sys.argv[1] != "--make":
        with open(os.path.join(sys.argv[2], "golden", "split", "expected.tsv"), encoding="utf-8") as f:
            expected = [tuple(l.rstrip("\n").split("\t")) for l in f if l.strip() and not l.startswith("#")]
    sys.exit(main())
