#!/usr/bin/env python3
"""Load test client for `oxillama serve` (tests/server/load.sh starts the server and reads its RSS).

usage: load.py PORT GOLDEN_RUN_DIR IDLE_TIMEOUT [warm]
"warm" runs the workers only, two rounds each (the warm-up before the RSS baseline). Otherwise it
runs at once, all bounded in count and time:
  - WORKERS workers, each sending ROUNDS requests over new connections: greedy completions
    (plain and streamed, compared with llama.cpp's once.expected), chats (plain and streamed)
    and /tokenize; 503 server_overloaded (full queue) is the only accepted rejection;
  - SLOW clients sending a request's headers one byte per second (they would need over 100 s to
    send them), and IDLE clients sending nothing: the server must close each (the client waits
    for that at most WAIT seconds: a bound on the test, not a timing requirement);
  - DROPS clients that start a long stream and disconnect after a few events.
Prints the counts as one JSON line; exit status 1 on any wrong answer.
"""
import asyncio
import json
import sys
import time

WORKERS, ROUNDS, SLOW, IDLE, DROPS = 32, 10, 8, 8, 16
WAIT = 90  # seconds: the longest any client waits for the server
port = int(sys.argv[1])
golden = sys.argv[2]
idle_timeout = float(sys.argv[3])  # the server's --idle-timeout (the clients wait longer: WAIT)
prompt = open(golden + "/once.prompt").read()
expected = open(golden + "/once.expected").read()
stats = {"requests": 0, "ok": 0, "rejected_503": 0, "streams": 0, "slow_cut": 0, "idle_cut": 0, "dropped": 0,
         "errors": []}


def fail(msg):
    stats["errors"].append(msg[:300])


def dechunk(body):
    out, i = b"", 0
    while True:
        j = body.index(b"\r\n", i)
        n = int(body[i:j].split(b";")[0], 16)
        if n == 0:
            return out
        out += body[j + 2:j + 2 + n]
        i = j + 2 + n + 2


async def http(method, path, obj, read_events=None):
    """One request on a new connection; returns (status, body bytes). read_events: close after
    that many SSE events instead of reading the whole reply."""
    r, w = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(obj).encode() if obj is not None else b""
    w.write(("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
             "Content-Length: %d\r\n\r\n" % (method, path, len(data))).encode() + data)
    await w.drain()
    if read_events is not None:
        if (await asyncio.wait_for(r.readline(), 60)).split()[1:2] == [b"503"]:
            w.close()
            return -1, b""
        seen = 0
        while seen < read_events:
            line = await asyncio.wait_for(r.readline(), 60)
            if not line:
                break
            seen += line.startswith(b"data: ")
        w.close()
        return seen, b""
    raw = await asyncio.wait_for(r.read(), 120)
    w.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    if any(l.lower().startswith(b"transfer-encoding: chunked") for l in lines[1:]):
        body = dechunk(body)
    return status, body


def stream_text(body, chat):
    text = ""
    events = [l[6:] for l in body.split(b"\n") if l.startswith(b"data: ")]
    if not events or events[-1] != b"[DONE]":
        raise ValueError("no [DONE]")
    for e in events[:-1]:
        c = json.loads(e)["choices"]
        if c:
            text += (c[0]["delta"].get("content") or "") if chat else c[0]["text"]
    return text


async def one(kind):
    stats["requests"] += 1
    greedy = {"prompt": prompt, "max_tokens": 64, "temperature": 0}
    chat = {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 16}
    if kind == 0:
        st, body = await http("POST", "/v1/completions", greedy)
    elif kind == 1:
        st, body = await http("POST", "/v1/completions", dict(greedy, stream=True))
    elif kind == 2:
        st, body = await http("POST", "/v1/chat/completions", chat)
    elif kind == 3:
        st, body = await http("POST", "/v1/chat/completions", dict(chat, stream=True))
    else:
        st, body = await http("POST", "/tokenize", {"content": prompt})
    if st == 503 and b'"code":"server_overloaded"' in body:
        stats["rejected_503"] += 1
        return
    if st != 200:
        return fail("kind %d: status %d %r" % (kind, st, body[:200]))
    try:
        if kind == 0:
            ok = json.loads(body)["choices"][0]["text"] == expected
        elif kind == 1:
            ok = stream_text(body, False) == expected
        elif kind == 2:
            ok = json.loads(body)["choices"][0]["message"]["role"] == "assistant"
        elif kind == 3:
            ok = isinstance(stream_text(body, True), str)
        else:
            ok = len(json.loads(body)["tokens"]) == 4
        stats["streams"] += kind in (1, 3)
    except Exception as e:  # a malformed reply is a wrong answer
        ok = False
        body = repr(e).encode() + b" " + body
    if ok:
        stats["ok"] += 1
    else:
        fail("kind %d: wrong answer %r" % (kind, body[:200]))


async def worker(w):
    for i in range(ROUNDS):
        await one((w + i) % 5)


async def slow(trickle):
    """Headers one byte per second (or nothing at all): the server must close the connection."""
    r, w = await asyncio.open_connection("127.0.0.1", port)
    req = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 100
    t0 = time.monotonic()
    limit = WAIT
    i = 0
    while time.monotonic() - t0 < limit:
        if trickle and i < len(req):
            try:
                w.write(req[i:i + 1])
                await w.drain()
            except (ConnectionError, OSError):
                break
            i += 1
        try:
            got = await asyncio.wait_for(r.read(1024), 1.0 if trickle else limit)
            if got == b"" or b"HTTP/1.1 4" in got or b"HTTP/1.1 5" in got:
                break
        except asyncio.TimeoutError:
            continue
        except (ConnectionError, OSError):
            break
    else:
        w.close()
        return fail("%s client still connected after %.0f s (the request was %s)" %
                    ("slow" if trickle else "idle", limit, "sent" if i == len(req) else "not sent yet"))
    w.close()
    stats["slow_cut" if trickle else "idle_cut"] += 1


async def drop():
    t0 = time.monotonic()
    while True:  # a full queue answers 503: retry (for at most WAIT seconds)
        seen, _ = await http("POST", "/v1/completions",
                             {"prompt": "Once", "max_tokens": 1000, "logit_bias": {"2": -100}, "stream": True},
                             read_events=3)
        if seen >= 0 or time.monotonic() - t0 > WAIT:
            break
        stats["rejected_503"] += 1
        await asyncio.sleep(0.1)
    if seen == 3:
        stats["dropped"] += 1
    else:
        fail("drop: %d events before the stream ended" % seen)


async def main():
    global ROUNDS
    t0 = time.monotonic()
    if sys.argv[4:] == ["warm"]:
        ROUNDS = 2
        await asyncio.gather(*[worker(w) for w in range(WORKERS)])
        return 1 if stats["errors"] else 0
    await asyncio.gather(*[worker(w) for w in range(WORKERS)], *[slow(True) for _ in range(SLOW)],
                         *[slow(False) for _ in range(IDLE)], *[drop() for _ in range(DROPS)])
    stats["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(stats))
    return 1 if stats["errors"] else 0


sys.exit(asyncio.run(main()))
