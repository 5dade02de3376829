#!/bin/sh
# The web chat page of oxillama serve (GET /), driven in Debian's headless chromium by puppeteer-core
# (webui.mjs), and --no-webui. Every loop is bounded.
# usage: webui.sh OXILLAMA_BINARY MODEL GOLDEN_RUN_DIR SCREENSHOT.png
set -u
bin=$1
model=$2
golden=$3
shot=$4
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
status=0

chromium=${CHROMIUM:-$(command -v chromium || true)}
if [ -z "$chromium" ] || [ ! -x "$chromium" ]; then
    echo "FAIL  no chromium: install Debian's package chromium (apt-get install chromium; build.sh PACKAGES)"
    exit 1
fi
if [ ! -d "$here/node_modules/puppeteer-core" ]; then
    (cd "$here" && npm ci --no-audit --no-fund >/dev/null 2>&1) || {
        echo "FAIL  npm ci: cannot install puppeteer-core (tests/server/package.json)"
        exit 1
    }
fi

# start NAME ARGS...: the server on a free port; sets pid and base once the model is loaded.
start() {
    log=$work/$1.log
    shift
    "$bin" serve --port 0 -t 1 "$@" 2>"$log" &
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

# a template that renders the messages' contents back to back (as anthropic.sh's): a user message
# "Once upon a time" is the text of golden/run/once.prompt, whose greedy continuation is llama.cpp's.
# --context-shift: a reply without a token limit runs on, for the stop button.
printf '%s' "{% for message in messages %}{{ message['content'] }}{% endfor %}" >"$work/plain.jinja"
start page -m "$model" -np 2 --context-shift --chat-template-file "$work/plain.jinja"
timeout 240 node "$here/webui.mjs" "$base" "$golden" "$shot" "$chromium" || status=1
stop page

# --no-webui: / and /webui/... are 404 with an error object; the API still answers
start off -m "$model" --no-webui
for u in / /webui/app.js; do
    code=$(curl -s -o "$work/body" -w '%{http_code}' --max-time 30 "$base$u")
    if [ "$code" = 404 ] && grep -q '"code":"unknown_url"' "$work/body" && grep -q -- '--no-webui' "$work/body"; then
        echo "PASS  --no-webui: GET $u -> 404"
    else
        echo "FAIL  --no-webui: GET $u -> $code $(head -c 300 "$work/body")"
        status=1
    fi
done
code=$(curl -s -o "$work/body" -w '%{http_code}' --max-time 30 "$base/health")
[ "$code" = 200 ] && echo "PASS  --no-webui: /health still 200" || {
    echo "FAIL  --no-webui: /health -> $code"
    status=1
}
stop off
[ $status -eq 0 ] && echo "all web page checks passed"
exit $status
