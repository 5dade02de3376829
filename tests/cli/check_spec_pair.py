#!/usr/bin/env python3
"""The self-speculative target/draft pair of oxl-make-synthetic (bench/README.md, "Speculative
decoding"), on a small shape (n_embd 256, 6 layers, f32, llama-spm's 32000-token vocabulary):

1. The files: the draft (--n-layer 2) holds exactly the target's token_embd, output_norm, output
   and blk.0 / blk.1 tensors, byte for byte, and no other block; the target (--tail-from 2
   --tail-scale 0.02) equals the same model made without the tail options in every tensor but the
   attn_output / ffn_down of blocks 2..5, whose every value is the unscaled one times 0.02 in f32.
2. Greedy `oxillama run` with the draft (-md, --draft-p-min 0 --draft-max 4) and with n-gram
   drafting prints the plain run's text byte for byte (f32 cache, flash attention off: batched and
   one-token products then agree to ~1e-6), and drafts are accepted: at least half of them on the
   scaled pair, more than with the unscaled target (whose tail layers decide its tokens).
   --tied writes no output matrix (the same token_embd as without it); greedy generation of that
   model repeats itself, and n-gram drafting (2/8) on it is accepted, with the plain text.
   --recite IDS (every layer's output projections scaled by 0.002): output.weight's row b is the
   embedding row of the id before b in the passage, every other row the unscaled model's; greedy
   generation after a prompt that quotes the passage and starts its summary with the passage's
   first word continues with the passage, and ngram-simple (4/16) prints that text
   with most of its drafts accepted.
3. `oxillama bench --draft`: tg16 with the draft, -o json / csv / md: the fields model_draft,
   n_drafted (> 0) and n_accepted (at least half of them on the scaled pair, at most 15 a run), the CSV header's field count equal to each row's, the md column
   "draft acc %"; a draft of another vocabulary (stories260K), --draft-max 0 and --draft-p-min 2
   refused with exit 1 and a message naming them.

Every command's exit status is checked. No timings (bench/README.md has the measured speeds).

usage: check_spec_pair.py OXL_MAKE_SYNTHETIC OXILLAMA PROJECT_DIR WORK_DIR
"""
import os
import re
import struct
import subprocess
import sys

make, oxl, root, work = sys.argv[1:5]
vocab = os.path.join(root, "golden", "tokenizer", "ggml-vocab-llama-spm.gguf")
os.makedirs(work, exist_ok=True)
failures = 0
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def check(ok, what, detail=""):
    global failures
    print(("PASS  " if ok else "FAIL  ") + what)
    if not ok:
        failures += 1
        if detail:
            print("  " + detail.replace("\n", "\n  "))


def tensors(path):
    """name -> (dims, raw bytes) of an f32-only GGUF (alignment 32)."""
    b = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, b, pos)
        pos += struct.calcsize(fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("<Q")
        pos += n
        return b[pos - n:pos]

    def value(t):
        nonlocal pos
        if t == 8:
            string()
        elif t == 9:
            et, n = take("<I"), take("<Q")
            for _ in range(n):
                value(et)
        else:
            pos += SCALAR[t]

    if take("<4s") != b"GGUF":
        raise ValueError(path + ": not a GGUF file")
    take("<I")
    n_tensors, n_kv = take("<Q"), take("<Q")
    for _ in range(n_kv):
        string()
        value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string().decode()
        ne = [take("<Q") for _ in range(take("<I"))]
        ttype, offset = take("<I"), take("<Q")
        if ttype != 0:
            raise ValueError("%s: %s is not f32" % (path, name))
        infos.append((name, ne, offset))
    start = (pos + 31) // 32 * 32
    out = {}
    for name, ne, offset in infos:
        n = 4
        for d in ne:
            n *= d
        out[name] = (ne, b[start + offset:start + offset + n])
    return out


def synth(out, extra):
    args = [make, "--vocab", vocab, "--n-embd", "256", "--n-ff", "512", "--n-head", "4", "--n-head-kv", "2",
            "--ctx", "512", "--type", "f32", "--seed", "7"] + extra + [out]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    check(p.returncode == 0, "oxl-make-synthetic %s: exit 0" % " ".join(extra), p.stderr.decode())
    return p.returncode == 0


target = os.path.join(work, "pair-target.gguf")
draft = os.path.join(work, "pair-draft.gguf")
plain_target = os.path.join(work, "pair-target-unscaled.gguf")
made = (synth(target, ["--n-layer", "6", "--tail-from", "2", "--tail-scale", "0.02"]) &
        synth(draft, ["--n-layer", "2"]) & synth(plain_target, ["--n-layer", "6"]))
if not made:
    sys.exit(1)

# refused option values, each with its named error
for bad, needle in ((["--tail-scale", "0.5"], "--tail-scale needs --tail-from"),
                    (["--tail-from", "2", "--tail-scale", "2"], "--tail-scale 2: expected a number in [0, 1]"),
                    (["--tail-from", "-1", "--tail-scale", "0.5"], "--tail-from -1: expected a layer index"),
                    (["--tied", "--recite", "450,8580"], "--recite needs an output matrix"),
                    (["--recite", "450,32000"], "--recite: expected at least two token ids below 32000")):
    p = subprocess.run([make, "--vocab", vocab] + bad + [os.path.join(work, "bad.gguf")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    err = p.stderr.decode()
    check(p.returncode == 1 and needle in err, "oxl-make-synthetic %s: exit 1 naming it" % " ".join(bad), err)

# 1. the files
T, D, U = tensors(target), tensors(draft), tensors(plain_target)
shared = ["token_embd.weight", "output_norm.weight", "output.weight"] + [
    "blk.%d.%s.weight" % (il, n) for il in (0, 1) for n in
    ("attn_q", "attn_k", "attn_v", "attn_output", "attn_norm", "ffn_gate", "ffn_down", "ffn_up", "ffn_norm")]
check(sorted(D) == sorted(shared), "the draft holds the embeddings, the output head and blocks 0-1 only",
      "draft tensors: %s" % sorted(D))
check(all(n in T and D[n] == T[n] for n in shared), "the draft's tensors equal the target's byte for byte",
      "differ: %s" % [n for n in shared if n not in T or D.get(n) != T[n]])
tail = {"blk.%d.%s.weight" % (il, n) for il in range(2, 6) for n in ("attn_output", "ffn_down")}
check(sorted(T) == sorted(U), "the target and the unscaled model hold the same tensors")
same_rest = [n for n in U if n not in tail and T.get(n) != U[n]]
check(not same_rest, "the target equals the unscaled model outside the tail's output projections",
      "differ: %s" % same_rest)
bad_tail = []
for n in sorted(tail):
    k = len(U[n][1]) // 4
    u = struct.unpack("<%df" % k, U[n][1])
    want = struct.pack("<%df" % k, *(struct.unpack("<f", struct.pack("<f", v * struct.unpack("<f", struct.pack(
        "<f", 0.02))[0]))[0] for v in u))
    if T[n][1] != want or T[n][1] == U[n][1]:
        bad_tail.append(n)
check(not bad_tail, "blocks 2-5's attn_output and ffn_down are the unscaled values times 0.02 (f32)",
      "differ: %s" % bad_tail)


# 2. runs
def run(model, extra):
    args = [oxl, "run", "-m", model, "-p", "The river rises in the hills", "-n", "48", "--temp", "0", "-t", "2",
            "-c", "512", "-fa", "off", "-ctk", "f32", "-ctv", "f32"] + extra
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def counts(err):
    d = re.search(r"n_drafted = (\d+)", err)
    a = re.search(r"n_accept  = (\d+)", err)
    return (int(d.group(1)), int(a.group(1))) if d and a else (0, 0)


# --tied: no output matrix (the head is token_embd), and greedy generation falls into repeating the
# last token, which n-gram drafting then proposes: accepted, and the plain text
tied = os.path.join(work, "pair-tied.gguf")
if synth(tied, ["--n-layer", "6", "--tied"]):
    TT = tensors(tied)
    check("output.weight" not in TT and TT["token_embd.weight"] == U["token_embd.weight"] and len(TT) == len(U) - 1,
          "--tied: no output.weight, the same token_embd", "tensors: %s" % sorted(TT))
    rc, plain, err = run(tied, ["-n", "64"])
    check(rc == 0, "tied model, plain greedy: exit 0", err)
    rc, out, err = run(tied, ["-n", "64", "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2",
                              "--spec-ngram-simple-size-m", "8"])
    drafted, accepted = counts(err)
    check(rc == 0 and out == plain and accepted > 0,
          "tied model, ngram-simple 2/8: exit 0, the plain text, drafts accepted (%d of %d)" % (accepted, drafted),
          "exit %d\nplain: %r\nspec:  %r\n%s" % (rc, plain, out, err[-600:]))

# --recite: a model that goes on with a passage the prompt quotes (n-gram drafting's case)
passage = ("The river rises among granite hills above a quiet village where melting snow gathers every spring "
           "before winding past orchards near old stone bridges")
p = subprocess.run([oxl, "tokenize", "-m", target, "--ids", "--no-bos", "-p", passage], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=60)
ids = [int(v) for v in re.findall(r"\d+", p.stdout.decode())]
check(p.returncode == 0 and len(ids) > 20 and len({a: b for a, b in zip(ids, ids[1:])}) == len(ids) - 1,
      "the passage: %d tokens, each followed by one token only" % len(ids), p.stderr.decode())
recite = os.path.join(work, "pair-recite.gguf")
if synth(recite, ["--n-layer", "6", "--tail-from", "0", "--tail-scale", "0.002", "--recite", str(ids)]):
    R = tensors(recite)
    n_embd = 256
    row = 4 * n_embd
    emb, out_r, out_u = R["token_embd.weight"][1], R["output.weight"][1], U["output.weight"][1]
    succ = {b: a for a, b in zip(ids, ids[1:])}
    bad_rows = [b for b in range(len(out_r) // row)
                if out_r[b * row:(b + 1) * row] != (emb[succ[b] * row:(succ[b] + 1) * row] if b in succ
                                                    else out_u[b * row:(b + 1) * row])]
    check(emb == U["token_embd.weight"][1] and not bad_rows,
          "--recite: output row b = the embedding of the id before b in the passage, the others unchanged",
          "rows differing: %s" % bad_rows[:10])
    prompt = "Summarise the following text. Text: %s Summary: The" % passage
    args = [oxl, "run", "-m", recite, "-p", prompt, "-n", "40", "--temp", "0", "-t", "2", "-c", "512", "-fa", "off",
            "-ctk", "f32", "-ctv", "f32"]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    plain = p.stdout.decode("utf-8", "replace")
    check(p.returncode == 0 and plain.startswith(prompt + passage[len("The"):]),
          "--recite model: greedy generation goes on with the quoted passage", plain[-400:])
    # 4/16: llama.cpp's default 12/48 drafts only once the history exceeds 61 tokens
    p = subprocess.run(args + ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "4",
                               "--spec-ngram-simple-size-m", "16"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    err = p.stderr.decode("utf-8", "replace")
    drafted, accepted = counts(err)
    check(p.returncode == 0 and p.stdout.decode("utf-8", "replace") == plain and accepted >= 20 and
          2 * accepted >= drafted,
          "--recite model, ngram-simple 4/16: the plain text, %d of %d drafts accepted" % (accepted, drafted),
          err[-600:])

rates = {}
for model, name in ((target, "scaled"), (plain_target, "unscaled")):
    rc, plain, err = run(model, [])
    check(rc == 0 and len(plain) > 40, "%s target, plain greedy: exit 0" % name, err)
    for label, extra in (("-md draft --draft-p-min 0 --draft-max 4", ["-md", draft, "--draft-p-min", "0",
                                                                       "--draft-max", "4"]),
                         ("--spec-type ngram-simple 2/8", ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n",
                                                           "2", "--spec-ngram-simple-size-m", "8"])):
        rc, out, err = run(model, extra)
        check(rc == 0 and out == plain, "%s target, %s: exit 0, the plain text" % (name, label),
              "exit %d\nplain: %r\nspec:  %r\n%s" % (rc, plain, out, err[-600:]))
        drafted, accepted = counts(err)
        if label.startswith("-md"):
            rates[name] = accepted / drafted if drafted else 0.0
            check(drafted > 0, "%s target, %s: drafts made (%d drafted, %d accepted)" % (name, label, drafted,
                                                                                       accepted), err[-600:])
check(rates.get("scaled", 0) >= 0.5, "scaled pair: at least half the drafts accepted (%.0f %%)" %
      (100 * rates.get("scaled", 0)))
check(rates.get("scaled", 0) > rates.get("unscaled", 1), "fewer accepted on the unscaled target (%.0f %% vs %.0f %%)" %
      (100 * rates.get("unscaled", 0), 100 * rates.get("scaled", 0)))



# 3. oxillama bench --draft
def bench(extra):
    p = subprocess.run([oxl, "bench", "-m", target, "-p", "0", "-n", "16", "-t", "2", "-r", "2"] + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


spec = ["--draft", draft, "--draft-max", "4", "--draft-p-min", "0"]
rc, out, err = bench(spec + ["-o", "json"])
try:
    import json
    rows = json.loads(out)
    row = rows[0] if len(rows) == 1 else {}
except ValueError:
    row = {}
check(rc == 0 and row.get("model_draft") == draft and row.get("n_gen") == 16,
      "bench --draft -o json: exit 0, one tg16 row naming the draft", "exit %d\n%s\n%s" % (rc, out, err))
nd, na = row.get("n_drafted", 0), row.get("n_accepted", -1)
# 2 timed runs of 16 tokens: at most 15 accepted per run (each round ends with a token of the target's)
check(0 < nd and 2 * na >= nd and na <= nd and na <= 30,
      "bench --draft: drafts made and at least half accepted (%s of %s)" % (na, nd), out)
rc, out, err = bench(spec + ["-o", "csv"])
lines = out.strip().split("\n")
check(rc == 0 and len(lines) == 2 and lines[0].endswith(",model_draft,n_drafted,n_accepted") and
      len(lines[0].split(",")) == len(lines[1].split('","')), "bench --draft -o csv: the draft fields, one per value",
      out + err)
rc, out, err = bench(spec)
check(rc == 0 and "| draft acc % |" in out and re.search(r"tg16 \|[^|]+\| +[0-9.]+ \|", out) is not None,
      "bench --draft (md): the draft acc % column", out + err)
rc, out, err = bench(spec + ["-p", "4"])
check(rc == 0 and re.search(r"pp4 \|[^|]+\| +\|", out) is not None,
      "bench --draft: prompt tests run plainly, their draft column empty", out + err)
for bad, needle in ((["--draft", os.path.join(root, "models", "stories260K.gguf")], "draft model incompatible"),
                    (["--draft", draft, "--draft-max", "0"], "--draft-max: invalid value '0'"),
                    (["--draft", draft, "--draft-p-min", "2"], "--draft-p-min: invalid value '2'")):
    rc, out, err = bench(bad)
    check(rc == 1 and needle in err, "bench %s: exit 1 naming it" % " ".join(bad[-2:]), "exit %d\n%s" % (rc, err))

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
