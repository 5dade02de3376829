#!/usr/bin/env python3
"""LoRA adapters in `oxillama serve` (llama-server's --lora / --lora-scaled, --lora-init-without-apply,
GET / POST /lora-adapters and the per-request "lora" field), checked against llama.cpp's outputs
with the same adapters and scales (golden/lora/README.md):

1. serve -m golden/arch/llama.gguf --lora llama.lora-a.gguf --lora llama.lora-b.gguf (global scales
   1 and 1; llama-completion's default cache and attention, as the greedy texts were made):
   - GET /lora-adapters lists ids 0 and 1 with their files and scale 1;
   - /v1/completions with "lora": [{"id": 0, "scale": 0.5}, {"id": 1, "scale": 0.75}], the prompt of
     golden/run/once.prompt, 64 tokens at temperature 0: llama-completion's greedy text with
     --lora-scaled a:0.5,b:0.75 (llama.lora-ab.expected); with [{"id": 0, "scale": 1}] (b not
     listed: scale 0): llama.lora-a.expected; both kinds sent at once, three of each, so the
     scheduler decodes requests of different scales in turns;
   - a bad "lora" (an unknown id, not a list, an entry with a non-number scale or another member)
     and bad POST /lora-adapters bodies are 400s naming the field and id;
   - POST /lora-adapters [{"id": 0, "scale": 1}] answers {"success": true}, GET shows scales 1 and
     0, and a request without "lora" then gives llama.lora-a.expected;
   - the server exits 0 on SIGTERM.
   Then, with an f32 KV cache and flash attention off (as the logits golden was made): /completion
   with the 48 prompt tokens of llama.lora-ab.logits.gguf, "lora" a:0.5,b:0.75, 16 tokens at
   temperature 0 with n_probs 5: llama.cpp's 16 greedy tokens (the golden's "greedy"), and the first
   token's logprob and top 5 equal to log_softmax of llama.cpp's logits at the last prompt position
   (to 1e-3).
2. --lora-init-without-apply --lora llama.lora-a.gguf: GET shows scale 0; a request without "lora"
   gives the text of `oxillama run` without adapters (and not llama.lora-a.expected), one with
   [{"id": 0, "scale": 1}] gives llama.lora-a.expected.
3. --lora-init-without-apply without adapters: exit 1 naming the option.

usage: check_serve_lora.py OXILLAMA PROJECT_DIR
"""
import json
import math
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import Gguf  # noqa: E402

oxl, root = sys.argv[1:3]
G = os.path.join(root, "golden")
model = os.path.join(G, "arch", "llama.gguf")
lora_a = os.path.join(G, "lora", "llama.lora-a.gguf")
lora_b = os.path.join(G, "lora", "llama.lora-b.gguf")
prompt = open(os.path.join(G, "run", "once.prompt")).read()
failures = 0


def expected(name):
    return open(os.path.join(G, "lora", name), "rb").read().decode("utf-8", "replace")


def check(ok, what, detail=""):
    global failures
    print(("PASS  " if ok else "FAIL  ") + what)
    if not ok:
        failures += 1
        if detail:
            print("  " + str(detail).replace("\n", "\n  "))


class Server:
    def __init__(self, args):
        self.log = tempfile.TemporaryFile()
        self.p = subprocess.Popen([oxl, "serve", "--port", "0", "-t", "2"] + args, stdout=subprocess.DEVNULL,
                                  stderr=self.log)
        self.base = None
        for _ in range(600):
            text = self.text()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if m and "loaded in" in text:
                self.base = "http://127.0.0.1:%s" % m.group(1)
                return
            if self.p.poll() is not None:
                return
            time.sleep(0.05)

    def text(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def req(self, method, path, body=None, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        r = urllib.request.Request(self.base + path, data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=120) as f:
                return f.status, json.loads(f.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return -1


def completion(srv, extra):
    body = {"prompt": prompt, "max_tokens": 64, "temperature": 0}
    body.update(extra)
    st, rep = srv.req("POST", "/v1/completions", body)
    return st, rep["choices"][0]["text"] if st == 200 else rep


AB = [{"id": 0, "scale": 0.5}, {"id": 1, "scale": 0.75}]
A = [{"id": 0, "scale": 1}]

# 1. two adapters, per-request and global scales
srv = Server(["-m", model, "--lora", lora_a, "--lora", lora_b, "-np", "3"])
check(srv.base is not None, "serve --lora a --lora b starts", srv.text())
if srv.base:
    st, rep = srv.req("GET", "/lora-adapters")
    check(st == 200 and rep == [{"id": 0, "path": lora_a, "scale": 1}, {"id": 1, "path": lora_b, "scale": 1}],
          "GET /lora-adapters: ids 0 and 1, their files, scale 1", (st, rep))
    for name, lora, want in (("a:0.5,b:0.75", AB, "llama.lora-ab.expected"), ("a:1", A, "llama.lora-a.expected")):
        st, got = completion(srv, {"lora": lora})
        check(st == 200 and got == expected(want), "\"lora\" %s: llama.cpp's greedy text (%s)" % (name, want),
              "status %s\n want: %r\n got:  %r" % (st, expected(want), got))

    results = {}

    def worker(k, lora):
        results[k] = completion(srv, {"lora": lora})

    threads = [threading.Thread(target=worker, args=(k, AB if k % 2 else A)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = all(results[k] == (200, expected("llama.lora-ab.expected" if k % 2 else "llama.lora-a.expected"))
             for k in range(6))
    check(ok, "six requests at once, two sets of scales: each its golden text", results)

    for what, body, frag in (
            ("unknown id", {"lora": [{"id": 2, "scale": 1}]}, "invalid adapter id 2"),
            ("negative id", {"lora": [{"id": -1, "scale": 1}]}, "invalid adapter id -1"),
            ("not a list", {"lora": {"id": 0, "scale": 1}}, "must be an array"),
            ("scale not a number", {"lora": [{"id": 0, "scale": "x"}]}, "scale must be a number"),
            ("another member", {"lora": [{"id": 0, "scale": 1, "path": "x"}]}, "'path' is not a field")):
        st, rep = completion(srv, body)
        msg = rep.get("error", {}).get("message", "") if st != 200 else ""
        check(st == 400 and frag in msg and rep["error"].get("param") == "lora",
              "\"lora\" with %s: 400 naming it (%s)" % (what, msg), rep)
    for what, raw, frag in (("an object", b'{"id": 0, "scale": 1}', "must be a JSON array"),
                            ("an unknown id", b'[{"id": 5, "scale": 1}]', "invalid adapter id 5")):
        st, rep = srv.req("POST", "/lora-adapters", raw=raw)
        msg = rep.get("error", {}).get("message", "")
        check(st == 400 and frag in msg, "POST /lora-adapters with %s: 400 (%s)" % (what, msg), rep)

    st, rep = srv.req("POST", "/lora-adapters", [{"id": 0, "scale": 1}])
    check(st == 200 and rep == {"success": True}, "POST /lora-adapters [{id 0, scale 1}]: success", (st, rep))
    st, rep = srv.req("GET", "/lora-adapters")
    check(st == 200 and [a["scale"] for a in rep] == [1, 0], "GET /lora-adapters after it: scales 1 and 0", rep)
    st, got = completion(srv, {})
    check(st == 200 and got == expected("llama.lora-a.expected"),
          "no \"lora\" field: the global scales, llama.lora-a.expected", got)
    rc = srv.stop()
    check(rc == 0, "SIGTERM: exit status 0 (%s)" % rc)

# 1b. llama.cpp's logits (an f32 KV cache and flash attention off, as the golden was made)
srv = Server(["-m", model, "--lora", lora_a, "--lora", lora_b, "-ctk", "f32", "-ctv", "f32", "-fa", "off"])
check(srv.base is not None, "serve --lora a --lora b -ctk f32 -ctv f32 -fa off starts", srv.text())
if srv.base:
    g = Gguf(os.path.join(G, "lora", "llama.lora-ab.logits.gguf"))
    n_vocab = g.meta["golden.n_vocab"]
    toks = list(struct.unpack("<%di" % g.tensor["tokens"][0][0], g.tensor["tokens"][2]))
    greedy = list(struct.unpack("<%di" % g.tensor["greedy"][0][0], g.tensor["greedy"][2]))
    raw = g.tensor["logits"][2]
    last = struct.unpack_from("<%df" % n_vocab, raw, 4 * n_vocab * (len(toks) - 1))
    mx = max(last)
    lse = mx + math.log(sum(math.exp(x - mx) for x in last))
    ref = sorted(((x - lse, i) for i, x in enumerate(last)), reverse=True)
    st, rep = srv.req("POST", "/completion", {"prompt": toks, "n_predict": 16, "temperature": 0, "n_probs": 5,
                                               "return_tokens": True, "lora": AB})
    if st == 200:
        got_toks = rep["tokens"]
        first = rep["completion_probabilities"][0]
        tops = [(t["logprob"], t["id"]) for t in first["top_logprobs"]]
        diff = max([abs(first["logprob"] - ref[0][0])] + [abs(a[0] - b[0]) for a, b in zip(tops, ref[:5])])
        ids_ok = [t[1] for t in tops] == [r[1] for r in ref[:5]] and first["id"] == ref[0][1]
        check(rep["tokens_evaluated"] == len(toks) and got_toks == greedy and ids_ok and diff < 1e-3,
              "/completion, 48 golden tokens, \"lora\" a:0.5,b:0.75: llama.cpp's 16 greedy tokens, first logprob "
              "and top 5 to %.2e" % diff, "tokens %s\n want   %s\n top %s\n want %s" % (got_toks, greedy, tops, ref[:5]))
    else:
        check(False, "/completion with golden tokens and \"lora\"", (st, rep))

    rc = srv.stop()
    check(rc == 0, "SIGTERM: exit status 0 (%s)" % rc)

# 2. --lora-init-without-apply
plain = subprocess.run([oxl, "run", "-m", model, "-p", prompt, "-n", "64", "--temp", "0", "-t", "2"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=120)
check(plain.returncode == 0, "oxillama run without adapters: exit status 0")
plain_text = plain.stdout.decode("utf-8", "replace")[len(prompt):]
srv = Server(["-m", model, "--lora", lora_a, "--lora-init-without-apply"])
check(srv.base is not None, "serve --lora a --lora-init-without-apply starts", srv.text())
if srv.base:
    st, rep = srv.req("GET", "/lora-adapters")
    check(st == 200 and rep == [{"id": 0, "path": lora_a, "scale": 0}], "GET /lora-adapters: scale 0", rep)
    st, got = completion(srv, {})
    check(st == 200 and got == plain_text and got != expected("llama.lora-a.expected"),
          "no \"lora\": the model without the adapter (oxillama run's text)", "want %r\ngot  %r" % (plain_text, got))
    st, got = completion(srv, {"lora": A})
    check(st == 200 and got == expected("llama.lora-a.expected"), "\"lora\" a:1: llama.lora-a.expected", got)
    rc = srv.stop()
    check(rc == 0, "SIGTERM: exit status 0 (%s)" % rc)

# 3. --lora-init-without-apply alone
r = subprocess.run([oxl, "serve", "--port", "0", "-m", model, "--lora-init-without-apply"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=60)
err = r.stderr.decode("utf-8", "replace")
check(r.returncode == 1 and "--lora-init-without-apply needs --lora" in err,
      "--lora-init-without-apply without adapters: exit 1 naming it", (r.returncode, err))

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
