#!/usr/bin/env python3
"""Issue-5 parity on converted files: each dense golden/arch model converted to F16 and Q8_0 by
`oxillama quantize` must give, under `oxillama run --temp 0`, llama.cpp's greedy continuation of
the same converted file (golden/arch-converted/expected.jsonl, made with llama-quantize and
llama-simple; see the README there).

usage: check_converted.py OXILLAMA GOLDEN_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys


def main():
    oxl, golden, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    fails = 0
    rows = [json.loads(l) for l in open(os.path.join(golden, "arch-converted", "expected.jsonl"))]
    for r in rows:
        src = os.path.join(golden, "arch", r["model"] + ".gguf")
        dst = os.path.join(work, "%s-%s.gguf" % (r["model"], r["type"]))
        subprocess.run([oxl, "quantize", src, dst, r["type"]], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # llama-simple sizes its context to the prompt and the tokens to generate, which llama.cpp
        # pads to 256: the same -c here (phi3's LongRoPE picks its factors by it)
        got = subprocess.run([oxl, "run", "-m", dst, "-p", r["prompt"], "-n", str(r["n_predict"]),
                              "--temp", "0", "-t", "2", "-c", "256"], check=True, capture_output=True).stdout
        # llama-simple prints each piece with printf("%s"), so a <0x00> byte token shows as nothing
        got = got.replace(b"\x00", b"")
        want = r["prompt"].encode() + bytes.fromhex(r["continuation_hex"])
        ok = got == want
        fails += not ok
        print("%s  %s %s" % ("PASS" if ok else "FAIL", r["model"], r["type"]))
        if not ok:
            print("  want %r\n  got  %r" % (want, got))
    print("# %d of %d converted models give llama.cpp's greedy text" % (len(rows) - fails, len(rows)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
