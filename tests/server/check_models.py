#!/usr/bin/env python3
"""Several models in one `oxillama serve` (--models-dir, repeated -m/--alias, --models-max).

usage: check_models.py OXILLAMA_BINARY GOLDEN_ARCH_DIR

Three tiny random models of different architectures (golden/arch/ llama, qwen3, gemma2) are served
at once. Each golden's `tokens` (the 48 prompt ids, BOS included) sent to /completion as a token
prompt with greedy sampling must give the golden's `greedy` ids (llama.cpp's argmax continuation,
f32 KV cache, hence -ctk f32 -ctv f32 here) for the model the request names. With --models-max 2:
after A, B, C, /v1/models shows A unloaded and B, C loaded; A again unloads B; an unknown name is a
404 model_not_found listing the ids; a file that is not a model fails to load with a 500 naming it;
requests to two models at once both get their golden ids; a model with a stream in flight is never
unloaded (B and C requested during a long stream on A unload each other instead), and the stream
ends complete. The server then exits 0 on SIGTERM. Every wait is bounded.
"""
import http.client
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import Gguf  # noqa: E402

ARCHS = ["llama", "qwen3", "gemma2"]
failures = []


def check(cond, what):
    print(("PASS  " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)
    return cond


def golden(arch_dir, name):
    t = Gguf(os.path.join(arch_dir, name + ".logits.gguf")).tensor
    tokens = list(struct.unpack("<%di" % t["tokens"][0][0], t["tokens"][2]))
    greedy = list(struct.unpack("<%di" % t["greedy"][0][0], t["greedy"][2]))
    return tokens, greedy


class Server:
    def __init__(self, binary, args, work, name):
        self.log_path = os.path.join(work, name + ".log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", "-t", "1", "-np", "2", "-ctk", "f32",
                                      "-ctv", "f32"] + args, stdout=subprocess.DEVNULL, stderr=self.log)
        self.port = None
        for _ in range(300):
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(self.log_path).read())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if self.port is None:
            print(open(self.log_path).read())
            raise SystemExit("FAIL  server start")

    def request(self, method, path, body=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=None if body is None else json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, data.decode("utf-8", "replace")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "timeout"
        self.log.close()
        check(rc == 0, "exit status 0 after SIGTERM (got %s)" % rc)


def complete(srv, model, prompt, n=16):
    body = {"prompt": prompt, "n_predict": n, "temperature": 0, "top_k": 1, "return_tokens": True,
            "cache_prompt": False}
    if model is not None:
        body["model"] = model
    return srv.request("POST", "/completion", body)


def states(srv):
    st, o = srv.request("GET", "/v1/models")
    if st != 200:
        return {}
    return {m["id"]: m["status"]["value"] for m in o["data"]}


def check_greedy(srv, model, g, what):
    st, o = complete(srv, model, g[0])
    ok = st == 200 and isinstance(o, dict) and o.get("tokens") == g[1]
    check(ok, "%s: %s gives the golden greedy ids" % (what, model))
    if not ok:
        print("      status %s, reply %s" % (st, str(o)[:400]))
        print("      expected %s" % g[1])
    return ok


def through_dir(binary, arch_dir, gold, work):
    d = os.path.join(work, "models")
    os.mkdir(d)
    for a in ARCHS:
        os.symlink(os.path.join(arch_dir, a + ".gguf"), os.path.join(d, a + ".gguf"))
    with open(os.path.join(d, "broken.gguf"), "wb") as f:
        f.write(b"not a gguf file")
    srv = Server(binary, ["--models-dir", d, "--models-max", "2"], work, "dir")
    st, o = srv.request("GET", "/v1/models")
    ids = [m["id"] for m in o["data"]] if st == 200 else []
    check(ids == ["broken", "gemma2", "llama", "qwen3"], "--models-dir: /v1/models lists the files by name: %s" % ids)
    check(all(v == "unloaded" for v in states(srv).values()), "--models-dir: nothing loaded before a request")

    st, o = complete(srv, "no-such-model", gold["llama"][0])
    msg = o["error"]["message"] if isinstance(o, dict) and "error" in o else ""
    check(st == 404 and o["error"]["code"] == "model_not_found" and all("'%s'" % a in msg for a in ARCHS),
          "unknown model: 404 model_not_found listing the ids (%s %s)" % (st, msg[:200]))

    st, o = complete(srv, "broken", gold["llama"][0])
    msg = o["error"]["message"] if isinstance(o, dict) and "error" in o else ""
    check(st == 500 and o["error"]["code"] == "model_load_failed" and "broken.gguf" in msg,
          "a file that is not a model: 500 model_load_failed naming it (%s %s)" % (st, msg[:200]))
    st, o = srv.request("GET", "/v1/models/broken")
    check(st == 200 and o["status"] == {"value": "unloaded", "failed": True},
          "/v1/models/broken: unloaded, failed (%s)" % (o.get("status") if isinstance(o, dict) else o))

    # A, B, C with --models-max 2: A is unloaded; A again unloads B (the least recently used)
    a, b, c = "llama", "qwen3", "gemma2"
    for m in (a, b, c):
        check_greedy(srv, m, gold[m], "--models-dir")
    s = states(srv)
    check(s.get(a) == "unloaded" and s.get(b) == "loaded" and s.get(c) == "loaded",
          "after A, B, C: A unloaded, B and C loaded: %s" % s)
    st, o = srv.request("GET", "/v1/models/" + b)
    check(st == 200 and isinstance(o.get("meta"), dict) and o["meta"].get("n_vocab") == 512,
          "a loaded model's entry keeps its meta")
    check_greedy(srv, a, gold[a], "--models-dir, again")
    s = states(srv)
    check(s.get(a) == "loaded" and s.get(b) == "unloaded" and s.get(c) == "loaded",
          "A again: B unloaded, A and C loaded: %s" % s)
    # ?model= on a GET route, and a request without a model (the most recently used: A)
    st, o = srv.request("GET", "/props?model=" + c)
    check(st == 200 and c in json.dumps(o), "/props?model=%s answers for that model" % c)
    st, o = complete(srv, None, gold[c][0])
    check(st == 200 and o.get("model") == c and o.get("tokens") == gold[c][1],
          "no model named: the most recently used (%s) answers (%s)" % (c, o.get("model") if isinstance(o, dict) else st))

    # two models at once: one loaded (C), one to load (B, which unloads A)
    out = {}

    def run(m):
        out[m] = complete(srv, m, gold[m][0])

    th = [threading.Thread(target=run, args=(m,)) for m in (b, c)]
    for t in th:
        t.start()
    for t in th:
        t.join(120)
    for m in (b, c):
        st, o = out.get(m, (0, None))
        check(st == 200 and o.get("tokens") == gold[m][1], "concurrent requests: %s gives its golden ids" % m)
    s = states(srv)
    check(s.get(a) == "unloaded" and s.get(b) == "loaded" and s.get(c) == "loaded",
          "after the concurrent pair: A unloaded: %s" % s)
    srv.stop()


def through_m(binary, arch_dir, gold, work):
    args = ["--models-max", "2"]
    for m in ARCHS:
        args += ["-m", os.path.join(arch_dir, m + ".gguf"), "--alias", "m-" + m]
    srv = Server(binary, args, work, "m")
    st, o = srv.request("GET", "/models")
    ids = [m["id"] for m in o["data"]] if st == 200 else []
    check(ids == ["m-" + m for m in ARCHS], "repeated -m/--alias: /models lists the aliases in order: %s" % ids)
    for m in ARCHS:
        check_greedy(srv, "m-" + m, gold[m], "-m/--alias")
    # the chat-style route takes the name too, and echoes it
    st, o = srv.request("POST", "/v1/completions", {"model": "m-qwen3", "prompt": gold["qwen3"][0],
                                                    "max_tokens": 4, "temperature": 0})
    check(st == 200 and o.get("model") == "m-qwen3", "/v1/completions: the reply names the model (%s)" % st)

    # a stream in flight on A: B and C requested meanwhile unload each other, never A
    a, b, c = "m-llama", "m-qwen3", "m-gemma2"
    n_long = 1900
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    conn.request("POST", "/completion", body=json.dumps({
        "model": a, "prompt": gold["llama"][0], "n_predict": n_long, "temperature": 0, "top_k": 1,
        "ignore_eos": True, "stream": True, "cache_prompt": False}), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    first = r.readline()
    check(r.status == 200 and first.startswith(b"data: "), "a long stream on A starts")
    check_greedy(srv, b, gold["qwen3"], "during A's stream")
    check_greedy(srv, c, gold["gemma2"], "during A's stream")
    s = states(srv)
    check(s.get(a) == "loaded" and s.get(b) == "unloaded" and s.get(c) == "loaded",
          "during A's stream: A stays loaded, B unloaded for C: %s" % s)
    toks, last = [], None
    line = first
    while line:
        if line.startswith(b"data: "):
            ev = json.loads(line[6:])
            toks += ev.get("tokens", [])
            if ev.get("stop"):
                last = ev
        line = r.readline()
    conn.close()
    check(last is not None and last.get("tokens_predicted") == n_long and len(toks) == n_long
          and toks[:16] == gold["llama"][1],
          "A's stream ends complete: %d tokens, the first 16 llama.cpp's" % len(toks))
    s = states(srv)
    check(s.get(a) == "loaded" and s.get(c) == "loaded", "after the stream: A and C loaded: %s" % s)
    srv.stop()


def main():
    binary, arch_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    gold = {a: golden(arch_dir, a) for a in ARCHS}
    with tempfile.TemporaryDirectory() as work:
        try:
            through_dir(binary, arch_dir, gold, work)
            through_m(binary, arch_dir, gold, work)
        except Exception as e:  # a crash of the server shows as a refused connection
            check(False, "unexpected %r" % e)
            for name in ("dir", "m"):
                p = os.path.join(work, name + ".log")
                if os.path.exists(p):
                    print("--- %s.log\n%s" % (name, open(p).read()[-3000:]))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
