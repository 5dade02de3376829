#!/bin/sh
# Images in chat requests of oxillama serve (--mmproj), driven by the official OpenAI Node client
# (vision.mjs): golden/mm's LLaVA-1.5 and Gemma 3 pairs, whose greedy replies are llama.cpp's (the
# `greedy` ids of <id>.golden.gguf, detokenized by the server). Every loop is bounded.
# usage: vision.sh OXILLAMA_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
status=0
mm=$src/golden/mm

if [ ! -d "$here/node_modules/openai" ]; then
    (cd "$here" && npm ci --no-audit --no-fund >/dev/null 2>&1) || {
        echo "FAIL  npm ci: cannot install the OpenAI client (tests/server/package.json)"
        exit 1
    }
fi

# golden_greedy ID: llama.cpp's greedy ids of golden/mm/ID.golden.gguf, comma-separated, then its prompt
# length (golden.n_tokens): the tensor table of `oxillama info` gives the offsets in the data
# section, which ends the file
golden_greedy() {
    "$bin" info "$mm/$1.golden.gguf" >"$work/info.txt" || return 1
    python3 - "$mm/$1.golden.gguf" "$work/info.txt" <<'PY'
import re, struct, sys
rows, n_tokens = {}, None
for line in open(sys.argv[2]):
    m = re.match(r"\s+\d+\s+(\S+)\s+(\S+)\s+.*?\s(\d+)\s+(\d+)\s*$", line)
    if m:
        rows[m.group(1)] = (m.group(2), int(m.group(3)), int(m.group(4)))
    m = re.match(r"\s+golden\.n_tokens\s+uint32\s+=\s+(\d+)", line)
    if m:
        n_tokens = int(m.group(1))
data = open(sys.argv[1], "rb").read()
base = len(data) - max(n + off for _, n, off in rows.values())
t, n, off = rows["greedy"]
assert t == "i32" and n == 32 and n_tokens, (rows["greedy"], n_tokens)
print(",".join(str(v) for v in struct.unpack("<8i", data[base + off:base + off + n])), n_tokens)
PY
}
g=$(golden_greedy llava15) && g3=$(golden_greedy gemma3) || {
    echo "FAIL  cannot read the greedy ids of llava15.golden.gguf and gemma3.golden.gguf"
    exit 1
}
greedy=${g% *}

# start NAME ARGS...: the server on a free port; sets pid and base once the model is loaded.
start() {
    log=$work/$1.log
    shift
    "$bin" serve --port 0 -t 1 -np 2 "$@" 2>"$log" &
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

# a template that renders the messages' contents back to back: a user message of an image part and
# the text "Describe:" is the golden prompt "<__media__>\nDescribe:" (BOS in front)
printf '%s' "{% for message in messages %}{{ message['content'] }}{% endfor %}" >"$work/plain.jinja"
# a truncated PNG: its first 1000 bytes
head -c 1000 "$mm/image.png" >"$work/cut.png"

start vision -m "$src/golden/arch/llama.gguf" --mmproj "$mm/llava15.mmproj.gguf" -ctk f32 -ctv f32 -fa off \
    --chat-template-file "$work/plain.jinja" --context-shift
node "$here/vision.mjs" "$base" vision "$mm/image.png" "$work/cut.png" "$greedy" || status=1
stop vision
# llama-server turns context shift off with a projector, with a warning
if grep -q -- "--context-shift is not supported with --mmproj, it is disabled" "$work/vision.log"; then
    echo "PASS  --context-shift with --mmproj: disabled"
else
    echo "FAIL  --context-shift with --mmproj: no warning"
    status=1
fi

# Gemma 3: <start_of_image> / <end_of_image> around the image, its rows decoded non-causally
start gemma3 -m "$src/golden/arch/gemma3.gguf" --mmproj "$mm/gemma3.mmproj.gguf" -ctk f32 -ctv f32 -fa off \
    --chat-template-file "$work/plain.jinja"
node "$here/vision.mjs" "$base" gemma3 "$mm/image.png" "$work/cut.png" "${g3% *}" "${g3#* }" || status=1
stop gemma3

# without --mmproj an image part is a 400 naming --mmproj
start text -m "$src/golden/arch/llama.gguf" --chat-template-file "$work/plain.jinja"
node "$here/vision.mjs" "$base" text "$mm/image.png" "$work/cut.png" "$greedy" || status=1
stop text

# --mmproj belongs to one model: refused with several
if "$bin" serve --port 0 -m "$src/golden/arch/llama.gguf" -m "$src/golden/arch/llama.gguf" \
    --mmproj "$mm/llava15.mmproj.gguf" 2>"$work/several.log"; then
    echo "FAIL  --mmproj with several models: started"
    status=1
elif grep -q -- "--mmproj belongs to one model" "$work/several.log"; then
    echo "PASS  --mmproj with several models: refused"
else
    echo "FAIL  --mmproj with several models:"
    cat "$work/several.log"
    status=1
fi

# a file that is no mmproj: a startup error naming it
if "$bin" serve --port 0 -m "$src/golden/arch/llama.gguf" --mmproj "$mm/image.png" 2>"$work/bad.log"; then
    echo "FAIL  --mmproj of a PNG: started"
    status=1
elif grep -q -- "--mmproj" "$work/bad.log" && grep -q "image.png" "$work/bad.log"; then
    echo "PASS  --mmproj of a PNG: startup error"
else
    echo "FAIL  --mmproj of a PNG:"
    cat "$work/bad.log"
    status=1
fi
[ $status -eq 0 ] && echo "all vision checks passed"
exit $status
