#!/usr/bin/env python3
"""A streamed reply that waits in the queue longer than --idle-timeout arrives whole.

libmicrohttpd counts the time a stream waits for its tokens as the connection's silence; before
the fix a stream queued behind other requests for more than --idle-timeout seconds was closed after
its headers or first event (tests/server/load.py saw it under AddressSanitizer). This starts
`oxillama serve -np 1 --idle-timeout 1`, times one long greedy stream alone, queues enough of them
to hold the slot for over 2.5 s, and sends short streams behind them: each must end with [DONE]
and chunked encoding's last chunk, and print the greedy text a lone request gets. A client that
stops reading is still cut (load.py's dropping clients; this test does not time it).

usage: stream_queued.py OXILLAMA MODEL
"""
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time

oxl, model = sys.argv[1:3]
failures = 0


def check(ok, what, detail=""):
    global failures
    print(("PASS  " if ok else "FAIL  ") + what)
    if not ok:
        failures += 1
        if detail:
            print("  " + detail.replace("\n", "\n  ")[:1500])


async def stream(port, n):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps({"prompt": "Once upon a time", "max_tokens": n, "temperature": 0, "stream": True}).encode()
    w.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
             "Content-Length: %d\r\n\r\n" % len(data)).encode() + data)
    await w.drain()
    raw = await asyncio.wait_for(r.read(), 300)
    w.close()
    return raw


def text_of(raw):
    """The streamed text, or None when the chunked body or the event stream is cut short."""
    head, _, body = raw.partition(b"\r\n\r\n")
    out, i = b"", 0
    while True:
        j = body.find(b"\r\n", i)
        if j < 0:
            return None
        n = int(body[i:j].split(b";")[0], 16)
        if n == 0:
            break
        out += body[j + 2:j + 2 + n]
        i = j + 2 + n + 2
    events = [l[6:] for l in out.split(b"\n") if l.startswith(b"data: ")]
    if not events or events[-1] != b"[DONE]":
        return None
    return "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1] if json.loads(e)["choices"])


async def main(port):
    t0 = time.monotonic()
    alone = text_of(await stream(port, 12))
    check(alone is not None, "a short stream alone arrives whole")
    t0 = time.monotonic()
    long_alone = await stream(port, 400)
    t_long = time.monotonic() - t0
    check(text_of(long_alone) is not None, "a long stream alone arrives whole (%.2f s)" % t_long)
    n_long = min(40, max(2, int(2.5 / max(t_long, 0.01)) + 1))
    jobs = [stream(port, 400) for _ in range(n_long)]
    results = await asyncio.gather(*jobs, *[stream(port, 12) for _ in range(2)])
    short = results[n_long:]
    for k, raw in enumerate(short):
        got = text_of(raw)
        check(got is not None and got == alone,
              "a short stream queued behind %d long ones (about %.1f s) arrives whole, the lone request's text"
              % (n_long, n_long * t_long), "got %r" % raw[-300:])
    check(all(text_of(r) is not None for r in results[:n_long]), "the long streams arrive whole")


work = tempfile.mkdtemp()
log = open(os.path.join(work, "log"), "w+")
srv = subprocess.Popen([oxl, "serve", "--port", "0", "-m", model, "-np", "1", "-t", "1", "-c", "1024",
                        "--idle-timeout", "1"], stdout=subprocess.DEVNULL, stderr=log)
try:
    port = None
    for _ in range(600):
        log.seek(0)
        s = log.read()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", s)
        if m and "loaded in" in s:
            port = int(m.group(1))
            break
        if srv.poll() is not None:
            break
        time.sleep(0.1)
    check(port is not None, "server start", s[-800:])
    if port:
        asyncio.run(main(port))
finally:
    srv.terminate()
    try:
        srv.wait(30)
    except subprocess.TimeoutExpired:
        srv.kill()
print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
