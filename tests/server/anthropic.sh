#!/bin/sh
# Anthropic's Messages API of oxillama serve (POST /v1/messages, /v1/messages/count_tokens), driven by
# Anthropic's official Node SDK (anthropic.mjs) on three servers. Every loop is bounded.
# usage: anthropic.sh OXILLAMA_BINARY MODEL GOLDEN_RUN_DIR
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
    "$bin" serve --port 0 -t 1 -np 2 --api-key sk-ant-test "$@" 2>"$log" &
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

if [ ! -d "$here/node_modules/@anthropic-ai/sdk" ]; then
    (cd "$here" && npm ci --no-audit --no-fund >/dev/null 2>&1) || {
        echo "FAIL  npm ci: cannot install the Anthropic SDK (tests/server/package.json)"
        exit 1
    }
fi

# a template that renders the messages' contents back to back: the prompt of a user message
# "Once upon a time" is the text of golden/run/once.prompt, whose greedy continuation is llama.cpp's
printf '%s' "{% for message in messages %}{{ message['content'] }}{% endfor %}" >"$work/plain.jinja"
start plain -m "$model" --chat-template-file "$work/plain.jinja"
node "$here/anthropic.mjs" "$base" sk-ant-test plain "$golden" || status=1
stop plain

# the model's own chat template (ChatML: stories260K has none)
start chatml -m "$model"
node "$here/anthropic.mjs" "$base" sk-ant-test chatml "$golden" || status=1
stop chatml

# tool use on the model of make_toolcall_model.py (ChatML, Hermes 2 Pro reply format)
python3 "$here/make_toolcall_model.py" "$work/toolcall.gguf" || {
    echo "FAIL  make_toolcall_model.py"
    exit 1
}
start tools -m "$work/toolcall.gguf"
node "$here/anthropic.mjs" "$base" sk-ant-test tools "$golden" || status=1
stop tools

# the same model under Qwen QwQ's template (golden/chat-templates' copy less llama.cpp's enable_thinking
# switch, as run.sh runs it), whose prompt opens <think>; the rendered tools need a longer context
sed '/enable_thinking/d' "$here/../../golden/chat-templates/Qwen-QwQ-32B/template.jinja" >"$work/qwq.jinja"
start think -m "$work/toolcall.gguf" -c 4096 --chat-template-file "$work/qwq.jinja"
node "$here/anthropic.mjs" "$base" sk-ant-test think "$golden" || status=1
stop think
[ $status -eq 0 ] && echo "all Messages API checks passed"
exit $status
