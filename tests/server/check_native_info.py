#!/usr/bin/env python3
"""oxillama serve's llama-server routes against llama-server's full replies (golden/server/).

usage: check_native_info.py BASE_URL API_KEY golden/server/native.json golden/server/info.json
native.json: /completion requests (stop words, n_probs, token-id and mixed prompts, several
prompts, a seeded sample) with llama-server's whole reply. Must match exactly: index, content,
tokens, stop, stop_type, stopping_word, tokens_predicted, tokens_evaluated, tokens_cached,
prompt, has_new_line, truncated, and in completion_probabilities every id, token and bytes, with
each logprob within LOGPROB_TOL of llama-server's. May differ: id_slot (the slot each server
picked; oxillama's must be one of its 4), model (the name each server gives the file), timings (wall-clock) and
generation_settings (compared by check_native.py).
info.json: GET /props (default_generation_settings.n_ctx and every params field oxillama
reports, total_slots, modalities, chat_template, bos_token, eos_token, endpoint_props,
is_sleeping; model_alias/model_path/build_info/media_marker/ui/endpoint_metrics may differ),
POST /props (the status and error code and type), GET /models and /v1/models (object and the
meta fields of data[0] llama-server gives but ftype, which oxillama does not report), POST
/apply-template (the prompt, exactly). Prints PASS/FAIL lines; exit status 1 on a failure.
"""
import json
import struct
import sys
import urllib.error
import urllib.request

LOGPROB_TOL = 1e-3
base, key, native_path, info_path = sys.argv[1:5]
failed = 0
worst = 0.0


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(base + path, data, {"Content-Type": "application/json",
                                                   "Authorization": "Bearer " + key}, method=method)
    try:
        with urllib.request.urlopen(r, timeout=120) as f:
            return f.status, json.load(f)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0] if isinstance(x, float) else x


def report(ok, name, why):
    global failed
    print("%s  %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + "; ".join(why)))
    failed += not ok


def probs_diff(mine, ref, where):
    global worst
    out = []
    if len(mine) != len(ref):
        return ["%s: %d records, llama-server %d" % (where, len(mine), len(ref))]
    for i, (a, b) in enumerate(zip(mine, ref)):
        pairs = [(a, b)] + list(zip(a.get("top_logprobs", []), b.get("top_logprobs", [])))
        if len(a.get("top_logprobs", [])) != len(b.get("top_logprobs", [])):
            out.append("%s[%d]: %d alternatives" % (where, i, len(a.get("top_logprobs", []))))
        for x, y in pairs:
            for k in ("id", "token", "bytes"):
                if x.get(k) != y.get(k):
                    out.append("%s[%d].%s %r, llama-server %r" % (where, i, k, x.get(k), y.get(k)))
            d = abs(x["logprob"] - y["logprob"])
            worst = max(worst, d)
            if d > LOGPROB_TOL:
                out.append("%s[%d] logprob %r, llama-server %r" % (where, i, x["logprob"], y["logprob"]))
    return out


EXACT = ("index", "content", "tokens", "stop", "stop_type", "stopping_word", "tokens_predicted",
         "tokens_evaluated", "tokens_cached", "prompt", "has_new_line", "truncated")
for case in json.load(open(native_path))["cases"]:
    st, got = call("POST", "/completion", case["request"])
    why = [] if st == case["status"] else ["status %d, llama-server %d" % (st, case["status"])]
    mine = got if isinstance(got, list) else [got]
    ref = case["reply"] if isinstance(case["reply"], list) else [case["reply"]]
    if len(mine) != len(ref):
        why.append("%d results, llama-server %d" % (len(mine), len(ref)))
    for a, b in zip(mine, ref):
        why += ["%s %r, llama-server %r" % (k, a.get(k), b[k]) for k in EXACT if k in b and a.get(k) != b[k]]
        if not isinstance(a.get("id_slot"), int) or not 0 <= a["id_slot"] < 4:
            why.append("id_slot %r is not one of the server's 4 slots" % a.get("id_slot"))
        if "completion_probabilities" in b:
            why += probs_diff(a.get("completion_probabilities", []), b["completion_probabilities"],
                              "completion_probabilities")
    report(not why, "/completion %s = llama-server" % json.dumps(case["request"]), why)

info = json.load(open(info_path))
st, got = call("GET", "/props")
ref = info["props"]["reply"]
why = [] if st == 200 else ["status %d" % st]
for k in ("total_slots", "modalities", "chat_template", "bos_token", "eos_token", "endpoint_props", "is_sleeping"):
    if got.get(k) != ref[k]:
        why.append("%s %r, llama-server %r" % (k, got.get(k), ref[k]))
gd, rd = got.get("default_generation_settings", {}), ref["default_generation_settings"]
if gd.get("n_ctx") != rd["n_ctx"]:
    why.append("default_generation_settings.n_ctx %r, llama-server %r" % (gd.get("n_ctx"), rd["n_ctx"]))
common = [k for k in gd.get("params", {}) if k in rd["params"]]
why += ["params.%s %r, llama-server %r" % (k, gd["params"][k], rd["params"][k]) for k in common
        if f32(gd["params"][k]) != f32(rd["params"][k])]
if len(common) < 25:
    why.append("default_generation_settings.params: %d fields in common" % len(common))
report(not why, "GET /props = llama-server", why)

p = info["props_post"]
st, got = call("POST", "/props", p["body"])
ok = st == p["status"] and all(got.get("error", {}).get(k) == p["reply"]["error"][k] for k in ("code", "type"))
report(ok, "POST /props refused as llama-server (%d %s)" % (p["status"], p["reply"]["error"]["type"]),
       ["status %d, %r" % (st, got)])

for name in ("v1_models", "models"):
    m = info[name]
    st, got = call("GET", m["path"])
    ref_meta = m["reply"]["data"][0]["meta"]
    meta = got.get("data", [{}])[0].get("meta", {}) if st == 200 else {}
    why = [] if st == 200 and got.get("object") == "list" else ["status %d, %r" % (st, got)]
    why += ["meta.%s %r, llama-server %r" % (k, meta.get(k), v) for k, v in ref_meta.items()
            if k != "ftype" and meta.get(k) != v]
    report(not why, "GET %s meta = llama-server" % m["path"], why)

for t in info["apply_template"]:
    st, got = call("POST", "/apply-template", t["body"])
    ok = st == t["status"] and got.get("prompt") == t["reply"]["prompt"]
    report(ok, "POST /apply-template %s = llama-server" % json.dumps(t["body"]),
           ["status %d, prompt %r, llama-server %r" % (st, got.get("prompt"), t["reply"]["prompt"])])
print("worst |logprob - llama-server's|: %.3g (bound %g)" % (worst, LOGPROB_TOL))
sys.exit(1 if failed else 0)
