#!/usr/bin/env python3
"""Split GGUF models (golden/split: llama-gguf-split's parts of stories260K-Q4_0 and
golden/arch/gpt-oss-MXFP4_MOE, llama.cpp d32676d):

0. tests/cli/split_gguf.py writes golden/split's parts of stories260K-Q4_0 byte for byte, and
   splits models/stories260K.gguf (f32, too large to keep split) the same way into WORK_DIR: there
   `oxillama run` greedy (-n 64) on the first part prints golden/run/once.prompt followed by
   llama.cpp's continuation golden/run/once.expected; split with --no-tensor-first-split (part 1
   holds the metadata only; the layout checked by hand to be llama-gguf-split's, byte for byte),
   stories260K-Q4_0 passes llama.cpp's golden golden/models/stories260K-Q4_0.once.gguf;
1. `oxillama run` greedy (32 tokens) on the first part prints the same text as on the whole file
   models/stories260K-Q4_0.gguf, with mmap and with --no-mmap;
2. `oxillama info` on the first part names the split count (5 files) and the 48 tensors of all
   parts;
3. crafted bad splits (copies of the parts, edited with this script: a key's value is patched in
   place), each refused by `oxillama run` with exit status 1..125 and a message naming the file and
   the fault: a missing part, a part whose split.count differs from the first's, a part whose
   split.no is not its position, a tensor in two parts, tensors missing (a part of another model in
   the place of the last), split.tensors.count not the number of tensors, and a later part given
   instead of the first; `oxillama quantize` refuses a split model (it reads whole files).

usage: check_split.py OXILLAMA GOLDEN_DIR MODELS_DIR WORK_DIR
"""
import os
import re
import shutil
import struct
import subprocess
import sys

oxl, golden, models, work = sys.argv[1:5]
split_dir = os.path.join(golden, "split")
failures = 0


def check(ok, what, detail=""):
    global failures
    print(("PASS  " if ok else "FAIL  ") + what)
    if not ok:
        failures += 1
        if detail:
            print("  " + detail.replace("\n", "\n  "))


def run(args):
    p = subprocess.run([oxl] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def part_name(prefix, no, count=5):
    return "%s-%05d-of-%05d.gguf" % (prefix, no, count)


def set_key(path, key, fmt, value):
    """Patches the scalar value of `key` (GGUF type code from fmt) in place."""
    types = {"<H": 2, "<i": 5}
    data = bytearray(open(path, "rb").read())
    needle = struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", types[fmt])
    at = data.find(needle)
    assert at >= 0 and data.find(needle, at + 1) < 0, (path, key)
    at += len(needle)
    data[at:at + struct.calcsize(fmt)] = struct.pack(fmt, value)
    open(path, "wb").write(bytes(data))


def fresh(name, model="stories260K-Q4_0"):
    """A copy of the five parts of `model` in WORK/name; returns the prefix of their paths."""
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for no in range(1, 6):
        shutil.copy(os.path.join(split_dir, part_name(model, no)), d)
    return os.path.join(d, model)



prompt = "Once upon a time"
first = os.path.join(split_dir, part_name("stories260K-Q4_0", 1))
whole = os.path.join(models, "stories260K-Q4_0.gguf")
greedy = ["-p", prompt, "-n", "32", "--temp", "0", "-t", "2"]

# 0. llama-gguf-split's layout, and llama.cpp's greedy text on the split stories260K.gguf
here = os.path.dirname(os.path.abspath(__file__))
os.makedirs(work, exist_ok=True)
mine = os.path.join(work, "resplit", "stories260K-Q4_0")
os.makedirs(os.path.dirname(mine), exist_ok=True)
subprocess.run([sys.executable, os.path.join(here, "split_gguf.py"), whole, mine, "10"], check=True)
for no in range(1, 6):
    same = open(part_name(mine, no), "rb").read() == open(os.path.join(split_dir, part_name("stories260K-Q4_0", no)),
                                                          "rb").read()
    check(same, "split_gguf.py writes llama-gguf-split's part %d of stories260K-Q4_0" % no)
f32 = os.path.join(work, "f32", "stories260K")
os.makedirs(os.path.dirname(f32), exist_ok=True)
subprocess.run([sys.executable, os.path.join(here, "split_gguf.py"), os.path.join(models, "stories260K.gguf"), f32,
                "10"], check=True)
once = open(os.path.join(golden, "run", "once.prompt")).read()
want = once + open(os.path.join(golden, "run", "once.expected")).read()
rc, out, err = run(["run", "-m", part_name(f32, 1), "-p", once, "-n", "64", "--temp", "0", "-t", "2"])
check(rc == 0 and out == want, "run greedy -n 64 on the split stories260K.gguf: golden/run/once.expected",
      "exit %d\nwant: %r\ngot:  %r\n%s" % (rc, want, out, err))

# a first part without tensors (llama-gguf-split --no-tensor-first-split): llama.cpp's logits golden
nt = os.path.join(work, "no-tensor-first", "stories260K-Q4_0")
os.makedirs(os.path.dirname(nt), exist_ok=True)
subprocess.run([sys.executable, os.path.join(here, "split_gguf.py"), "--no-tensor-first-split", whole, nt, "20"],
               check=True)
rc, out, err = run(["golden", "-m", part_name(nt, 1, 4), os.path.join(golden, "models", "stories260K-Q4_0.once.gguf")])
check(rc == 0 and "PASS  greedy  32/32 tokens equal" in out and "# 3 passed, 0 failed" in out,
      "golden on a split with no tensor in its first part (4 files)", "exit %d\n%s%s" % (rc, out, err))

# 1. greedy text: split == whole
rc_w, out_w, err_w = run(["run", "-m", whole] + greedy)
check(rc_w == 0 and out_w.startswith(prompt) and len(out_w) > len(prompt) + 20, "run on the whole file",
      "exit %d: %s%s" % (rc_w, out_w, err_w))
for extra in ([], ["--no-mmap"]):
    rc, out, err = run(["run", "-m", first] + extra + greedy)
    check(rc == 0 and out == out_w, "run %s on the split model: the whole file's text" % " ".join(extra or ["(mmap)"]),
          "exit %d\nwant: %r\ngot:  %r\n%s" % (rc, out_w, out, err))

# 2. info
rc, out, err = run(["info", first])
check(rc == 0 and ", 48 tensors\n" in out and "split model: 5 files (split.count)" in out
      and re.search(r"part 5: \S*stories260K-Q4_0-00005-of-00005.gguf, 62144 bytes, 8 tensors", out) is not None,
      "info names the 5 files and their 48 tensors", "exit %d\n%s%s" % (rc, out[:800], err))

# 3. bad splits
def refused(what, prefix, pattern, args=None):
    rc, out, err = run(args or ["run", "-m", prefix + "-00001-of-00005.gguf", "-p", prompt, "-n", "4"])
    ok = 1 <= rc <= 125 and re.search(pattern, err) is not None
    check(ok, "%s: exit %d, %s" % (what, rc, (err.strip().splitlines() or [""])[-1]),
          "want exit 1..125 and /%s/ on stderr" % pattern)


p = fresh("missing")
os.remove(part_name(p, 3))
refused("missing part", p, re.escape(part_name(p, 3)) + r": missing part 3 of 5 of the split model ")
refused("missing part (info)", p, r"missing part 3 of 5", ["info", part_name(p, 1)])
refused("missing part (--no-mmap)", p, r"missing part 3 of 5",
        ["run", "--no-mmap", "-m", part_name(p, 1), "-p", prompt, "-n", "4"])

p = fresh("count")
set_key(part_name(p, 4), "split.count", "<H", 6)
refused("split.count mismatch", p, re.escape(part_name(p, 4)) + r": split.count is 6, but the first part \S+ says 5")

p = fresh("no")
set_key(part_name(p, 2), "split.no", "<H", 2)
refused("wrong split.no", p, re.escape(part_name(p, 2)) + r": split.no is 2, but the file is part 2 of 5, split.no 1")

p = fresh("dup")
shutil.copy(part_name(p, 2), part_name(p, 3))
set_key(part_name(p, 3), "split.no", "<H", 2)
refused("tensor in two parts", p,
        re.escape(part_name(p, 3)) + r": tensor 'blk\.\d+\.[a-z_.]+' is also in " + re.escape(part_name(p, 2)))

p = fresh("other")
shutil.copy(os.path.join(split_dir, part_name("gpt-oss-MXFP4_MOE", 5)), part_name(p, 5))
refused("tensors missing", p,
        re.escape(part_name(p, 1)) + r": split.tensors.count is 48, but the 5 parts hold 41 tensors \(tensors missing\)")

p = fresh("tcount")
set_key(part_name(p, 1), "split.tensors.count", "<i", 47)
refused("split.tensors.count too small", p, r": split.tensors.count is 47, but the 5 parts hold 48 tensors$")

p = fresh("later")
refused("a later part given", p, re.escape(part_name(p, 2)) + r": part 2 of 5 of a split model \(split.no 1\); "
        r"load it from its first part " + re.escape(part_name(p, 1)),
        ["run", "-m", part_name(p, 2), "-p", prompt, "-n", "4"])

# quantize reads a split model from its first part, as llama-quantize: the same bytes as from the whole file
whole_q, split_q = os.path.join(work, "q-whole.gguf"), os.path.join(work, "q-split.gguf")
rq = [subprocess.run([oxl, "quantize", "--quiet", "--allow-requantize", src, dst, "Q6_K", "2"], capture_output=True,
                     check=False).returncode for src, dst in ((whole, whole_q), (first, split_q))]
if rq == [0, 0] and open(whole_q, "rb").read() == open(split_q, "rb").read():
    print("PASS  quantize of a split model writes the whole model's bytes")
else:
    print("FAIL  quantize of a split model: exit statuses %s, or its bytes differ from the whole model's" % rq)
    failures += 1

print("# %d failed" % failures)
sys.exit(1 if failures else 0)
