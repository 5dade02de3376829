#!/bin/sh
# Streaming over the WebSocket route GET /v1/ws (ws.mjs, npm's ws client) against oxillama serve on
# a loopback port. Exits 77 (skipped) when the clients are not installed (npm ci in tests/server).
# usage: ws.sh OXILLAMA_BINARY MODEL GOLDEN_RUN_DIR
set -u
bin=$1
model=$2
golden=$3
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/ws" ] || [ ! -d "$here/node_modules/openai" ]; then
    echo "SKIP  the ws and OpenAI Node clients are not installed (run npm ci in tests/server)"
    exit 77
fi
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
"$bin" serve --port 0 -m "$model" -c 8192 -np 2 -t 1 --api-key sk-ws-test 2>"$work/log" &
pid=$!
i=0
port=
while [ $i -lt 200 ]; do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/log")
    [ -n "$port" ] && grep -q "loaded in" "$work/log" && break
    port=
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
done
if [ -z "$port" ]; then
    echo "FAIL  server start:"
    cat "$work/log"
    exit 1
fi
timeout 240 node "$here/ws.mjs" "http://127.0.0.1:$port" sk-ws-test "$(basename "$model")" "$golden"
status=$?
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
if [ "$rc" -ne 0 ]; then
    echo "FAIL  server exit status $rc after SIGTERM"
    cat "$work/log"
    status=1
fi
exit $status
