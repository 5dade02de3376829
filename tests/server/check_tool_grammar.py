#!/usr/bin/env python3
"""Tool-call grammars in `oxillama serve` (as llama-server sets them from common/chat.cpp), on the
bigram model of make_toolcall_model.py in its Mistral form (any prompt -> "Let me check." ->
[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}, "id":
"abc123def"}]) served with Mistral Nemo's template (golden/chat-templates):
  - [TOOL_CALLS] is a control token: written into the reply (so parsed) as one of the format's
    preserved tokens when tools are offered, and it is the lazy grammar's trigger token;
  - tool_choice auto (a lazy grammar, trigger word [TOOL_CALLS]): the text before the trigger is
    free ("Let me check." stays content); after it the grammar decides: with the model's "id" token
    banned (logit_bias -100) the call is still complete, its id 9 alphanumerics as the grammar
    demands, while the same request without the grammar (tool_choice none) never closes a call;
  - tool_choice required (the grammar from the first token): at temperature 1, every one of 8 seeds
    gives content null and one get_weather call with the model's arguments;
  - a named tool the model never calls by itself ("add", integer arguments): 4 seeds at temperature 1
    all call add with two integers; the same for required with only add offered under the templates
    of Llama 3.1, Functionary v3.2, Command R7B and Granite 3.3 (each format's grammar; gpt-oss's
    admits free analysis text first, which this model may never end);
  - a format for which llama.cpp builds no grammar (Command R+): required is a 400 naming the
    format.
usage: check_tool_grammar.py OXILLAMA_BINARY SOURCE_DIR WORK_DIR
Prints PASS/FAIL lines; exit status 1 on a failure."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

binary, src, work = sys.argv[1:4]
TEMPLATES = os.path.join(src, "golden", "chat-templates")
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}}}
ADD = {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
    "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
ID_TOKEN = 264  # '"id": "abc123def"}]' (make_toolcall_model.py: ids 259.. are the reply's tokens)
failed = 0


def check(name, ok, detail=""):
    global failed
    print("%s  tool grammar: %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + str(detail)[:600]))
    failed += not ok


def start(model, template, n_ctx="4096"):
    """a server for model under template (a byte-level vocabulary: prompts are long)"""
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([binary, "serve", "--port", "0", "-t", "1", "-np", "1", "-c", n_ctx, "-m", model,
                             "--chat-template-file", template], stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(300):
        log.seek(0)
        text = log.read()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        if m and "loaded in" in text:
            return proc, "http://127.0.0.1:" + m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    log.seek(0)
    sys.exit("FAIL  server did not start:\n" + log.read())


def stop(proc):
    proc.terminate()
    check("server exits 0 after SIGTERM", proc.wait(timeout=30) == 0, proc.returncode)


def chat(base, **extra):
    body = {"messages": [{"role": "user", "content": "What is the weather in Paris?"}], "tools": [WEATHER],
            "temperature": 0, "max_tokens": 300}
    body.update(extra)
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def calls_of(reply):
    """(content, [(name, arguments as a dict, id)], finish_reason) of the first choice"""
    ch = reply["choices"][0]
    m = ch["message"]
    out = []
    for c in m.get("tool_calls") or []:
        try:
            args = json.loads(c["function"]["arguments"])
        except ValueError:
            args = None
        out.append((c["function"]["name"], args, c.get("id")))
    return m.get("content"), out, ch["finish_reason"]


os.makedirs(work, exist_ok=True)
model = os.path.join(work, "toolcall-mistral.gguf")
rc = subprocess.call([sys.executable, os.path.join(src, "tests", "server", "make_toolcall_model.py"), model, "mistral"])
check("make_toolcall_model.py mistral exits 0", rc == 0, rc)
proc, base = start(model, os.path.join(TEMPLATES, "mistralai-Mistral-Nemo-Instruct-2407", "template.jinja"))
PARIS = {"city": "Paris", "unit": "celsius"}

st, r = chat(base)
content, calls, finish = calls_of(r)
check("auto: the text before the trigger stays content, then the call",
      st == 200 and content == "Let me check." and calls == [("get_weather", PARIS, "abc123def")] and
      finish == "tool_calls", r)

st, r = chat(base, logit_bias={str(ID_TOKEN): -100})
content, calls, finish = calls_of(r)
check("auto, the model's id token banned: the lazy grammar completes the call with a 9-alphanumeric id",
      st == 200 and content == "Let me check." and len(calls) == 1 and calls[0][:2] == ("get_weather", PARIS) and
      re.fullmatch(r"[a-zA-Z0-9]{9}", calls[0][2] or "") is not None and finish == "tool_calls", r)
st, r = chat(base, logit_bias={str(ID_TOKEN): -100}, tool_choice="none", max_tokens=100)
check("the same without a grammar (tool_choice none): no call closes, [TOOL_CALLS] (a control token "
      "preserved only with tools) not written",
      st == 200 and not r["choices"][0]["message"].get("tool_calls") and r["choices"][0]["finish_reason"] == "length"
      and "Let me check." in r["choices"][0]["message"]["content"]
      and "[TOOL_CALLS]" not in r["choices"][0]["message"]["content"], r)

good = 0
for seed in range(1, 9):
    st, r = chat(base, tool_choice="required", temperature=1.0, seed=seed)
    content, calls, finish = calls_of(r) if st == 200 else (None, [], None)
    ok = content is None and len(calls) == 1 and calls[0][:2] == ("get_weather", PARIS) and finish == "tool_calls"
    good += ok
    if not ok:
        print("  seed %d: %s" % (seed, json.dumps(r)[:400]))
check("required: 8 seeds at temperature 1 give one call and no content", good == 8, "%d/8" % good)

good = 0
for seed in range(1, 5):
    st, r = chat(base, tools=[WEATHER, ADD], temperature=1.0, seed=seed,
                 tool_choice={"type": "function", "function": {"name": "add"}})
    content, calls, finish = calls_of(r) if st == 200 else (None, [], None)
    ok = len(calls) >= 1 and all(n == "add" and isinstance(a, dict) and sorted(a) == ["a", "b"] and
                                 all(isinstance(v, int) for v in a.values()) for n, a, _ in calls)
    good += ok
    if not ok:
        print("  seed %d: %s" % (seed, json.dumps(r)[:400]))
check("named tool add (never the model's choice): 4 seeds at temperature 1 call add with integers", good == 4,
      "%d/4" % good)
stop(proc)

# required with only add offered, under other formats' templates: the format's grammar from the
# first token; this model's own reply fits none of them, so every call is the grammar's
ADD_DESCRIBED = {"type": "function", "function": dict(ADD["function"], description="Adds two integers")}
for tmpl, fmt in [("meta-llama-Llama-3.1-8B-Instruct", "Llama 3.x"), ("meetkai-functionary-medium-v3.2", "Functionary v3.2"),
                  ("CohereForAI-c4ai-command-r7b-12-2024-tool_use", "Command R7B"),
                  ("ibm-granite-granite-3.3-2B-Instruct", "Granite")]:
    proc, base = start(model, os.path.join(TEMPLATES, tmpl, "template.jinja"), "16384")
    good = 0
    for seed in range(1, 5):
        st, r = chat(base, tools=[ADD_DESCRIBED], tool_choice="required", temperature=1.0, seed=seed, max_tokens=400)
        content, calls, finish = calls_of(r) if st == 200 else ("", [], None)
        ok = content is None and len(calls) >= 1 and finish == "tool_calls" and all(
            n == "add" and isinstance(a, dict) and sorted(a) == ["a", "b"] and
            all(isinstance(v, (int, float)) and v == int(v) for v in a.values()) for n, a, _ in calls)
        good += ok
        if not ok:
            print("  %s seed %d: %s" % (fmt, seed, json.dumps(r)[:400]))
    check("required under %s's template: 4 seeds at temperature 1 call add with integers" % fmt, good == 4,
          "%d/4" % good)
    stop(proc)

proc, base = start(model, os.path.join(TEMPLATES, "CohereForAI-c4ai-command-r-plus-tool_use", "template.jinja"), "16384")
WEATHER_DESCRIBED = {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
                                                      "parameters": {"type": "object", "required": ["city"], "properties": {
                                                          "city": {"type": "string", "description": "City"}}}}}
st, r = chat(base, tools=[WEATHER_DESCRIBED], tool_choice="required")
check("required with a format without a tool grammar -> 400 naming it",
      st == 400 and "'Command R+' reply format" in r["error"]["message"] and r["error"]["param"] == "tool_choice", r)
st, r = chat(base, tools=[WEATHER_DESCRIBED], max_tokens=20)
check("auto with that format: unconstrained, 200", st == 200, r)
stop(proc)
sys.exit(1 if failed else 0)
