#!/usr/bin/env python3
"""Writes expected.json: llama-server's reply (status and JSON body) to each request of
requests.json, the server run on reranker.gguf as a reranker:
    llama-server -m reranker.gguf --rerank -t 2 -fa off --port PORT
Standard library only.
usage: make_expected.py /path/to/llama-server   (run from golden/rerank)"""
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

PORT = 18937


def post(route, body):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (PORT, route), data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def main():
    proc = subprocess.Popen([sys.argv[1], "-m", "reranker.gguf", "--rerank", "-t", "2", "-fa", "off", "--port",
                             str(PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/health" % PORT) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.2)
        out = []
        for rq in json.load(open("requests.json")):
            status, body = post(rq["route"], rq["body"])
            out.append({"route": rq["route"], "request": rq["body"], "status": status, "response": body})
        with open("expected.json", "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
