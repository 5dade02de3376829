#!/usr/bin/env python3
"""oxillama serve: context shift and the request log.

Context shift (llama-server's tools/server/server-context.cpp), stories260K, greedy, prompt
golden/run/once.prompt (BOS + 4 tokens), -c 64 -np 2 (slots of 32 tokens):
  - default (no shift): the choice ends with finish_reason "length" when the next token would fill
    the slot (n_tokens + 1 >= n_ctx): 27 tokens, a prefix of llama.cpp's greedy text
    (golden/run/once.expected); the native /completion reply says truncated true;
  - --context-shift: max_tokens 100 are all generated (more than the slot holds), with a shift of
    n_keep = 1 (BOS; --keep 0), n_discard = (31 - 1) / 2 = 15 at the 27th, 42nd, 57th, 72nd and
    87th decode (5 lines with -v), and the text before the first shift is the text without shift;
  - a model that cannot shift (mamba) starts with a warning and context shift off.
Request log: one line per request on stderr, its method, route, status and token counts equal to
what the replies say (usage), in text and --log-format json (each line a JSON object); none with
--log-disable or --log-verbosity 2.
usage: check_ctx_shift_serve.py OXILLAMA MODEL MAMBA_MODEL PROMPT_FILE EXPECTED_FILE
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN, MODEL, MAMBA, PROMPT_FILE, EXPECTED_FILE = sys.argv[1:6]
PROMPT = open(PROMPT_FILE, encoding="utf-8").read()
EXPECTED = open(EXPECTED_FILE, encoding="utf-8").read()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL  " + what)


class Server:
    def __init__(self, *args, model=MODEL, quiet=False):
        """quiet: the server prints no startup lines; a free port is picked here and /health polled
        (/ready; those polls must not be logged either)."""
        self.log = tempfile.NamedTemporaryFile(prefix="ctxshift-", suffix=".log", delete=False)
        port = 0
        if quiet:
            with socket.socket() as sk:
                sk.bind(("127.0.0.1", 0))
                port = sk.getsockname()[1]
        self.proc = subprocess.Popen([BIN, "serve", "--port", str(port), "-m", model, "-t", "2", "-c", "64", "-np",
                                      "2", *args], stdout=subprocess.DEVNULL, stderr=self.log)
        self.base = None
        for _ in range(300):
            if quiet:
                self.base = "http://127.0.0.1:%d" % port
                try:
                    if self.call("GET", "/ready")[0] == 200:
                        break
                except (urllib.error.URLError, ConnectionError):
                    pass
                self.base = None
            else:
                text = self.text()
                m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", text)
                if m and "loaded in" in text:
                    self.base = m.group(1)
                    break
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if not self.base:
            print(self.text())
            sys.exit("FAIL  the server did not start")

    def text(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def call(self, method, path, body=None):
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        check(rc == 0, "server exit status %s" % rc)
        text = self.text()
        os.unlink(self.log.name)
        return text


def completion(srv, max_tokens, stream=False):
    body = {"prompt": PROMPT, "max_tokens": max_tokens, "temperature": 0}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    status, text = srv.call("POST", "/v1/completions", body)
    check(status == 200, "completion status %s: %s" % (status, text[:200]))
    if not stream:
        return json.loads(text)
    chunks = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: {")]
    return {"choices": [{"text": "".join(c["choices"][0]["text"] for c in chunks if c.get("choices")),
                         "finish_reason": [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")][-1]}],
            "usage": chunks[-1]["usage"]}


def parse_log(text, fmt):
    """The request lines of a server log: (method, route, status, prompt, generated) tuples."""
    out = []
    for line in text.splitlines():
        if fmt == "json" and line.startswith("{"):
            o = json.loads(line)  # each line parses
            check(set(o) == {"method", "route", "status", "prompt_tokens", "generated_tokens", "duration_ms"},
                  "json line members: %s" % line)
            check(o["duration_ms"] >= 0, "duration: %s" % line)
            out.append((o["method"], o["route"], o["status"], o["prompt_tokens"], o["generated_tokens"]))
        elif fmt == "text" and line.startswith("request: "):
            m = re.fullmatch(r"request: (\S+) (\S+) (\d+) prompt_tokens=(\d+) generated_tokens=(\d+) "
                             r"duration_ms=\d+\.\d{3}", line)
            check(m is not None, "text line: %r" % line)
            if m:
                out.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))))
    return sorted(out)


# --- no context shift (the default), JSON log --------------------------------------------------
srv = Server("--log-format", "json")
plain = completion(srv, 100)
c = plain["choices"][0]
check(c["finish_reason"] == "length", "no shift: finish_reason %r" % c["finish_reason"])
check(plain["usage"]["completion_tokens"] == 27, "no shift: %d tokens, want 27" % plain["usage"]["completion_tokens"])
check(len(c["text"]) > 40 and EXPECTED.startswith(c["text"]), "no shift: not llama.cpp's prefix: %r" % c["text"])
status, native = srv.call("POST", "/completion", {"prompt": PROMPT, "n_predict": 100, "temperature": 0})
native = json.loads(native)
check(status == 200 and native.get("truncated") is True and native.get("stop_type") == "limit" and
      native.get("tokens_predicted") == 27, "native /completion: %s" % {k: native.get(k) for k in
                                                                      ("truncated", "stop_type", "tokens_predicted")})
streamed = completion(srv, 5, stream=True)
check(streamed["usage"]["completion_tokens"] == 5, "stream usage %s" % streamed["usage"])
st_health, _ = srv.call("GET", "/health")
st_bad, _ = srv.call("POST", "/v1/completions", b"{not json")
st_missing, _ = srv.call("GET", "/no/such/route")
want = sorted([
    ("POST", "/v1/completions", 200, plain["usage"]["prompt_tokens"], plain["usage"]["completion_tokens"]),
    ("POST", "/completion", 200, native["tokens_evaluated"], native["tokens_predicted"]),
    ("POST", "/v1/completions", 200, streamed["usage"]["prompt_tokens"], streamed["usage"]["completion_tokens"]),
    ("GET", "/health", st_health, 0, 0),
    ("POST", "/v1/completions", st_bad, 0, 0),
    ("GET", "/no/such/route", st_missing, 0, 0),
])
check((st_health, st_bad, st_missing) == (200, 400, 404), "statuses %s" % [st_health, st_bad, st_missing])
log = srv.stop()
got = parse_log(log, "json")
check(got == want, "json request log:\n  want %s\n  got  %s" % (want, got))
check(parse_log(log, "text") == [], "text lines in a json log")

# --- context shift, text log ---------------------------------------------------------------------
srv = Server("--context-shift", "-v")
shifted = completion(srv, 100)
c = shifted["choices"][0]
check(shifted["usage"]["completion_tokens"] == 100, "shift: %d tokens, want 100" % shifted["usage"]["completion_tokens"])
check(c["finish_reason"] == "length", "shift: finish_reason %r" % c["finish_reason"])
check(c["text"].startswith(plain["choices"][0]["text"]) and len(c["text"]) > len(plain["choices"][0]["text"]) + 100,
      "shift: does not continue the unshifted text: %r" % c["text"])
log = srv.stop()
n_shift = log.count("slot 0 context shift, n_keep = 1, n_left = 30, n_discard = 15\n")
check(n_shift == 5, "shift: %d shift lines, want 5" % n_shift)
check(parse_log(log, "text") == [("POST", "/v1/completions", 200, 5, 100)], "text log: %s" % parse_log(log, "text"))

# --- --keep 2: n_keep = 3 (BOS), n_discard = (31 - 3) / 2 = 14 ----------------------------------
srv = Server("--context-shift", "--keep", "2", "-v")
completion(srv, 40)
log = srv.stop()
check("slot 0 context shift, n_keep = 3, n_left = 28, n_discard = 14\n" in log, "--keep 2: %s" % log[-400:])

# --- no lines with --log-disable or --log-verbosity 2 --------------------------------------------
for quiet in (["--log-disable"], ["--log-verbosity", "2"], ["--log-disable", "--log-format", "json"]):
    srv = Server(*quiet, quiet=True)
    completion(srv, 4)
    srv.call("GET", "/health")
    log = srv.stop()
    check(parse_log(log, "text") == [] and parse_log(log, "json") == [] and "request" not in log,
          "%s printed request lines: %r" % (quiet, log))

# --- a model that cannot shift: warning, then the default behaviour ------------------------------
srv = Server("--context-shift", model=MAMBA)
log = srv.text()
check("warning: --context-shift is not supported by this model, it is disabled (position shift: architecture "
      "mamba keeps recurrent state" in log, "mamba: no warning: %r" % log)
srv.stop()

if failures:
    sys.exit(1)
print("PASS  serve: finish length at n_ctx - 1 without shift (27 tokens, llama.cpp's prefix), 100 tokens and "
      "5 shifts with it; one request log line per request in text and json, none when disabled")
