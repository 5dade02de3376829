#!/bin/sh
# Streamed tool calls through the OpenAI Node client (toolstream.mjs) against oxillama serve on a
# loopback port, on the bigram model of make_toolcall_model.py. Exits 77 (skipped) when the
# client is not installed (npm ci in tests/server).
# usage: toolstream.sh OXILLAMA_BINARY
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/openai" ]; then
    echo "SKIP  the OpenAI Node client is not installed (run npm ci in tests/server)"
    exit 77
fi
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
python3 "$here/make_toolcall_model.py" "$work/toolcall.gguf" || exit 1
"$bin" serve --port 0 -m "$work/toolcall.gguf" -np 1 -t 1 --alias toolcall 2>"$work/log" &
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
node "$here/toolstream.mjs" "http://127.0.0.1:$port"
status=$?
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
if [ "$rc" -ne 0 ]; then
    echo "FAIL  server exit status $rc after SIGTERM"
    status=1
fi
exit $status
