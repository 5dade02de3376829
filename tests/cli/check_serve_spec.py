#!/usr/bin/env python3
"""Speculative decoding in `oxillama serve` (llama-server's -md, --spec-type, --draft-max/-min/-p-min
and the per-request speculative.n_max / n_min / p_min), on the model pair of the run tests
(tests/cli/check_spec.py): every slot drafts and verifies, and greedy output is that of plain
decoding.

1. serve -m models/stories260K.gguf -md models/stories260K-Q8_0.gguf -np 2:
   - /completion with golden/run/once.prompt, 64 tokens at temperature 0: llama.cpp's greedy text
     (golden/run/once.expected, llama-simple) with drafts made (timings.draft_n > 0,
     0 <= draft_n_accepted <= draft_n); /v1/completions the same text;
   - 200 tokens with "speculative.p_min": 0 (long drafts, many rejected: the cache rewinds) equal to
     the same request with "speculative.n_max": 0 (no drafting: no draft_n in timings), for two
     prompts sent at once (two slots drafting in one batch);
   - /metrics: llamacpp:spec_decode_num_draft_tokens_total and _accepted_tokens_total equal the
     first reply's draft_n and draft_n_accepted, then grow by the two later replies' ones;
     llamacpp:spec_decode_num_drafts_total (verification steps with a draft) grows too;
   - bad speculative fields are 400s naming them; SIGTERM: exit status 0.
2. --spec-type ngram-simple --spec-ngram-simple-size-n 2 --spec-ngram-simple-size-m 8 (no draft
   model): 200 greedy tokens equal to plain decoding, with drafts made.
3. Refused at start, exit status 1 with the named error: a recurrent model (golden/arch/mamba.gguf)
   with ngram-simple, an unknown --spec-type, --draft-max 0, a missing draft file.

usage: check_serve_spec.py OXILLAMA PROJECT_DIR
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

oxl, root = sys.argv[1:3]
G = os.path.join(root, "golden")
M = os.path.join(root, "models")
target = os.path.join(M, "stories260K.gguf")
draft = os.path.join(M, "stories260K-Q8_0.gguf")
prompt = open(os.path.join(G, "run", "once.prompt")).read()
want64 = open(os.path.join(G, "run", "once.expected"), "rb").read().decode("utf-8", "replace")
failures = 0


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

    def req(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request(self.base + path, data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=300) as f:
                raw = f.read()
                return f.status, json.loads(raw) if path != "/metrics" else raw.decode()
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return -1


def native(srv, text, n, extra):
    body = {"prompt": text, "n_predict": n, "temperature": 0}
    body.update(extra)
    return srv.req("POST", "/completion", body)


def metric(text, name):
    m = re.search(r"^llamacpp:%s (\d+)$" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else None


prompts = [prompt, "Lily and Ben went to the park"]

# 1. a draft model
srv = Server(["-m", target, "-md", draft, "-np", "2"])
check(srv.base is not None and "draft model" in srv.text(), "serve -md stories260K-Q8_0 starts", srv.text())
if srv.base:
    drafted = accepted = 0
    st, rep = native(srv, prompt, 64, {})
    t = rep.get("timings", {}) if st == 200 else {}
    check(st == 200 and rep["content"] == want64 and t.get("draft_n", 0) > 0 and
          0 <= t.get("draft_n_accepted", -1) <= t["draft_n"],
          "/completion 64 greedy tokens with drafts: llama.cpp's text (draft_n %s, accepted %s)" %
          (t.get("draft_n"), t.get("draft_n_accepted")), rep)
    if st == 200:
        drafted += t.get("draft_n", 0)
        accepted += t.get("draft_n_accepted", 0)
    names = ("spec_decode_num_draft_tokens_total", "spec_decode_num_accepted_tokens_total",
             "spec_decode_num_drafts_total")
    st, met = srv.req("GET", "/metrics")
    got = tuple(metric(met, n) for n in names) if st == 200 else None
    check(got is not None and got[:2] == (drafted, accepted) and got[2] > 0 and
          "# TYPE llamacpp:spec_decode_num_draft_tokens_total counter" in met,
          "/metrics after it: llamacpp:spec_decode_num_draft_tokens_total, _accepted_tokens_total, _drafts_total %s "
          "(the reply's %d, %d)" % (got, drafted, accepted))
    st, rep = srv.req("POST", "/v1/completions", {"prompt": prompt, "max_tokens": 64, "temperature": 0})
    check(st == 200 and rep["choices"][0]["text"] == want64, "/v1/completions with drafts: llama.cpp's text", rep)
    st, met = srv.req("GET", "/metrics")
    base = tuple(metric(met, n) for n in names) if st == 200 else (0, 0, 0)
    drafted, accepted = base[0], base[1]

    res = {}

    def worker(k, extra):
        res[k] = native(srv, prompts[k[0]], 200, extra)

    for extra_name, extra in (("p_min 0", {"speculative.p_min": 0}), ("n_max 0", {"speculative.n_max": 0})):
        threads = [threading.Thread(target=worker, args=((k, extra_name), extra)) for k in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    for k in range(2):
        st_s, spec = res[(k, "p_min 0")]
        st_p, plain = res[(k, "n_max 0")]
        ts = spec.get("timings", {}) if st_s == 200 else {}
        tp = plain.get("timings", {}) if st_p == 200 else {}
        check(st_s == 200 and st_p == 200 and spec["content"] == plain["content"] and len(plain["content"]) > 0 and
              ts.get("draft_n", 0) > ts.get("draft_n_accepted", 0) and "draft_n" not in tp,
              "prompt %d, 200 tokens, two slots at once: speculative.p_min 0 (draft_n %s, accepted %s) gives the "
              "text of speculative.n_max 0 (no drafts)" % (k, ts.get("draft_n"), ts.get("draft_n_accepted")),
              "spec:  %r\nplain: %r" % (spec, plain))
        drafted += ts.get("draft_n", 0)
        accepted += ts.get("draft_n_accepted", 0)
    st, met = srv.req("GET", "/metrics")
    dn, da, steps = (metric(met, n) if st == 200 else None for n in names)
    check(dn == drafted and da == accepted and steps is not None and steps > base[2],
          "/metrics at the end: draft tokens %s, accepted %s (before the two requests, plus their draft_n and "
          "draft_n_accepted: %d, %d), drafts %s" % (dn, da, drafted, accepted, steps))
    for field, value, frag in (("speculative.p_min", 2, "speculative.p_min"),
                               ("speculative.n_max", "x", "speculative.n_max"),
                               ("speculative.n_min", 1.5, "speculative.n_min")):
        st, rep = native(srv, prompt, 4, {field: value})
        check(st == 400 and rep["error"].get("param") == frag, "\"%s\": %r is a 400 naming it" % (field, value), rep)
    rc = srv.stop()
    check(rc == 0, "SIGTERM: exit status 0 (%s)" % rc)

# 2. n-grams alone
srv = Server(["-m", target, "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2",
              "--spec-ngram-simple-size-m", "8"])
check(srv.base is not None, "serve --spec-type ngram-simple starts", srv.text())
if srv.base:
    st_s, spec = native(srv, prompt, 200, {})
    st_p, plain = native(srv, prompt, 200, {"speculative.n_max": 0})
    ts = spec.get("timings", {}) if st_s == 200 else {}
    check(st_s == 200 and st_p == 200 and spec["content"] == plain["content"] and ts.get("draft_n", 0) > 0 and
          spec["content"].startswith(want64),
          "ngram-simple 2/8, 200 greedy tokens: the plain text, llama.cpp's first 64 (draft_n %s, accepted %s)" %
          (ts.get("draft_n"), ts.get("draft_n_accepted")), "spec:  %r\nplain: %r" % (spec, plain))
    rc = srv.stop()
    check(rc == 0, "SIGTERM: exit status 0 (%s)" % rc)

# 3. refusals
for what, args, frag in (
        ("a recurrent model", ["-m", os.path.join(G, "arch", "mamba.gguf"), "--spec-type", "ngram-simple"],
         "speculative decoding needs a model whose cache can rewind: mamba"),
        ("an unknown --spec-type", ["-m", target, "--spec-type", "ngram-bogus"],
         "unknown or unsupported type 'ngram-bogus'"),
        ("--draft-max 0", ["-m", target, "-md", draft, "--draft-max", "0"], "--draft-max >= 1"),
        ("a missing draft file", ["-m", target, "-md", os.path.join(M, "absent.gguf")], "draft model: ")):
    r = subprocess.run([oxl, "serve", "--port", "0", "-t", "2"] + args, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=60)
    err = r.stderr.decode("utf-8", "replace")
    check(r.returncode == 1 and frag in err, "%s: exit 1, '%s'" % (what, frag), (r.returncode, err[-400:]))

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
