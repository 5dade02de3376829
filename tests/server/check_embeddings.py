#!/usr/bin/env python3
"""Checks the values of `oxillama serve`'s /v1/embeddings against llama.cpp's embeddings.

usage: check_embeddings.py OXILLAMA MODEL_GGUF GOLDEN_GGUF [fallback]
GOLDEN_GGUF is golden/arch/<model>.logits.gguf (golden.kind embeddings, layout: golden/arch/README.md):
`tokens` (the 48 prompt ids), `embd` (llama.cpp's pooled embedding with the model's pooling type)
and `embd_tokens` (its per-token output embeddings, pooling none), none of them normalised.
A server on MODEL_GGUF gets ONE request whose input is three token lists, decoded together in one
batch: the 48 ids, their first PREFIX ids, the 48 ids again. Checks:
  - the two 48-id embeddings equal `embd` normalised with the Euclidean norm (the server's default
    embd_normalize 2, as llama-server's), within TOL per component;
  - the two 48-id embeddings agree within TOL_SAME (not bit for bit: the same input at another
    place of the batch goes through other rows of the matrix kernels), the prefix's differs from
    them by more than TOL;
  - every embedding has unit Euclidean norm.
With `fallback`, the server gets a copy of MODEL_GGUF whose <arch>.pooling_type is 0 (none): the
server then pools with mean (its fallback, logged as such), and the reference is the mean over the
48 tokens of `embd_tokens`, normalised the same way.
Prints the largest difference measured; exit status 1 on a failed check.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import I32, U32, Gguf  # noqa: E402

# Normalised components are ~0.1 (64 dimensions); oxillama reproduces llama.cpp's pooled embedding
# to a few 1e-7 here (measured max |diff| after normalisation: see the INFO line).
TOL = 1e-5
TOL_SAME = 2e-6  # measured: up to 4e-7 between the two 48-id inputs of one batch
PREFIX = 20


def l2(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def zero_pooling(model, out):
    """Writes a copy of MODEL with its <arch>.pooling_type (a u32/i32 key) set to 0 (none)."""
    g = Gguf(model, with_tensors=False)
    keys = [k for k, (t, _) in g.kv.items() if k.endswith(".pooling_type") and t in (U32, I32)]
    if not keys:
        raise SystemExit("FAIL  %s has no pooling_type key to clear" % model)
    buf = bytearray(open(model, "rb").read())
    for k in keys:
        struct.pack_into("<I", buf, g.kv_offset[k], 0)
    open(out, "wb").write(buf)


def serve(binary, model, work):
    """Starts `oxillama serve --port 0`; returns (process, base URL, log path)."""
    log = os.path.join(work, "log")
    proc = subprocess.Popen([binary, "serve", "--port", "0", "-m", model], stdout=subprocess.DEVNULL,
                            stderr=open(log, "w"))
    for _ in range(300):
        text = open(log).read()
        if "loaded in" in text and "listening on http://127.0.0.1:" in text:
            port = text.split("listening on http://127.0.0.1:")[1].split()[0].rstrip("/")
            return proc, "http://127.0.0.1:" + "".join(c for c in port if c.isdigit()), log
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("FAIL  server on %s did not start:\n%s" % (model, open(log).read()))


def main():
    binary, model, golden = sys.argv[1:4]
    fallback = sys.argv[4:5] == ["fallback"]
    g = Gguf(golden)
    meta, t = g.meta, g.tensor
    n_embd = meta["golden.n_embd"]
    tokens = list(struct.unpack("<%di" % t["tokens"][0][0], t["tokens"][2]))
    name = os.path.basename(model)
    if fallback:
        per_tok = struct.unpack("<%df" % (n_embd * len(tokens)), t["embd_tokens"][2])
        ref = [sum(per_tok[i * n_embd + d] for i in range(len(tokens))) / len(tokens) for d in range(n_embd)]
        what = "%s, pooling_type cleared: mean of llama.cpp's per-token embeddings" % name
    else:
        ref = list(struct.unpack("<%df" % n_embd, t["embd"][2]))
        what = "%s: llama.cpp's %s-pooled embedding" % (name, meta["golden.pooling"])
    ref = l2(ref)

    tmp = tempfile.TemporaryDirectory()
    work = tmp.name
    if fallback:
        patched = os.path.join(work, name)
        zero_pooling(model, patched)
        model = patched
    proc, base, log = serve(binary, model, work)
    failed = []
    try:
        body = json.dumps({"input": [tokens, tokens[:PREFIX], tokens]}).encode()
        rq = urllib.request.Request(base + "/v1/embeddings", body, {"Content-Type": "application/json"})
        try:
            reply = json.load(urllib.request.urlopen(rq, timeout=120))
        except urllib.error.HTTPError as err:
            print("FAIL  embeddings %s: status %d, body %s" % (name, err.code, err.read()[:300]))
            return 1
    finally:
        proc.terminate()
        proc.wait()
    text = open(log).read()
    want_log = "mean pooling (the model has no pooling_type)" if fallback else \
        "%s pooling (the model's pooling_type)" % meta["golden.pooling"]
    if want_log not in text:
        failed.append("the server log does not say '%s':\n%s" % (want_log, text))
    vecs = [d["embedding"] for d in sorted(reply["data"], key=lambda d: d["index"])]
    if len(vecs) != 3 or any(len(v) != n_embd for v in vecs):
        failed.append("%d embeddings of %s dimensions, want 3 of %d" % (len(vecs), [len(v) for v in vecs], n_embd))
    else:
        for i in (0, 2):
            d = max(abs(a - b) for a, b in zip(vecs[i], ref))
            print("INFO  %s: input %d (48 ids) max |diff| %.2e (bound %.0e)" % (what, i, d, TOL))
            if not d <= TOL:
                failed.append("input %d (48 ids): max |diff| %.2e > %.0e from %s; got %s, want %s" %
                              (i, d, TOL, what, vecs[i][:4], ref[:4]))
        d = max(abs(a - b) for a, b in zip(vecs[0], vecs[2]))
        print("INFO  %s: the two 48-id inputs differ by max %.2e (bound %.0e)" % (name, d, TOL_SAME))
        if not d <= TOL_SAME:
            failed.append("the two 48-id inputs of one request differ by max %.2e > %.0e: %s, %s" %
                          (d, TOL_SAME, vecs[0][:4], vecs[2][:4]))
        d = max(abs(a - b) for a, b in zip(vecs[1], vecs[0]))
        print("INFO  %s: prefix of %d ids differs from the 48 ids by max %.2e" % (name, PREFIX, d))
        if not d > TOL:
            failed.append("the %d-id prefix's embedding equals the 48 ids' (max |diff| %.2e)" % (PREFIX, d))
        for i, v in enumerate(vecs):
            n = math.sqrt(sum(x * x for x in v))
            if not abs(n - 1) < 1e-5:
                failed.append("input %d: Euclidean norm %.7f, want 1" % (i, n))
    for f in failed:
        print("FAIL  embeddings %s" % f)
    if not failed:
        print("PASS  embeddings %s" % what)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
