#!/usr/bin/env python3
"""--reasoning-budget in `oxillama run -cnv` and `oxillama serve`, as llama.cpp: with 0 the chat
template is rendered with enable_thinking false, and a template that opens a thought regardless has
it closed after its generation prompt (common/chat.cpp: DeepSeek R1's prompt ends with "<think>\\n",
and "</think>" is appended); with -1 (the default) enable_thinking is true for a template that reacts
to it (common_chat_templates_support_enable_thinking), false otherwise.

Expected prompts: golden/chat-templates/<model>/user_gen.txt (the conversation [user "Hello!"],
Python Jinja2 as HuggingFace's apply_chat_template, bos "<s>") without its leading BOS text
(stories260K's tokenizer adds BOS), plus
  - Qwen3 (honours the flag, `{%- if enable_thinking is defined and enable_thinking is false %}
    {{- '<think>\\n\\n</think>\\n\\n' }}`): "<think>\\n\\n</think>\\n\\n";
  - DeepSeek-R1-Distill-Llama-8B (ignores it, ends with '<think>\\n'): "</think>";
  - DeepSeek-R1-Distill-Qwen-32B (llama.cpp's copy: '<think>\\n', then '</think>' when not
    enable_thinking): nothing with the budget 0; without it llama.cpp passes enable_thinking true
    (the template reacts to it), so the golden prompt (variable undefined) less its "</think>".

Cases (exit statuses checked in every one):
  cli     run -cnv --verbose-prompt prints those prompts (with -1 and without the flag alike).
  serve   /apply-template gives those prompts (llama-server's route renders as its chat route);
          chat_template_kwargs {"enable_thinking": false} does the same on a server without the
          flag, {"enable_thinking": true} undoes the flag, a string is llama-server's 400
          ('invalid type for "enable_thinking" (expected boolean, got string)'); the chat reply:
          with the budget the thought is closed in the prompt, so the reply is content and the
          message has no reasoning_content (as llama-server's); without it the R1 prompt
          leaves the thought open and the whole reply is reasoning_content with content "";
          reasoning_budget_end_tags (not a llama-server field) is a 400 naming it; a budget of N
          tokens: check_reasoning_budget_n.py.

usage: check_reasoning_budget.py OXILLAMA MODEL GOLDEN_DIR cli|serve
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
R1 = "deepseek-ai-DeepSeek-R1-Distill-Llama-8B"
QWEN3 = "Qwen-Qwen3-0.6B"
R1Q = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"
ADDED = {QWEN3: "<think>\n\n</think>\n\n", R1: "</think>", R1Q: ""}
MODELS = (QWEN3, R1, R1Q)
failures = []


def check(ok, what):
    print(("PASS  " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def template(model):
    return os.path.join(GOLDEN, "chat-templates", model, "template.jinja")


def golden_prompt(model, budget0):
    text = open(os.path.join(GOLDEN, "chat-templates", model, "user_gen.txt"), encoding="utf-8").read()
    if text.startswith("<s>"):
        text = text[3:]
    if model == R1Q and not budget0:
        # '<think>\n'{% if not enable_thinking %}'</think>'{% endif %}: the golden rendering
        # (enable_thinking undefined) ends with "</think>"; llama.cpp passes enable_thinking true
        # when the budget is not 0, which leaves the thought open
        assert text.endswith("<think>\n</think>")
        return text[:-len("</think>")]
    return text + (ADDED[model] if budget0 else "")


def cli():
    for model in MODELS:
        for budget in (None, "0", "-1"):
            args = [BIN, "run", "-m", MODEL, "-cnv", "--verbose-prompt", "-n", "4", "--temp", "0",
                    "--chat-template-file", template(model)]
            if budget is not None:
                args += ["--reasoning-budget", budget]
            p = subprocess.run(args, input="Hello!\n/exit\n".encode(), capture_output=True, timeout=120)
            err = p.stderr.decode("utf-8", "replace")
            m = re.search(r"prompt: '(.*?)'\nnumber of tokens in prompt", err, re.S)
            want = golden_prompt(model, budget == "0")
            got = m.group(1) if m else None
            check(p.returncode == 0 and got == want,
                  "run -cnv %s --reasoning-budget %s: status %d, prompt %r%s" %
                  (model, budget, p.returncode, got, "" if got == want else " (want %r)" % want))


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def start(work, name, extra):
    log = open(os.path.join(work, name + ".log"), "w+")
    p = subprocess.Popen([BIN, "serve", "--port", "0", "-m", MODEL, "-t", "1", "-np", "1"] + extra,
                         stderr=log, stdout=subprocess.DEVNULL)
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
    raise SystemExit("FAIL  server %s did not start:\n%s" % (name, log.read()))


def serve():
    msgs = [{"role": "user", "content": "Hello!"}]
    with tempfile.TemporaryDirectory() as work:
        servers = []
        try:
            for model in MODELS:
                for budget in ("0", "-1"):
                    p, base = start(work, "%s%s" % (model, budget),
                                    ["--chat-template-file", template(model), "--reasoning-budget", budget])
                    servers.append(p)
                    st, o = post(base, "/apply-template", {"messages": msgs})
                    want = golden_prompt(model, budget == "0")
                    check(st == 200 and o.get("prompt") == want,
                          "serve %s --reasoning-budget %s: /apply-template %d %r" % (model, budget, st, o))
                    if budget == "-1":
                        st, o = post(base, "/apply-template",
                                     {"messages": msgs, "chat_template_kwargs": {"enable_thinking": False}})
                        check(st == 200 and o.get("prompt") == golden_prompt(model, True),
                              "serve %s: chat_template_kwargs enable_thinking false: %d %r" % (model, st, o))
                    else:
                        st, o = post(base, "/apply-template",
                                     {"messages": msgs, "chat_template_kwargs": {"enable_thinking": True}})
                        check(st == 200 and o.get("prompt") == golden_prompt(model, False),
                              "serve %s --reasoning-budget 0: enable_thinking true renders the thought: %d %r"
                              % (model, st, o))
                    if model != R1:
                        continue
                    st, o = post(base, "/v1/chat/completions", {"messages": msgs, "max_tokens": 8, "temperature": 0})
                    msg = o.get("choices", [{}])[0].get("message", {}) if st == 200 else {}
                    if budget == "0":
                        ok = (st == 200 and "reasoning_content" not in msg and isinstance(msg.get("content"), str)
                              and msg["content"] != "")
                    else:
                        ok = (st == 200 and msg.get("content") == "" and isinstance(msg.get("reasoning_content"), str)
                              and msg["reasoning_content"] != "")
                    check(ok, "serve R1 --reasoning-budget %s: chat reply %d %r" % (budget, st, msg))
                    st, o = post(base, "/v1/chat/completions",
                                 {"messages": msgs, "max_tokens": 2, "chat_template_kwargs": {"enable_thinking": "no"}})
                    check(st == 400 and 'invalid type for \\"enable_thinking\\" (expected boolean, got string)'
                          in json.dumps(o), "serve: enable_thinking as a string: %d %r" % (st, o))
                    st, o = post(base, "/v1/chat/completions",
                                 {"messages": msgs, "max_tokens": 2, "chat_template_kwargs": []})
                    check(st == 400 and "chat_template_kwargs" in json.dumps(o),
                          "serve: chat_template_kwargs not an object: %d %r" % (st, o))
                    st, o = post(base, "/v1/chat/completions",
                                 {"messages": msgs, "max_tokens": 2, "reasoning_budget_end_tags": ["</think>"]})
                    check(st == 400 and "reasoning_budget_end_tags" in json.dumps(o),
                          "serve: reasoning_budget_end_tags (not llama-server's) is refused: %d %r" % (st, o))
        finally:
            for p in servers:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    failures.append("a server did not stop on SIGTERM")
            for p in servers:
                if p.returncode not in (0, None) and p.returncode != -15:
                    failures.append("server exit status %s" % p.returncode)


{"cli": cli, "serve": serve}[CASE]()
if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("all passed")
