#!/usr/bin/env python3
"""llama-server's own /completion route of `oxillama serve` against llama-server's replies.

usage: check_native.py BASE_URL API_KEY golden/server/penalties.json golden/server/samplers.json
Each case of the JSON files holds the request llama-server's /completion got and fields of its
reply (golden/server/README.md). The same request body goes to oxillama's /completion unchanged;
content, tokens_predicted, stop_type and tokens_evaluated must be llama-server's exactly, and the
generation_settings llama-server echoed (penalties.json) must agree on every field oxillama
reports (as float32 where llama-server printed a float). Then each request again with
"stream": true: the data events' content joined and their tokens joined must equal the
non-streamed reply's content and tokens (return_tokens), the last event must say stop true with
the same stop_type and tokens_predicted, and no OpenAI [DONE] may follow. Prints PASS/FAIL lines;
exit status 1 on a failure.
"""
import json
import struct
import sys
import urllib.request

base, key = sys.argv[1:3]
failed = 0


def post(body, stream=False):
    r = urllib.request.Request(base + "/completion", json.dumps(body).encode(),
                               {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(r, timeout=120) as f:
        if not stream:
            return json.load(f)
        return f.read().decode()


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0] if isinstance(x, float) else x


def report(ok, name, why=""):
    global failed
    print("%s  %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + why))
    failed += not ok


for path in sys.argv[3:]:
    for case in json.load(open(path))["cases"]:
        req = case["request"]
        name = "/completion %s" % json.dumps(req, sort_keys=True)
        got = post(dict(req, return_tokens=True))
        diffs = ["%s %r, llama-server %r" % (k, got.get(k), case[k])
                 for k in ("content", "tokens_predicted", "stop_type", "tokens_evaluated") if got.get(k) != case[k]]
        gs = case.get("generation_settings")
        if gs is not None:
            mine = got["generation_settings"]
            for k, v in mine.items():
                if k in gs and f32(v) != f32(gs[k]):
                    diffs.append("generation_settings.%s %r, llama-server %r" % (k, v, gs[k]))
            if len([k for k in mine if k in gs]) < 30:
                diffs.append("generation_settings: only %d fields in common" % len([k for k in mine if k in gs]))
        report(not diffs, name + " = llama-server", "; ".join(diffs))
        # the stream of the same request
        text = post(dict(req, return_tokens=True, stream=True), stream=True)
        events = [json.loads(line[6:]) for line in text.split("\n") if line.startswith("data: ")]
        content = "".join(ev["content"] for ev in events)
        tokens = [t for ev in events[:-1] for t in ev["tokens"]]
        last = events[-1] if events else {}
        sdiff = []
        if content != got["content"]:
            sdiff.append("content %r" % content)
        if tokens != got["tokens"][:len(tokens)] or len(tokens) < got["tokens_predicted"] - (got["stop_type"] == "eos"):
            sdiff.append("tokens %r, non-streamed %r" % (tokens, got["tokens"]))
        if not last.get("stop") or any(last.get(k) != got[k] for k in ("stop_type", "tokens_predicted")):
            sdiff.append("last event %r" % {k: last.get(k) for k in ("stop", "stop_type", "tokens_predicted")})
        if any(not ev.get("stop") is False for ev in events[:-1]) or "[DONE]" in text:
            sdiff.append("events before the last must say stop false, and no [DONE]")
        report(not sdiff, name + " streamed = non-streamed", "; ".join(sdiff))
sys.exit(1 if failed else 0)
