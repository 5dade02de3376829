#!/bin/sh
# Images beyond the chat route of oxillama serve (--mmproj), through the official OpenAI and
# Anthropic Node clients and llama-server's /completion (vision_routes.mjs): every reply is
# llama.cpp's greedy golden of golden/mm (the `greedy` ids of the pair's golden file, detokenized by
# the server). Covers: the image cache (a repeated image reuses the cached prefix through it, a
# different image does not), Qwen2-VL (M-RoPE) images, /completion's multimodal_data, /v1/messages'
# image blocks, and --image-min-tokens / --image-max-tokens. Every loop is bounded.
# usage: vision_routes.sh OXILLAMA_BINARY SOURCE_DIR
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

if [ ! -d "$here/node_modules/openai" ] || [ ! -d "$here/node_modules/@anthropic-ai/sdk" ]; then
    (cd "$here" && npm ci --no-audit --no-fund >/dev/null 2>&1) || {
        echo "FAIL  npm ci: cannot install the OpenAI and Anthropic clients (tests/server/package.json)"
        exit 1
    }
fi

# greedy ID: llama.cpp's 8 greedy ids of golden/mm/ID.golden.gguf, comma-separated (the tensor table
# of `oxillama info` gives the offsets in the data section, which ends the file)
greedy() {
    "$bin" info "$mm/$1.golden.gguf" >"$work/info-$1.txt" || return 1
    python3 - "$mm/$1.golden.gguf" "$work/info-$1.txt" <<'PY'
import re, struct, sys
rows = {}
for line in open(sys.argv[2]):
    m = re.match(r"\s+\d+\s+(\S+)\s+(\S+)\s+.*?\s(\d+)\s+(\d+)\s*$", line)
    if m:
        rows[m.group(1)] = (m.group(2), int(m.group(3)), int(m.group(4)))
data = open(sys.argv[1], "rb").read()
base = len(data) - max(n + off for _, n, off in rows.values())
t, n, off = rows["greedy"]
assert t == "i32" and n == 32, rows["greedy"]
print(",".join(str(v) for v in struct.unpack("<8i", data[base + off:base + off + n])))
PY
}
llava=$(greedy llava15) && qwen=$(greedy qwen2vl) || {
    echo "FAIL  cannot read the greedy ids of the golden files"
    exit 1
}
# the golden ids must be the README's (a misread table would pass anything)
[ "$llava" = "334,429,489,75,335,233,406,75" ] && [ "$qwen" = "477,27,179,477,345,400,179,27" ] || {
    echo "FAIL  greedy ids: llava15 $llava, qwen2vl $qwen"
    exit 1
}

# a second, different image: the golden image's pixels turned upside down, as a PNG written here
python3 - "$mm/image.png" "$work/other.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        ihdr = body
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype = struct.unpack(">IIBB", ihdr[:10])
assert depth == 8 and ctype == 2, (depth, ctype)
raw, stride, rows, prev = zlib.decompress(idat), 3 * w, [], bytearray(3 * w)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - 3] if x >= 3 else 0
        b, c = prev[x], prev[x - 3] if x >= 3 else 0
        p = a + b - c
        pr = a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c
        line[x] = (line[x] + (0, a, b, (a + b) // 2, pr)[f]) & 255
    rows.append(bytes(line))
    prev = line
out = b"".join(b"\0" + r for r in reversed(rows))
chunk = lambda k, b: struct.pack(">I", len(b)) + k + b + struct.pack(">I", zlib.crc32(k + b))
open(sys.argv[2], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(out)) +
                              chunk(b"IEND", b""))
PY
[ -s "$work/other.png" ] || { echo "FAIL  cannot write the second image"; exit 1; }

# start NAME ARGS...: the server on a free port; sets pid and base once the model is loaded.
start() {
    log=$work/$1.log
    : >"$log"
    shift
    "$bin" serve --port 0 -t 1 -np 2 -ctk f32 -ctv f32 -fa off --chat-template-file "$work/plain.jinja" "$@" \
        2>"$log" &
    pid=$!
    i=0
    base=
    while [ $i -lt 300 ]; do
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
# the text "Describe:" is the goldens' prompt "<__media__>\nDescribe:" (BOS in front)
printf '%s' "{% for message in messages %}{{ message['content'] }}{% endfor %}" >"$work/plain.jinja"
img=$mm/image.png
other=$work/other.png

start llava -m "$src/golden/arch/llama.gguf" --mmproj "$mm/llava15.mmproj.gguf"
node "$here/vision_routes.mjs" "$base" llava15 "$img" "$other" "$llava" || status=1
stop llava

start qwen -m "$src/golden/arch/qwen2vl.gguf" --mmproj "$mm/qwen2vl.mmproj.gguf"
node "$here/vision_routes.mjs" "$base" qwen2vl "$img" "$other" "$qwen" || status=1
stop qwen

start qwen-min -m "$src/golden/arch/qwen2vl.gguf" --mmproj "$mm/qwen2vl.mmproj.gguf" --image-min-tokens 64
node "$here/vision_routes.mjs" "$base" qwen2vl-min64 "$img" "$other" "$qwen" || status=1
stop qwen-min

start qwen-max -m "$src/golden/arch/qwen2vl.gguf" --mmproj "$mm/qwen2vl.mmproj.gguf" --image-min-tokens 2 \
    --image-max-tokens 4
node "$here/vision_routes.mjs" "$base" qwen2vl-max4 "$img" "$other" "$qwen" || status=1
stop qwen-max

# llama.cpp's fixed-size projectors ignore the limits: the same 9 image rows, the same reply
start llava-min -m "$src/golden/arch/llama.gguf" --mmproj "$mm/llava15.mmproj.gguf" --image-min-tokens 64
node "$here/vision_routes.mjs" "$base" llava15-min64 "$img" "$other" "$llava" || status=1
stop llava-min

# limits that cannot both hold: a startup error naming them
if "$bin" serve --port 0 -m "$src/golden/arch/qwen2vl.gguf" --mmproj "$mm/qwen2vl.mmproj.gguf" \
    --image-min-tokens 100 --image-max-tokens 50 2>"$work/bad.log"; then
    echo "FAIL  --image-min-tokens 100 --image-max-tokens 50: started"
    status=1
elif grep -q "image_max_tokens 50) is less than image_min_pixels (78400, image_min_tokens 100)" "$work/bad.log"; then
    echo "PASS  --image-min-tokens above --image-max-tokens: startup error"
else
    echo "FAIL  --image-min-tokens above --image-max-tokens:"
    cat "$work/bad.log"
    status=1
fi

# without --mmproj: /completion's multimodal_data and an image block are 400s naming --mmproj
start text -m "$src/golden/arch/llama.gguf"
node "$here/vision_routes.mjs" "$base" text "$img" "$other" "$llava" || status=1
stop text
[ $status -eq 0 ] && echo "all vision route checks passed"
exit $status
