#!/bin/sh
# llama-server's own API of oxillama serve (/completion, /infill, /props, /apply-template, /models) against
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

# start NAME ARGS...: the server on a free port; sets pid and base once the model is loaded.
start() {
    log=$work/$1.log
    shift
    "$bin" serve --port 0 -t 1 --api-key sk-native "$@" 2>"$log" &
    pid=$!
    i=0
    base=
    while [ $i -lt 200 ]; do
        port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log")
        if [ -n "$port" ] && grep -q "loaded in" "$log"; then
            base=http://127.0.0.1:$port
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
        i=$((i + 1))
    done
    echo "FAIL  server start:"
    cat "$log"
    exit 1
}

# stop NAME: SIGTERM; the server must exit 0 within 30 s.
stop() {
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
        echo "FAIL  $1: exit status $rc after SIGTERM"
        status=1
    fi
}

start stories -m "$model"
python3 "$here/check_native.py" "$base" sk-native "$golden/penalties.json" "$golden/samplers.json" || status=1
python3 "$here/check_native_info.py" "$base" sk-native "$golden/native.json" "$golden/info.json" || status=1

python3 "$here/check_infill.py" "$base" sk-native "$golden/infill.json" refusal || status=1
stop stories

# /infill on a model with FIM tokens (make_fim_model.py), -b 128 as llama-server ran
python3 "$here/make_fim_model.py" "$work/fim.gguf" || {
    echo "FAIL  make_fim_model.py"
    exit 1
}
start fim -m "$work/fim.gguf" -b 128
python3 "$here/check_infill.py" "$base" sk-native "$golden/infill.json" cases || status=1
stop fim
[ $status -eq 0 ] && echo "all native API checks passed"
exit $status
