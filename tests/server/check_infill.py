#!/usr/bin/env python3
"""oxillama serve's /infill against llama-server's replies (golden/server/infill.json).

usage: check_infill.py BASE_URL API_KEY golden/server/infill.json cases|refusal
cases: the server runs the model of make_fim_model.py with -b 128 (as llama-server did, README.md);
each request of "cases" must give llama-server's status and, exactly, its content, tokens,
stop_type, tokens_predicted, tokens_evaluated, tokens_cached and prompt (the fill-in-the-middle
prompt as text: the repo-level extra context, BOS, the prefix's last tokens, the suffix's first);
completion_probabilities' ids and tokens exactly (but the record llama-server adds for the
end-of-generation token, which oxillama does not report). The first request is also streamed: its events'
content and tokens joined must be the non-streamed reply's. May differ: id_slot, model, timings,
generation_settings.
refusal: the server runs a model without FIM tokens (stories260K); /infill must answer llama-server's
status, error type and message. Prints PASS/FAIL lines; exit status 1 on a failure.
"""
import json
import sys
import urllib.error
import urllib.request

base, key, path, mode = sys.argv[1:5]
failed = 0


def call(body, raw=False):
    r = urllib.request.Request(base + "/infill", json.dumps(body).encode(),
                               {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(r, timeout=60) as f:
            return f.status, (f.read().decode() if raw else json.load(f))
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def report(ok, name, why):
    global failed
    print("%s  %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + "; ".join(why)))
    failed += not ok


g = json.load(open(path))
if mode == "refusal":
    ref = g["refusal"]
    st, got = call(ref["request"])
    err, rerr = got.get("error", {}), ref["reply"]["error"]
    why = [] if st == ref["status"] else ["status %d, llama-server %d" % (st, ref["status"])]
    why += ["error.%s %r, llama-server %r" % (k, err.get(k), rerr[k]) for k in ("code", "type", "message")
            if err.get(k) != rerr[k]]
    report(not why, "/infill without FIM tokens refused as llama-server", why)
    sys.exit(1 if failed else 0)

EXACT = ("content", "tokens", "stop", "stop_type", "stopping_word", "tokens_predicted", "tokens_evaluated",
         "tokens_cached", "prompt", "truncated")
for i, case in enumerate(g["cases"]):
    st, got = call(case["request"])
    ref = case["reply"]
    why = [] if st == case["status"] else ["status %d, llama-server %d" % (st, case["status"])]
    why += ["%s %r, llama-server %r" % (k, got.get(k), ref[k]) for k in EXACT if got.get(k) != ref[k]]
    for a, b in zip(got.get("completion_probabilities", []), ref.get("completion_probabilities", [])):
        ka = [(a["id"], a["token"])] + [(t["id"], t["token"]) for t in a["top_logprobs"]]
        kb = [(b["id"], b["token"])] + [(t["id"], t["token"]) for t in b["top_logprobs"]]
        if ka != kb:
            why.append("completion_probabilities %r, llama-server %r" % (ka, kb))
    # llama-server also lists the end-of-generation token it sampled; oxillama's scheduler records no
    # probability for it (a known difference): that one trailing record is left out, all others count
    n_ref = len(ref.get("completion_probabilities", [])) - (ref.get("stop_type") == "eos" and
                                                            "completion_probabilities" in ref)
    if len(got.get("completion_probabilities", [])) != n_ref:
        why.append("%d completion_probabilities records, llama-server %d" % (
            len(got.get("completion_probabilities", [])), n_ref))
    report(not why, "/infill case %d = llama-server" % i, why)
    if i == 0:
        st, text = call(dict(case["request"], stream=True), raw=True)
        events = [json.loads(l[6:]) for l in text.split("\n") if l.startswith("data: ")]
        content = "".join(ev["content"] for ev in events)
        toks = [t for ev in events[:-1] for t in ev["tokens"]]
        last = events[-1] if events else {}
        ok = (st == 200 and content == got.get("content") and toks == got.get("tokens", [])[:len(toks)] and
              last.get("stop") is True and last.get("stop_type") == got.get("stop_type"))
        report(ok, "/infill case 0 streamed = non-streamed", ["status %d, content %r, tokens %r, last %r" % (
            st, content, toks, {k: last.get(k) for k in ("stop", "stop_type")})])
sys.exit(1 if failed else 0)
