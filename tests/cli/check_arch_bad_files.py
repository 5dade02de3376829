#!/usr/bin/env python3
"""Bad files of the glm4 and apertus families: copies of golden/arch/glm4.gguf and apertus.gguf,
each patched in place (same length, so the rest of the file stays valid), must be refused by
`oxillama run` with an exit status from 1 to 125 (an error, not a crash) and a message naming the
file and the fault:

- apertus without the key xielu.beta (its name changed to xielu.betX): llama.cpp's loader requires
  all four xIELU keys (get_key_or_arr, "key not found in model");
- apertus whose xielu.alpha_p array holds int32 instead of float32;
- apertus whose xielu.eps[1] is NaN;
- glm4 without blk.1.post_ffw_norm.weight (the name changed to ...weighX);
- glm4 whose nextn_predict_layers (the key rope.dimension_count renamed to it: both are 25 bytes)
  is 8 with block_count 2: llama.cpp asserts nextn_predict_layers < block_count.

usage: check_arch_bad_files.py OXILLAMA GOLDEN_DIR WORK_DIR
"""
import math
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gguf_kv import I32, Gguf  # noqa: E402

oxl, golden, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
failures = 0


def patched(model, name, edit):
    """A copy of golden/arch/<model>.gguf in WORK_DIR/<name>.gguf after edit(bytearray, Gguf)."""
    src = os.path.join(golden, "arch", model + ".gguf")
    data = bytearray(open(src, "rb").read())
    edit(data, Gguf(src, with_tensors=False))
    path = os.path.join(work, name + ".gguf")
    with open(path, "wb") as f:
        f.write(data)
    return path


def rename(data, old, new):
    """Renames the key or tensor `old` (a GGUF string: u64 length, bytes) to `new` of equal length."""
    assert len(old) == len(new)
    needle = struct.pack("<Q", len(old)) + old.encode()
    at = data.find(needle)
    assert at >= 0 and data.find(needle, at + 1) < 0, old
    data[at + 8:at + 8 + len(old)] = new.encode()


def expect_refusal(path, want):
    p = subprocess.run([oxl, "run", "-m", path, "-p", "hi", "-n", "1", "--temp", "0"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    out = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
    ok = 1 <= p.returncode <= 125 and want in out and path in out
    global failures
    print("%s  %s: exit %d, %s" % ("PASS" if ok else "FAIL", os.path.basename(path), p.returncode,
                                   out.strip().splitlines()[-1] if out.strip() else "(no output)"))
    if not ok:
        print("  expected an exit status 1..125 and a message with the file and: " + want)
        failures += 1


def set_arr_type(key, etype):
    def edit(data, g):
        assert g.kv[key][0] == 9 and all(isinstance(v, float) for v in g.kv[key][1]), key
        data[g.kv_offset[key]:g.kv_offset[key] + 4] = struct.pack("<I", etype)
    return edit


def set_arr_f32(key, i, value):
    def edit(data, g):
        at = g.kv_offset[key] + 4 + 8 + 4 * i  # element type, count, then the floats
        assert g.kv[key][1][i] == struct.unpack_from("<f", data, at)[0], key
        data[at:at + 4] = struct.pack("<f", value)
    return edit


def renamed_key_value(old, new, value):
    def edit(data, g):
        assert g.kv[old][0] == 4, old  # uint32
        data[g.kv_offset[old]:g.kv_offset[old] + 4] = struct.pack("<I", value)
        rename(data, old, new)
    return edit


expect_refusal(patched("apertus", "apertus-no-beta", lambda d, g: rename(d, "xielu.beta", "xielu.betX")),
               "missing required key 'xielu.beta'")
expect_refusal(patched("apertus", "apertus-alpha-p-int", set_arr_type("xielu.alpha_p", I32)),
               "key 'xielu.alpha_p' is an array of 2 int32; expected 2 float32")
expect_refusal(patched("apertus", "apertus-eps-nan", set_arr_f32("xielu.eps", 1, math.nan)),
               "key 'xielu.eps'[1] = nan: must be finite")
expect_refusal(patched("glm4", "glm4-no-post-ffw-norm",
                       lambda d, g: rename(d, "blk.1.post_ffw_norm.weight", "blk.1.post_ffw_norm.weighX")),
               "missing tensor 'blk.1.post_ffw_norm.weight'")
expect_refusal(patched("glm4", "glm4-nextn-too-many",
                       renamed_key_value("glm4.rope.dimension_count", "glm4.nextn_predict_layers", 8)),
               "glm4.nextn_predict_layers = 8 must be below block_count 2")
print("# %d failed" % failures)
sys.exit(1 if failures else 0)
