#!/usr/bin/env python3
"""A budget of N thinking tokens (--reasoning-budget N, llama.cpp's common/reasoning-budget.cpp
sampler; llama-server's reasoning_budget_tokens, reasoning_budget_start_tag, reasoning_budget_end_tag,
reasoning_budget_message and reasoning_budget_arm_immediately fields) on stories260K with DeepSeek R1's
template (golden/chat-templates: its generation prompt ends with "<think>\\n", so the reply starts
inside the thought and the budget counts from its first token).

The expectations come from the definition, not from a run of the budget itself:
  - greedy decoding (temperature 0) of the same prompt without a budget gives the free token ids F;
  - with a budget of N the first N ids are F's first N (the sampler leaves them alone), then come
    exactly the ids the tokenizer (/tokenize) gives for message + end tag, in order;
  - a budget of 0 forces those ids first;
  - without arm, counting starts after the start tag's tokens appear in the output: the start tag is
    taken as the text of a token of F that tokenizes to that one token, and N ids after it the
    forced ones follow;
  - the chat reply splits there: reasoning_content is the thought (N tokens and the message),
    content what follows the end tag; /v1/responses (same prompt, same defaults) returns that text.
Every request's HTTP status and every process's exit status are checked.

usage: check_reasoning_budget_n.py OXILLAMA MODEL GOLDEN_DIR cli|serve
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN, MODEL, GOLDEN, CASE = sys.argv[1:5]
TEMPLATE = os.path.join(GOLDEN, "chat-templates", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "template.jinja")
N = 5
MESSAGE = " Enough."
N_PREDICT = 24
MSGS = [{"role": "user", "content": "Hello!"}]
failures = []


def check(ok, what):
    print(("PASS  " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def start(work, extra):
    log = open(os.path.join(work, "serve.log"), "w+")
    p = subprocess.Popen([BIN, "serve", "--port", "0", "-m", MODEL, "-t", "1", "-np", "1",
                          "--chat-template-file", TEMPLATE] + extra, stderr=log, stdout=subprocess.DEVNULL)
    for _ in range(600):
        log.seek(0)
        text = log.read()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        if m and "loaded in" in text:
            return p, "http://127.0.0.1:" + m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    log.seek(0)
    raise SystemExit("FAIL  server did not start:\n%s" % log.read())


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        failures.append("the server did not stop on SIGTERM")
    check(p.returncode in (0, -15), "server exit status %s" % p.returncode)


def completion(base, prompt, n, fields):
    """Greedy ids and pieces of /completion (n_probs gives each token's id)."""
    body = {"prompt": prompt, "n_predict": n, "temperature": 0, "n_probs": 1}
    body.update(fields)
    st, o = post(base, "/completion", body)
    check(st == 200, "/completion %r: status %d %r" % (fields, st, o if st != 200 else ""))
    probs = o.get("completion_probabilities", []) if st == 200 else []
    return [e["id"] for e in probs], [e["token"] for e in probs], o.get("content") if st == 200 else None


def tokenize(base, text):
    st, o = post(base, "/tokenize", {"content": text, "with_pieces": True})
    check(st == 200, "/tokenize %r: status %d" % (text, st))
    return [t["id"] for t in o.get("tokens", [])] if st == 200 else []


def budget_fields(n, arm=True, start_tag="<think>", message=MESSAGE):
    return {"reasoning_budget_tokens": n, "reasoning_budget_start_tag": start_tag,
            "reasoning_budget_end_tag": "</think>", "reasoning_budget_message": message,
            "reasoning_budget_arm_immediately": arm}


def reference(base):
    """The chat prompt, the free greedy ids, the forced ids and the budget run's ids and text."""
    st, o = post(base, "/apply-template", {"messages": MSGS})
    check(st == 200 and o.get("prompt", "").endswith("<think>\n"),
          "/apply-template: the R1 prompt opens the thought: %d %r" % (st, o))
    prompt = o.get("prompt", "")
    free, free_pieces, _ = completion(base, prompt, N_PREDICT, {"reasoning_budget_tokens": -1})
    forced = tokenize(base, MESSAGE + "</think>")
    check(len(free) == N_PREDICT and len(forced) > 0 and free[N:N + len(forced)] != forced,
          "free run of %d tokens %r, forced ids %r" % (len(free), free, forced))
    ids, pieces, text = completion(base, prompt, N_PREDICT, budget_fields(N))
    check(len(ids) == N_PREDICT and ids[:N] == free[:N] and ids[N:N + len(forced)] == forced,
          "/completion budget %d: %r = the free run's first %d ids %r, then message + end tag %r"
          % (N, ids, N, free[:N], forced))
    return prompt, free, free_pieces, forced, ids, pieces, text


def serve():
    with tempfile.TemporaryDirectory() as work:
        p, base = start(work, ["--reasoning-budget", str(N), "--reasoning-budget-message", MESSAGE])
        try:
            prompt, free, free_pieces, forced, ids, pieces, text = reference(base)
            # the chat route takes the template's tags, --reasoning-budget and the message
            st, o = post(base, "/v1/chat/completions", {"messages": MSGS, "max_tokens": N_PREDICT, "temperature": 0})
            msg = o.get("choices", [{}])[0].get("message", {}) if st == 200 else {}
            # the forced tokens' text: the tokenizer's (a SentencePiece vocabulary adds its space first)
            forced_text = "".join(pieces[N:N + len(forced)])
            thought = "".join(pieces[:N]) + forced_text[:-len("</think>")]
            after = "".join(pieces[N + len(forced):])
            check(forced_text.endswith(MESSAGE + "</think>"), "the forced text %r" % forced_text)
            check(st == 200 and text == "".join(pieces) and msg.get("reasoning_content") == thought.strip()
                  and msg.get("content") == after.strip(),
                  "chat budget %d: reasoning_content %r (want %r), content %r (want %r)"
                  % (N, msg.get("reasoning_content"), thought.strip(), msg.get("content"), after.strip()))
            # /v1/responses renders the same prompt and takes the same budget (its text is the raw reply)
            st, o = post(base, "/v1/responses", {"input": "Hello!", "max_output_tokens": N_PREDICT, "temperature": 0})
            out = o.get("output", [{}])[0].get("content", [{}])[0].get("text") if st == 200 else None
            check(st == 200 and out == "".join(pieces), "/v1/responses budget %d: %r" % (N, out))
            # a request's reasoning_budget_tokens -1 lifts the server's budget: the free run
            st, o = post(base, "/v1/chat/completions",
                         {"messages": MSGS, "max_tokens": N_PREDICT, "temperature": 0, "reasoning_budget_tokens": -1})
            msg = o.get("choices", [{}])[0].get("message", {}) if st == 200 else {}
            check(st == 200 and msg.get("reasoning_content") == "".join(free_pieces).strip()
                  and msg.get("content") == "",
                  "chat reasoning_budget_tokens -1: the whole free reply is the thought: %r" % msg)
            # 0: the message and end tag at once
            z, _, _ = completion(base, prompt, len(forced) + 2, budget_fields(0))
            check(z[:len(forced)] == forced, "/completion budget 0: %r starts with %r" % (z, forced))
            st, o = post(base, "/v1/chat/completions",
                         {"messages": MSGS, "max_tokens": len(forced) + 4, "temperature": 0,
                          "reasoning_budget_tokens": 0, "reasoning_budget_message": ""})
            msg = o.get("choices", [{}])[0].get("message", {}) if st == 200 else {}
            check(st == 200 and "reasoning_content" not in msg and msg.get("content", "") != "",
                  "chat reasoning_budget_tokens 0, no message: an empty thought, then content: %r" % msg)
            # not armed: the budget starts after the start tag appears in the output
            p2 = "Once upon a time"
            f2, f2_pieces, _ = completion(base, p2, 16, {})
            tag, at = None, -1
            for i, (t, piece) in enumerate(zip(f2, f2_pieces)):
                if i < 12 and piece.startswith(" ") and len(piece) > 1 and t not in f2[:i] \
                        and tokenize(base, piece[1:]) == [t]:
                    tag, at = piece[1:], i
                    break
            check(tag is not None, "a start tag among the free ids %r (pieces %r)" % (f2, f2_pieces))
            if tag is not None:
                end_ids = tokenize(base, "</think>")
                b2, _, _ = completion(base, p2, 16, budget_fields(3, arm=False, start_tag=tag, message=""))
                k = at + 1 + 3
                check(b2[:k] == f2[:k] and b2[k:k + len(end_ids)] == end_ids,
                      "start tag %r (id %d at %d): %r = free %r then the end tag %r"
                      % (tag, f2[at], at, b2, f2[:k], end_ids))
                b3, _, _ = completion(base, p2, 16, {"reasoning_budget_tokens": 3,
                                                     "reasoning_budget_start_tag": tag})
                check(b3 == f2, "no end tag: the budget does nothing, as llama-server: %r" % b3)
            # bad values are 400s naming the field
            for field, value in (("reasoning_budget_tokens", -2), ("reasoning_budget_tokens", "5"),
                                 ("reasoning_budget_start_tag", 5), ("reasoning_budget_message", "x" * 1024),
                                 ("reasoning_budget_arm_immediately", "yes")):
                st, o = post(base, "/v1/chat/completions", {"messages": MSGS, "max_tokens": 2, field: value})
                check(st == 400 and o.get("error", {}).get("param") == field,
                      "%s %r: 400 naming it: %d %r" % (field, value if len(repr(value)) < 20 else "...", st, o))
        finally:
            stop(p)


def cli():
    with tempfile.TemporaryDirectory() as work:
        p, base = start(work, [])
        try:
            _, _, _, _, ids, pieces, _ = reference(base)
        finally:
            stop(p)
    args = [BIN, "run", "-m", MODEL, "-cnv", "-n", str(N_PREDICT), "--temp", "0", "--chat-template-file", TEMPLATE,
            "--reasoning-budget", str(N), "--reasoning-budget-message", MESSAGE]
    r = subprocess.run(args, input=b"Hello!\n/exit\n", capture_output=True, timeout=120)
    out = r.stdout.decode("utf-8", "replace")
    m = re.match(r"\n> (.*)\n\n> $", out, re.S)
    want = "".join(pieces)
    check(r.returncode == 0 and m is not None and m.group(1) == want,
          "run -cnv --reasoning-budget %d: status %d, reply %r (want %r)"
          % (N, r.returncode, m.group(1) if m else out, want))


{"cli": cli, "serve": serve}[CASE]()
if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("all passed")
