#!/usr/bin/env python3
"""Assistant tool calls in a conversation: `arguments` as OpenAI sends them (JSON text).

usage: check_tool_args.py BASE_URL objects|text
llama.cpp hands a template that uses argument values as objects the parsed object
(common/chat.cpp func_args_not_string, for templates with supports_object_arguments), and leaves
the text to templates that cannot take objects.
  objects: the server's template takes objects (Hermes 3's, `arguments | tojson`): the
    conversation with JSON-text arguments renders as the same prompt as with object arguments
    (equal usage.prompt_tokens);
  text: the template appends arguments to a string (Functionary v3.2's): JSON-text arguments
    render (200), where object arguments would fail in the template.
Prints PASS/FAIL lines; exit status 1 on a failure.
"""
import json
import sys
import urllib.error
import urllib.request

base, mode = sys.argv[1], sys.argv[2]


def post(args):
    body = {"max_tokens": 1, "messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]}
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


status_text, text = post('{"city": "Paris", "unit": "celsius"}')
if mode == "objects":
    status_obj, obj = post({"city": "Paris", "unit": "celsius"})
    ok = status_text == 200 and status_obj == 200 and \
        text["usage"]["prompt_tokens"] == obj["usage"]["prompt_tokens"]
    detail = (status_text, text.get("usage"), status_obj, obj.get("usage"))
else:
    ok, detail = status_text == 200, (status_text, text)
print("%s  tool call arguments (%s)%s" % ("PASS" if ok else "FAIL", mode, "" if ok else ": %s" % (detail,)))
sys.exit(0 if ok else 1)
