#!/bin/sh
# Bounded load test of `oxillama serve` on loopback (tests/server/load.py is the client): many
# connections and streams, slow and idle clients, clients leaving mid-stream. Passes when every
# accepted request is answered correctly (greedy text = llama.cpp's golden), the only rejections
# are 503s of a full queue, slow/idle clients are cut, the server's RSS after the load is within
# 10 % of its warmed-up value, its log has no error line, and it exits 0 on SIGTERM.
# usage: load.sh OXILLAMA_BINARY MODEL GOLDEN_RUN_DIR
set -u
bin=$1
model=$2
golden=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
idle=2

"$bin" serve --port 0 -m "$model" -np 4 -t 1 --queue-size 16 --max-connections 96 --idle-timeout $idle \
    --shutdown-timeout 5 2>"$work/log" &
pid=$!
i=0
port=
while [ $i -lt 300 ] && kill -0 "$pid" 2>/dev/null; do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/log")
    [ -n "$port" ] && grep -q "loaded in" "$work/log" && break
    sleep 0.1
    i=$((i + 1))
done
grep -q "loaded in" "$work/log" || { echo "FAIL  server start"; cat "$work/log"; exit 1; }
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status"; }
# idle: no slot processing
settle() {
    i=0
    while [ $i -lt 100 ] && curl -s --max-time 5 "http://127.0.0.1:$port/slots" | grep -q '"is_processing":true'; do
        sleep 0.1
        i=$((i + 1))
    done
}

# warm-up: the same workers, two rounds, so the baseline holds the model, the KV cache of every
# slot, and the threads and buffers of as many connections
python3 "$here/load.py" "$port" "$golden" $idle warm >/dev/null || { echo "FAIL  warm-up"; exit 1; }
settle
before=$(rss)

python3 "$here/load.py" "$port" "$golden" $idle >"$work/result"
rc=$?
settle
sleep 1
after=$(rss)
status=0
cat "$work/result"
[ $rc -eq 0 ] && echo "PASS  load: every accepted request answered correctly" || { echo "FAIL  load"; status=1; }
echo "RSS before ${before} kB, after ${after} kB"
if grep -q __asan_init "$bin"; then
    echo "SKIP  RSS check: AddressSanitizer's quarantine holds freed memory (LeakSanitizer checks at exit)"
elif [ -n "$before" ] && [ -n "$after" ] && [ "$after" -le $((before + before / 10)) ]; then
    echo "PASS  RSS within 10 %"
else
    echo "FAIL  RSS grew by more than 10 %"
    status=1
fi
kill -TERM "$pid"
i=0
while [ $i -lt 300 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
wait "$pid"
rc=$?
pid=
[ $rc -eq 0 ] && echo "PASS  exit 0 after SIGTERM" || { echo "FAIL  exit status $rc"; status=1; }
# the log holds the start, stop and shutdown lines and the request log's lines only
if grep -v -E "^(oxillama serve: (.* loaded in |listening on |SIGTERM: no new connections|stopped$)|request: )" "$work/log" >"$work/extra"; then
    echo "FAIL  unexpected log lines:"
    head -20 "$work/extra"
    status=1
else
    echo "PASS  log clean"
fi
exit $status
