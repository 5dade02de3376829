#!/bin/sh
# llama-server's own API of oxillama serve (/completion, /props, /apply-template, /models) against
# llama-server's replies stored in golden/server/ (README.md there). Every loop is bounded.
# usage: native.sh OXILLAMA_BINARY MODEL GOLDEN_SERVER_DIR
set -u
bin=$1
model=$2
golden=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
status=0

"$bin" serve --port 0 -m "$model" -t 1 --api-key sk-native 2>"$work/log" &
pid=$!
i=0
base=
while [ $i -lt 200 ]; do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/log")
    if [ -n "$port" ] && grep -q "loaded in" "$work/log"; then
        base=http://127.0.0.1:$port
        break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
done
if [ -z "$base" ]; then
    echo "FAIL  server start:"
    cat "$work/log"
    exit 1
fi

python3 "$here/check_native.py" "$base" sk-native "$golden/penalties.json" "$golden/samplers.json" || status=1
python3 "$here/check_native_info.py" "$base" sk-native "$golden/native.json" "$golden/info.json" || status=1

kill -TERM "$pid"
i=0
while [ $i -lt 300 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
wait "$pid"
rc=$?
pid=
if [ $rc -ne 0 ]; then
    echo "FAIL  server exit status $rc after SIGTERM"
    status=1
fi
[ $status -eq 0 ] && echo "all native API checks passed"
exit $status
