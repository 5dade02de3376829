#!/usr/bin/env python3
"""Checks the logprobs of an `oxillama serve` /v1/completions reply against llama.cpp's logits.

usage: check_logprobs.py GOLDEN_GGUF MODEL_GGUF REPLY_JSON
GOLDEN_GGUF is golden/models/stories260K.once.gguf: llama.cpp's logits after each token of the
prompt "Once upon a time" (layout: golden/README.md). The reply is that prompt's greedy completion
with "logprobs": K. The reference is computed here, in double precision, from llama.cpp's logits:
  - the first generated token is llama.cpp's greedy token, and its logprob equals
    log_softmax(logits at the last prompt position)[token];
  - the first token's top_logprobs are the K most likely tokens of that distribution, in order,
    each with its log-probability;
  - at every position the top_logprobs are sorted, the greedy token is the first of them, and their
    probabilities sum to at most 1 (normalised log-probabilities).
Prints the largest difference measured; exit status 1 on a failed check.
"""
import json
import math
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import Gguf  # noqa: E402

# The golden's logits were computed with an f32 KV cache, the server keeps an f16 one (as
# llama-server does by default): the rounding of K and V moves the logits by up to ~5e-3 here
# (measured: 8e-5 for the greedy token, 5.3e-3 for the fifth alternative). Unnormalised values
# (logit - max, the greedy token at 0) would all be off by -log p(greedy) = 0.032.
TOL = 1e-3      # the greedy token (probability 0.97)
TOL_TOP = 1e-2  # its alternatives, down to probability 2e-4


def piece(tok_text):
    """A SentencePiece token's text as the server prints it: U+2581 is a space, <0xNN> a byte."""
    if len(tok_text) == 6 and tok_text.startswith("<0x") and tok_text.endswith(">"):
        return bytes([int(tok_text[3:5], 16)]).decode("latin-1")
    return tok_text.replace("\u2581", " ")


def main():
    golden_path, model_path, reply_path = sys.argv[1:4]
    g = Gguf(golden_path)
    meta, tensors = g.meta, g.tensor
    n_vocab = meta["golden.n_vocab"]
    shape, _, raw = tensors["logits"]
    n_tokens = shape[1]
    last = struct.unpack_from("<%df" % n_vocab, raw, 4 * n_vocab * (n_tokens - 1))
    greedy = struct.unpack("<%di" % tensors["greedy"][0][0], tensors["greedy"][2])
    mx = max(last)
    lse = mx + math.log(sum(math.exp(x - mx) for x in last))
    ref = [x - lse for x in last]
    vocab = read_gguf_vocab(model_path)

    reply = json.load(open(reply_path))
    lp = reply["choices"][0]["logprobs"]
    k = len(lp["top_logprobs"][0])
    failed = []
    if reply["usage"]["prompt_tokens"] != n_tokens:
        failed.append("prompt of %d tokens, llama.cpp's has %d" % (reply["usage"]["prompt_tokens"], n_tokens))
    tok = greedy[0]
    if lp["tokens"][0] != piece(vocab[tok]):
        failed.append("first token %r, llama.cpp's greedy token is %d %r" % (lp["tokens"][0], tok, piece(vocab[tok])))
    d_tok = abs(lp["token_logprobs"][0] - ref[tok])
    print("INFO  first token %d %r: logprob %.6f, llama.cpp log_softmax %.6f, |diff| %.2e" %
          (tok, piece(vocab[tok]), lp["token_logprobs"][0], ref[tok], d_tok))
    if not d_tok <= TOL:
        failed.append("first token logprob %.6f, llama.cpp's log_softmax %.6f" % (lp["token_logprobs"][0], ref[tok]))
    order = sorted(range(n_vocab), key=lambda i: -ref[i])[:k]
    want = [(piece(vocab[i]), ref[i]) for i in order]
    got = list(lp["top_logprobs"][0].items())
    if k < 2 or [w[0] for w in want] != [g[0] for g in got]:
        failed.append("first top_logprobs %s, llama.cpp's ranking %s" % (got, want))
    else:
        d_top = max(abs(g[1] - w[1]) for g, w in zip(got, want))
        print("INFO  first top_logprobs (%d): max |diff| %.2e" % (k, d_top))
        if not d_top <= TOL_TOP:
            failed.append("first top_logprobs %s, llama.cpp's %s" % (got, want))
    for i, (t, l, top) in enumerate(zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"])):
        vals = list(top.values())
        mass = sum(math.exp(v) for v in vals)
        if not (vals == sorted(vals, reverse=True) and list(top)[0] == t and abs(vals[0] - l) < 1e-6 and
                mass <= 1 + 1e-6 and l <= 0):
            failed.append("position %d: %r %r, top %s (probability mass %.6f)" % (i, t, l, top, mass))
    for f in failed:
        print("FAIL  logprobs: " + f)
    return 1 if failed else 0


def read_gguf_vocab(path):
    """tokenizer.ggml.tokens of a model."""
    return Gguf(path, with_tensors=False).meta["tokenizer.ggml.tokens"]


if __name__ == "__main__":
    sys.exit(main())
