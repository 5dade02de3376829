#!/usr/bin/env python3
"""Tool calls of `oxillama serve` end to end, on the model of make_toolcall_model.py.

usage: check_toolcalls.py BASE_URL
That model answers any prompt with "Let me check." and then
<tool_call>\\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\\n</tool_call>
(a logit_bias of -100 on token 259 drops "Let me check."). The expectations are OpenAI's documented
chat completion format (platform.openai.com/docs/api-reference/chat), not the server's output:
  - message.tool_calls = [{id, type: "function", function: {name, arguments: a JSON string}}],
    message.content the text before the call (null when there is none), finish_reason "tool_calls";
  - streamed: content deltas carry the text before the call only; a call's first delta has its
    index, id, type and function.name; later deltas of that index carry function.arguments pieces
    (and no id or name); the pieces concatenate to the arguments; the last choice chunk has an empty
    delta and finish_reason "tool_calls"; every other chunk's finish_reason is null; [DONE] ends it;
  - without tools in the request, the same reply is plain content ending with "stop".
Prints PASS/FAIL lines; exit status 1 on a failure.
"""
import json
import sys
import urllib.request

base = sys.argv[1]
ARGS = {"city": "Paris", "unit": "celsius"}
CALL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>'
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string"}, "unit": {"type": "string"}},
                                               "required": ["city"]}}}]
failed = 0


def check(name, ok, detail=""):
    global failed
    print("%s  tool calls: %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + str(detail)[:600]))
    failed += not ok


def post(body):
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read()


def request(**extra):
    body = {"messages": [{"role": "user", "content": "What is the weather in Paris?"}], "temperature": 0}
    body.update(extra)
    return body


def valid_call(call, index=None):
    fn = call.get("function", {})
    try:
        args = json.loads(fn.get("arguments"))
    except (TypeError, ValueError):
        return False
    return (isinstance(call.get("id"), str) and call["id"] != "" and call.get("type") == "function" and
            fn.get("name") == "get_weather" and args == ARGS and (index is None or call.get("index") == index))


# --- not streamed: content before the call, then the call
r = json.loads(post(request(tools=TOOLS)))
ch = r["choices"][0]
msg = ch["message"]
calls = msg.get("tool_calls") or []
check("message with content and a call", r["object"] == "chat.completion" and msg["role"] == "assistant" and
      msg["content"] == "Let me check." and len(calls) == 1 and valid_call(calls[0]) and
      ch["finish_reason"] == "tool_calls", r)

# --- the call alone: content is null
r = json.loads(post(request(tools=TOOLS, logit_bias={"259": -100})))
ch = r["choices"][0]
calls = ch["message"].get("tool_calls") or []
check("call alone: content null", ch["message"]["content"] is None and len(calls) == 1 and valid_call(calls[0]) and
      ch["finish_reason"] == "tool_calls", r)

# --- without tools the reply is text
r = json.loads(post(request()))
ch = r["choices"][0]
check("no tools: plain content", ch["message"]["content"] == "Let me check." + CALL_TEXT and
      "tool_calls" not in ch["message"] and ch["finish_reason"] == "stop", r)


def stream(**extra):
    raw = post(request(stream=True, **extra)).decode()
    events = [line[6:] for line in raw.split("\n") if line.startswith("data: ")]
    return events


for label, extra, want_content in (("stream", {}, "Let me check."),
                                   ("stream, call alone", {"logit_bias": {"259": -100}}, "")):
    events = stream(tools=TOOLS, **extra)
    problems = []
    if not events or events[-1] != "[DONE]":
        problems.append("no [DONE] at the end")
    chunks = [json.loads(e) for e in events[:-1]]
    ids = {c["id"] for c in chunks}
    if len(ids) != 1 or any(c["object"] != "chat.completion.chunk" for c in chunks):
        problems.append("chunk ids/objects %s" % ids)
    choice_chunks = [c["choices"][0] for c in chunks if c["choices"]]
    content, args, first, later = "", "", None, []
    for i, c in enumerate(choice_chunks):
        d = c["delta"]
        last = i == len(choice_chunks) - 1
        if last:
            if c["finish_reason"] != "tool_calls" or d not in ({}, {"content": None}):
                problems.append("last chunk %s" % c)
            continue
        if c["finish_reason"] is not None:
            problems.append("finish_reason before the last chunk: %s" % c)
        if i == 0 and d.get("role") != "assistant":
            problems.append("first delta %s" % d)
        if d.get("content"):
            if first is not None:
                problems.append("content after a tool call delta: %s" % d)
            content += d["content"]
        for tc in d.get("tool_calls") or []:
            if tc.get("index") != 0:
                problems.append("tool call index %s" % tc)
            elif first is None:
                first = tc
                args += tc.get("function", {}).get("arguments", "")
            else:
                later.append(tc)
                args += tc.get("function", {}).get("arguments") or ""
    if first is None or not (isinstance(first.get("id"), str) and first["id"] and first.get("type") == "function"
                             and first.get("function", {}).get("name") == "get_weather"):
        problems.append("first tool call delta %s" % first)
    if not later or any("id" in tc or "name" in tc.get("function", {}) for tc in later):
        problems.append("argument deltas %s" % later)
    try:
        if json.loads(args) != ARGS:
            problems.append("arguments %r" % args)
    except ValueError:
        problems.append("arguments %r are not JSON" % args)
    if content != want_content:
        problems.append("content %r" % content)
    check(label + " (OpenAI chunk format)", not problems, "; ".join(problems) + " | " + " ".join(events)[:400])

sys.exit(1 if failed else 0)
