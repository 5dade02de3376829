#!/bin/sh
# oxillama serve --lora: /v1/completions with the prompt of golden/run/once.prompt, 64 tokens at
# temperature 0, answers llama-completion's greedy text with the same adapter
# (golden/lora/llama.lora-a.expected), status 200.
# usage: check_lora_serve.sh OXILLAMA MODEL ADAPTER PROMPT_FILE EXPECTED_FILE
set -u
bin=$1 model=$2 lora=$3 prompt_file=$4 expected=$5
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
"$bin" serve --port 0 -m "$model" --lora "$lora" -t 2 2>"$work/log" &
pid=$!
base=""
for _ in $(seq 1 300); do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/log")
    if [ -n "$port" ] && grep -q "loaded in" "$work/log"; then
        base=http://127.0.0.1:$port
        break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$base" ]; then
    echo "FAIL  server did not start"
    cat "$work/log"
    exit 1
fi
prompt=$(cat "$prompt_file")
status=$(curl -s -o "$work/body" -w '%{http_code}' "$base/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"prompt\": \"$prompt\", \"max_tokens\": 64, \"temperature\": 0}")
python3 - "$work/body" "$expected" "$status" <<'PY'
import json, sys
body, expected, status = sys.argv[1], sys.argv[2], sys.argv[3]
want = open(expected, "rb").read().decode("utf-8", "replace")
try:
    got = json.load(open(body))["choices"][0]["text"]
except Exception as e:
    print("FAIL  status %s, no content: %s" % (status, open(body).read()[:300]))
    sys.exit(1)
if status != "200" or got != want:
    print("FAIL  status %s\n  want: %r\n  got:  %r" % (status, want, got))
    sys.exit(1)
print("PASS  /v1/completions with --lora: llama.cpp's greedy text (%d characters)" % len(want))
PY
