#!/usr/bin/env python3
"""oxillama serve --rerank on golden/rerank/reranker.gguf against llama-server's replies
(golden/rerank/expected.json): for each request the same status; on success the same shape
(Jina/Cohere object with model, object, usage, or the TEI array), the same result indices in the
same order (sorted by score, cut to top_n), the same texts, and each score within 1e-4 of
llama.cpp's; on error the same message. Then a server started without --rerank answers 501.
usage: check_rerank.py OXILLAMA_BINARY GOLDEN_RERANK_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BOUND = 1e-4


def start(binary, model, extra):
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([binary, "serve", "--port", "0", "-t", "2", "-m", model, *extra],
                            stdout=subprocess.DEVNULL, stderr=log)
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


def post(base, route, body):
    req = urllib.request.Request(base + route, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def compare_results(want, got):
    """None when equal within the bound, else what differs; also the largest score difference."""
    if not isinstance(got, list) or len(got) != len(want):
        return "results: %s, expected %d" % (json.dumps(got)[:200], len(want)), 0.0
    worst = 0.0
    for k, (w, g) in enumerate(zip(want, got)):
        if sorted(w) != sorted(g):
            return "result %d has keys %s, expected %s" % (k, sorted(g), sorted(w)), worst
        if g["index"] != w["index"]:
            return "result %d is document %s, expected %s (ordering)" % (k, g["index"], w["index"]), worst
        if "text" in w and g["text"] != w["text"]:
            return "result %d text %r, expected %r" % (k, g["text"], w["text"]), worst
        label = "score" if "score" in w else "relevance_score"
        d = abs(g[label] - w[label])
        worst = max(worst, d)
        if d > BOUND:
            return "result %d (document %d) score %.7g, llama.cpp %.7g" % (k, w["index"], g[label], w[label]), worst
    return None, worst


def main():
    binary, gdir = sys.argv[1:3]
    model = os.path.join(gdir, "reranker.gguf")
    cases = json.load(open(os.path.join(gdir, "expected.json")))
    passed = failed = 0
    proc, base = start(binary, model, ["--rerank"])
    try:
        for i, c in enumerate(cases):
            status, body = post(base, c["route"], c["request"])
            name = "%d %s %s" % (i, c["route"], json.dumps(c["request"])[:60])
            why, worst = None, 0.0
            want = c["response"]
            if status != c["status"]:
                why = "status %d, expected %d: %s" % (status, c["status"], json.dumps(body)[:200])
            elif status != 200:
                if body.get("error", {}).get("message") != want["error"]["message"]:
                    why = "error %s, expected message %r" % (json.dumps(body)[:200], want["error"]["message"])
            elif isinstance(want, list):
                why, worst = compare_results(want, body)
            elif not isinstance(body, dict):
                why = "expected an object: %s" % json.dumps(body)[:200]
            else:
                for key in ("model", "object", "usage"):
                    if body.get(key) != want[key]:
                        why = "%s %s, expected %s" % (key, json.dumps(body.get(key)), json.dumps(want[key]))
                        break
                if not why:
                    why, worst = compare_results(want["results"], body.get("results"))
            if why:
                print("FAIL  %s: %s" % (name, why))
                failed += 1
            else:
                print("PASS  %s (max |score delta| %.3g)" % (name, worst))
                passed += 1
    finally:
        proc.terminate()
        proc.wait()
    proc, base = start(binary, model, [])
    try:
        status, body = post(base, "/v1/rerank", {"query": "a", "documents": ["b"]})
        msg = body.get("error", {}).get("message", "")
        if status == 501 and "does not support reranking" in msg:
            print("PASS  without --rerank: 501 %s" % msg)
            passed += 1
        else:
            print("FAIL  without --rerank: %d %s" % (status, json.dumps(body)[:200]))
            failed += 1
    finally:
        proc.terminate()
        proc.wait()
    print("rerank server: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
