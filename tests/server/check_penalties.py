#!/usr/bin/env python3
"""The sampling fields of `oxillama serve` against llama-server's own replies.

usage: check_penalties.py BASE_URL API_KEY golden/server/penalties.json|samplers.json
penalties.json: presence_penalty / frequency_penalty / repeat_last_n, greedy; samplers.json: the
further samplers (repeat_penalty, DRY, typical_p, XTC, top_n_sigma, dynamic temperature, mirostat
1 and 2, samplers orders, mixed chains) seeded, 3 seeds each, logit_bias forms and ignore_eos.
Each case of the JSON file holds the request sent to llama-server's /completion and the text it
answered (golden/server/README.md). The same settings go to oxillama's /v1/completions (n_predict
as max_tokens); the text must be llama-server's, byte for byte. Prints PASS/FAIL lines; exit
status 1 on a failure.
"""
import json
import sys
import urllib.request

base, key, path = sys.argv[1:4]
failed = 0
for case in json.load(open(path))["cases"]:
    req = dict(case["request"])
    body = {"prompt": req.pop("prompt"), "max_tokens": req.pop("n_predict")}
    body.update(req)  # every other field as llama-server got it
    r = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(),
                               {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(r, timeout=60) as f:
        text = json.load(f)["choices"][0]["text"]
    ok = text == case["content"]
    name = "sampling %s = llama-server" % json.dumps(case["request"], sort_keys=True)
    print("%s  %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": %r, llama-server %r" % (text, case["content"])))
    failed += not ok
sys.exit(1 if failed else 0)
