#!/bin/sh
# oxillama serve end to end: starts the real server on loopback ports and drives it with curl and
# with the official OpenAI Node client (client.mjs). Every loop is bounded.
# usage: run.sh OXILLAMA_BINARY MODEL GOLDEN_RUN_DIR
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

pass() { echo "PASS  $1"; }
fail() {
    echo "FAIL  $1: $2"
    status=1
}

# start_server NAME ARGS...: sets pid, port and base once the model is loaded.
start_server() {
    log=$work/$1.log
    shift
    : >"$log"
    "$bin" serve --port 0 "$@" 2>"$log" &
    pid=$!
    i=0
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

# stop_server SIGNAL NAME: the server must exit 0 within 30 s.
stop_server() {
    kill -"$1" "$pid"
    i=0
    while [ $i -lt 300 ] && kill -0 "$pid" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        fail "$2" "still running 30 s after SIG$1"
        kill -KILL "$pid"
    fi
    wait "$pid"
    rc=$?
    pid=
    [ $rc -eq 0 ] && pass "$2" || fail "$2" "exit status $rc"
}

# req NAME STATUS BODY_REGEX CURL_ARGS...: one request, its status and a regex over its body.
req() {
    name=$1 want=$2 re=$3
    shift 3
    got=$(curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' --max-time 60 "$@")
    if [ "$got" = "$want" ] && { [ -z "$re" ] || grep -Eq -- "$re" "$work/body"; }; then
        pass "$name"
    else
        fail "$name" "status $got (want $want), body $(head -c 400 "$work/body")"
    fi
}

# json FILE EXPR: a value of the JSON in FILE (python3 is part of the build's packages).
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2, end='')" "$1"; }

if [ ! -d "$here/node_modules/openai" ]; then
    (cd "$here" && npm ci --no-audit --no-fund >/dev/null 2>&1) || fail "npm ci" "cannot install the openai client"
fi

# --- server 0: a model that is still loading (a FIFO blocks the loader until it is written) ------
mkfifo "$work/loading.gguf"
: >"$work/zero.log"
"$bin" serve --port 0 -m "$work/loading.gguf" 2>"$work/zero.log" &
pid=$!
i=0
while [ $i -lt 300 ] && ! grep -q "listening on" "$work/zero.log"; do
    sleep 0.1
    i=$((i + 1))
done
base=http://127.0.0.1:$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/zero.log")
req "ready while loading -> 503" 503 '"code":"model_loading"' "$base/ready"
grep -qi '^retry-after: 1' "$work/headers" && pass "503 while loading has Retry-After" || fail "503 while loading has Retry-After" "$(cat "$work/headers")"
req "health while loading" 200 '"status":"loading model"' "$base/health"
req "chat while loading -> 503" 503 '"code":"model_loading"' -d '{"messages": []}' "$base/v1/chat/completions"
timeout 10 cat "$model" >"$work/loading.gguf"
wait "$pid"
rc=$?
pid=
# the loader takes regular files only: the server reports it and exits 1
[ $rc -eq 1 ] && grep -q "not a regular file" "$work/zero.log" && pass "load failure exits 1" ||
    fail "load failure exits 1" "exit $rc: $(cat "$work/zero.log")"

# --- server 1: 16 slots, two API keys ----------------------------------------------------------
start_server one -m "$model" -np 16 -t 1 --alias tiny-stories --api-key sk-test-1 --api-key sk-test-2 \
    --max-headers 20 --shutdown-timeout 1
K="Authorization: Bearer sk-test-1"
J="Content-Type: application/json"

req "health" 200 '"status":"ok"' "$base/health"
req "ready" 200 '"status":"ready"' "$base/ready"
req "models without key -> 401" 401 '"code":"invalid_api_key"' "$base/v1/models"
req "models with a wrong key -> 401" 401 '"type":"invalid_request_error"' -H "Authorization: Bearer sk-test-3" "$base/v1/models"
req "models" 200 '"id":"tiny-stories"' -H "$K" "$base/v1/models"
req "models with X-Api-Key" 200 '"object":"list"' -H "X-Api-Key: sk-test-2" "$base/v1/models"
req "one model" 200 '"object":"model"' -H "$K" "$base/v1/models/tiny-stories"
req "unknown model -> 404" 404 '"code":"model_not_found"' -H "$K" "$base/v1/models/gpt-x"
req "unknown route -> 404" 404 '"code":"unknown_url"' -H "$K" "$base/v2/nothing"
req "wrong method -> 405" 405 '"code":"method_not_allowed"' -H "$K" "$base/v1/chat/completions"
req "malformed JSON -> 400" 400 '"code":"invalid_json".*|byte offset 13' -H "$K" -H "$J" -d '{"messages": [' "$base/v1/chat/completions"
req "non-object body -> 400" 400 'must be a JSON object' -H "$K" -H "$J" -d '[1, 2]' "$base/v1/completions"
req "wrong type -> 400 naming the field" 400 '"param":"messages"' -H "$K" -H "$J" -d '{"messages": "hi"}' "$base/v1/chat/completions"
req "temperature type -> 400" 400 '"param":"temperature"' -H "$K" -H "$J" \
    -d '{"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}' "$base/v1/chat/completions"
req "max_tokens range -> 400" 400 '"param":"max_tokens"' -H "$K" -H "$J" -d '{"prompt": "a", "max_tokens": -1}' "$base/v1/completions"
req "unknown role -> 400" 400 '"param":"messages\[0\]"' -H "$K" -H "$J" \
    -d '{"messages": [{"role": "wizard", "content": "hi"}]}' "$base/v1/chat/completions"
printf '{"prompt": "caf\303\051"}' >"$work/bad-utf8"
req "invalid UTF-8 -> 400" 400 'offset 15.*"code":"invalid_utf8"' -H "$K" -H "$J" --data-binary @"$work/bad-utf8" "$base/v1/completions"
head -c 2000000 /dev/zero | tr '\0' ' ' >"$work/huge"
req "huge body -> 413" 413 '"code":"request_too_large"' -H "$K" -H "$J" --data-binary @"$work/huge" "$base/v1/completions"
req "huge chunked body -> 413" 413 '"code":"request_too_large"' -H "$K" -H "$J" -H "Transfer-Encoding: chunked" \
    --data-binary @"$work/huge" "$base/v1/completions"
set --
i=0
while [ $i -lt 25 ]; do
    set -- "$@" -H "X-Filler-$i: $i"
    i=$((i + 1))
done
req "too many headers -> 431" 431 '"code":"too_many_headers"' -H "$K" "$@" "$base/v1/models"
python3 -c "import json; print(json.dumps({'prompt': ' a' * 3000}))" >"$work/long"
req "context overflow -> 400" 400 '2048 tokens per slot.*3002 tokens.*"code":"context_length_exceeded","n_prompt_tokens":3002,"n_ctx":2048' -H "$K" -H "$J" \
    --data-binary @"$work/long" "$base/v1/completions"
req "json_schema without its schema -> 400" 400 '"param":"response_format"' -H "$K" -H "$J" \
    -d '{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema"}}' "$base/v1/chat/completions"
req "unknown field -> 400 naming it" 400 "'mirostat_foo' is not a field of /v1/completions.*\"param\":\"mirostat_foo\"" -H "$K" -H "$J" \
    -d '{"prompt": "a", "mirostat_foo": 1}' "$base/v1/completions"
req "grammar_lazy -> 400 not supported" 400 "'grammar_lazy' is not supported by /v1/chat/completions.*\"param\":\"grammar_lazy\"" -H "$K" -H "$J" \
    -d '{"messages": [{"role": "user", "content": "hi"}], "grammar_lazy": true}' "$base/v1/chat/completions"
req "bad grammar -> 400 with line:column" 400 "'grammar': the grammar does not parse: 1:10: undefined rule 'foo'.*\"param\":\"grammar\"" -H "$K" -H "$J" \
    -d '{"messages": [{"role": "user", "content": "hi"}], "grammar": "root ::= foo"}' "$base/v1/chat/completions"
req "min_keep -> 400" 400 '"param":"min_keep"' -H "$K" -H "$J" -d '{"prompt": "a", "min_keep": 2}' "$base/v1/completions"
req "mirostat range -> 400" 400 '"param":"mirostat"' -H "$K" -H "$J" -d '{"prompt": "a", "mirostat": 3}' "$base/v1/completions"
req "samplers name -> 400" 400 "'samplers.1.'.*nope.* is not a sampler name" -H "$K" -H "$J" \
    -d '{"prompt": "a", "samplers": ["top_k", "nope"]}' "$base/v1/completions"
req "dry_sequence_breakers empty -> 400" 400 '"param":"dry_sequence_breakers"' -H "$K" -H "$J" \
    -d '{"prompt": "a", "dry_sequence_breakers": []}' "$base/v1/completions"
req "tool_choice required without tools -> 400" 400 "needs a non-empty 'tools' list.*\"param\":\"tool_choice\"" -H "$K" -H "$J" \
    -d '{"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}' "$base/v1/chat/completions"
req "embeddings unknown field -> 400" 400 '"param":"pooling"' -H "$K" -H "$J" -d '{"input": "a", "pooling": "cls"}' "$base/v1/embeddings"
req "suffix -> 400" 400 'no fill-in-the-middle tokens.*"param":"suffix"' -H "$K" -H "$J" -d '{"prompt": "a", "suffix": "b"}' "$base/v1/completions"
req "embeddings" 200 '^\{"object":"list","data":\[\{"object":"embedding","index":0,"embedding":\[.*"index":1.*"model":"tiny-stories","usage":\{"prompt_tokens":[0-9]+,"total_tokens":[0-9]+\}\}$' \
    -H "$K" -H "$J" -d '{"input": ["a", "b"]}' "$base/v1/embeddings"
if [ "$(json "$work/body" "len(d['data'][1]['embedding'])")" = 64 ] &&
    [ "$(json "$work/body" "round(sum(x*x for x in d['data'][0]['embedding']), 5)")" = 1.0 ]; then
    pass "embeddings: 64 floats, L2 norm 1"
else
    fail "embeddings: 64 floats, L2 norm 1" "$(head -c 400 "$work/body")"
fi
req "embeddings token ids" 200 '"index":1' -H "$K" -H "$J" -d '{"input": [[1, 403, 407], [1, 319]]}' "$base/v1/embeddings"
req "embeddings dimensions -> 400" 400 '64 dimensions only.*"param":"dimensions"' -H "$K" -H "$J" -d '{"input": "a", "dimensions": 128}' "$base/v1/embeddings"
req "embeddings bad token -> 400" 400 '"param":"input\[1\]"' -H "$K" -H "$J" -d '{"input": [[1, 2], [1, 99999]]}' "$base/v1/embeddings"
req "embeddings no input -> 400" 400 '"param":"input"' -H "$K" -H "$J" -d '{"input": []}' "$base/v1/embeddings"
req "embeddings encoding -> 400" 400 '"param":"encoding_format"' -H "$K" -H "$J" -d '{"input": "a", "encoding_format": "hex"}' "$base/v1/embeddings"

# llama.cpp's greedy continuation, through /v1/completions
python3 -c "import json,sys; print(json.dumps({'prompt': open(sys.argv[1]).read(), 'max_tokens': 64, 'temperature': 0}))" \
    "$golden/once.prompt" >"$work/greedy"
req "completions" 200 '"object":"text_completion"' -H "$K" -H "$J" --data-binary @"$work/greedy" "$base/v1/completions"
if [ "$(json "$work/body" "d['choices'][0]['text']")" = "$(cat "$golden/once.expected")" ]; then
    pass "completions greedy = llama.cpp"
else
    fail "completions greedy = llama.cpp" "$(head -c 400 "$work/body")"
fi
python3 -c "import json,sys; print(json.dumps({'prompt': open(sys.argv[1]).read(), 'max_tokens': 64, 'temperature': 0, 'echo': True}))" \
    "$golden/once.prompt" >"$work/echo"
req "completions echo" 200 '"text":"Once upon a time, there was' -H "$K" -H "$J" --data-binary @"$work/echo" "$base/v1/completions"

# logprobs against llama.cpp's logits for the same prompt (golden/models/stories260K.once.gguf)
req "completions logprobs" 200 '"token_logprobs"' -H "$K" -H "$J" \
    -d '{"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0, "logprobs": 5}' "$base/v1/completions"
if python3 "$here/check_logprobs.py" "$golden/../models/stories260K.once.gguf" "$model" "$work/body"; then
    pass "logprobs = log_softmax of llama.cpp's logits"
else
    fail "logprobs = log_softmax of llama.cpp's logits" "$(head -c 600 "$work/body")"
fi

# chat stream: role first, content deltas, finish reason, usage, [DONE]
req "chat stream" 200 '^data: \[DONE\]' -N -H "$K" -H "$J" \
    -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "temperature": 0, "stream": true, "stream_options": {"include_usage": true}}' \
    "$base/v1/chat/completions"
if head -n 1 "$work/body" | grep -q '"delta":{"role":"assistant","content":""' &&
    grep -q '"finish_reason":"length"' "$work/body" && grep -q '"choices":\[\],"usage":{"prompt_tokens"' "$work/body" &&
    grep -qi '^content-type: text/event-stream' "$work/headers"; then
    pass "chat stream shape"
else
    fail "chat stream shape" "$(head -c 600 "$work/body")"
fi

# a model without a chat template gets ChatML: the prompt is exactly the ids of
# "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" (stories260K has no such special tokens:
# the markers are plain text). The ids are llama.cpp's (d32676d): llama-tokenize -m models/stories260K.gguf
# -p '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' --ids (-p expands the escapes; -f would
# drop the final newline). llama-server renders that text for this model (its /apply-template of
# [{"role": "user", "content": "Hi"}]) and counts 42 prompt tokens for that chat.
chatml_ids='[1, 410, 504, 506, 288, 98, 356, 295, 413, 506, 505, 425, 419, 285, 13, 440, 417, 504, 506, 288, 98, 367, 506, 505, 13, 504, 506, 288, 98, 356, 295, 413, 506, 505, 412, 419, 419, 293, 413, 303, 413, 13]'
n_chatml=$(python3 -c "import json, sys; print(len(json.loads(sys.argv[1])))" "$chatml_ids")
cli_ids=$("$bin" tokenize -m "$model" -p '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' --ids 2>/dev/null)
rc=$?
[ $rc -eq 0 ] && [ "$cli_ids" = "$chatml_ids" ] && pass "oxillama tokenize of the ChatML text = llama.cpp's ids" ||
    fail "oxillama tokenize of the ChatML text = llama.cpp's ids" "exit $rc: $cli_ids"
req "tokenize ChatML" 200 '"tokens":\[1,' -H "$K" -H "$J" \
    -d '{"content": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "add_special": true}' "$base/tokenize"
[ "$(json "$work/body" "json.dumps(d['tokens']).replace(' ', '')")" = "$(echo "$chatml_ids" | tr -d ' ')" ] &&
    pass "/tokenize of the ChatML text = llama.cpp's ids" || fail "/tokenize of the ChatML text = llama.cpp's ids" "$(cat "$work/body")"
req "chat" 200 '"object":"chat.completion"' -H "$K" -H "$J" \
    -d '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "temperature": 0}' "$base/v1/chat/completions"
n_chat=$(json "$work/body" "d['usage']['prompt_tokens']")
# the chat's slot keeps its prompt in its KV cache, and a request takes the slot with the longest
# common prefix: the ids plus one more token reuse exactly n_chatml cached tokens when the chat's
# prompt was those ids, fewer when it differs anywhere
python3 -c "import json,sys; print(json.dumps({'prompt': json.loads(sys.argv[1]) + [13], 'max_tokens': 1, 'temperature': 0}))" \
    "$chatml_ids" >"$work/ids"
req "completion of the ChatML ids" 200 '"cached_tokens"' -H "$K" -H "$J" --data-binary @"$work/ids" "$base/v1/completions"
n_cached=$(json "$work/body" "d['usage']['prompt_tokens_details']['cached_tokens']")
[ "$n_chat" = "$n_chatml" ] && [ "$n_cached" = "$n_chatml" ] && pass "chat prompt ids = llama.cpp's ChatML ids" ||
    fail "chat prompt ids = llama.cpp's ChatML ids" "$n_chat prompt tokens, $n_cached of them equal llama.cpp's $n_chatml"
# byte tokens forced by logit_bias make invalid UTF-8; every event must still be strict UTF-8 JSON
req "byte-token stream" 200 '^data: \[DONE\]' -N -H "$K" -H "$J" \
    -d '{"prompt": "Once", "max_tokens": 12, "temperature": 0, "stream": true, "logit_bias": {"198": 100, "172": 100}}' \
    "$base/v1/completions"
if python3 -c "
import json, sys
raw = open(sys.argv[1], 'rb').read()
raw.decode('utf-8')
events = [json.loads(l[6:]) for l in raw.split(b'\n') if l.startswith(b'data: {')]
assert len(events) >= 2 and events[-1]['choices'][0]['finish_reason'] == 'length'
" "$work/body"; then pass "stream is valid UTF-8"; else fail "stream is valid UTF-8" "$(head -c 300 "$work/body")"; fi
# presence/frequency penalties: llama-server's replies for the same settings (golden/server/)
python3 "$here/check_penalties.py" "$base" sk-test-1 "$golden/../server/penalties.json" || status=1
# the further samplers, seeded (3 seeds each), logit_bias forms, ignore_eos: llama-server's replies
python3 "$here/check_penalties.py" "$base" sk-test-1 "$golden/../server/samplers.json" || status=1
# logit_bias: token 261 is " a" (see the tokenize check below); +100 makes greedy pick it every time
req "logit_bias" 200 '"text":" a a a a a"' -H "$K" -H "$J" \
    -d '{"prompt": "Once", "max_tokens": 5, "temperature": 0, "logit_bias": {"261": 100}}' "$base/v1/completions"
# a seed makes sampling at temperature 1 repeatable
seeded='{"prompt": "Once", "max_tokens": 24, "temperature": 1, "top_k": 0, "top_p": 1, "min_p": 0, "seed": 42}'
req "seed, first" 200 '"text"' -H "$K" -H "$J" -d "$seeded" "$base/v1/completions"
first=$(json "$work/body" "d['choices'][0]['text']")
req "seed, second" 200 '"text"' -H "$K" -H "$J" -d "$seeded" "$base/v1/completions"
[ "$(json "$work/body" "d['choices'][0]['text']")" = "$first" ] && pass "same seed, same text" ||
    fail "same seed, same text" "$first / $(json "$work/body" "d['choices'][0]['text']")"
cli=$("$bin" run -p Once -n 24 --temp 1 --top-k 0 --top-p 1 --min-p 0 --seed 42 -t 1 2>/dev/null)
[ "Once$first" = "$cli" ] && pass "seeded text = oxillama run" || fail "seeded text = oxillama run" "$first / $cli"
req "tokenize a" 200 '"tokens":\[261\]' -H "$K" -H "$J" -d '{"content": "a"}' "$base/tokenize"
req "tokenize" 200 '"tokens":\[[0-9]' -H "$K" -H "$J" -d '{"content": "Once upon a time"}' "$base/tokenize"
toks=$(json "$work/body" "json.dumps(d['tokens'])")
req "detokenize" 200 '"content":" ?Once upon a time"' -H "$K" -H "$J" -d "{\"tokens\": $toks}" "$base/detokenize"
req "detokenize bad id -> 400" 400 '"param":"tokens"' -H "$K" -H "$J" -d '{"tokens": [1, 99999]}' "$base/detokenize"
req "slots without key -> 401" 401 'invalid_api_key' "$base/slots"
req "slots" 200 '"id":15' -H "$K" "$base/slots"
req "metrics without key -> 401" 401 'invalid_api_key' "$base/metrics"
req "metrics" 200 '^oxillama_generated_tokens_total [1-9]' -H "$K" "$base/metrics"
req "CORS off: no preflight" 405 'method_not_allowed' -X OPTIONS -H "Origin: http://example.test" "$base/v1/models"

# cancellation: a client that leaves mid-stream (after 3 events of 16 choices without end of
# generation) is counted and frees its slots; wait for the count, then for idle slots
python3 -c "
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=60)
body = b'{\"prompt\": \"Once\", \"max_tokens\": 2000, \"n\": 16, \"logit_bias\": {\"2\": -100}, \"stream\": true}'
s.sendall(b'POST /v1/completions HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer sk-test-1\\r\\n'
          b'Content-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n' % len(body) + body)
f = s.makefile('rb')
seen = 0
while seen < 3:
    line = f.readline()
    assert line, 'the stream ended after %d events' % seen
    seen += line.startswith(b'data: ')
s.close()
" "$port" || fail "cancellation: 3 events before leaving" "stream ended early"
i=0
while [ $i -lt 600 ]; do
    curl -s -H "$K" "$base/metrics" >"$work/metrics"
    if grep -q '^oxillama_requests_cancelled_total [1-9]' "$work/metrics" &&
        ! curl -s -H "$K" "$base/slots" | grep -q '"is_processing":true'; then
        break
    fi
    sleep 0.1
    i=$((i + 1))
done
if [ $i -lt 600 ]; then
    pass "cancellation frees the slot"
else
    fail "cancellation frees the slot" "$(grep cancelled "$work/metrics")"
fi

# the OpenAI Node client; its last step sends SIGTERM during 4 streams
if [ -d "$here/node_modules/openai" ]; then
    node "$here/client.mjs" "$base" sk-test-1 tiny-stories "$golden" "$pid" || status=1
    i=0
    while [ $i -lt 300 ] && kill -0 "$pid" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        # the client stopped before its SIGTERM step, or the server ignored it
        fail "server stopped by the client's SIGTERM" "still running 30 s after the client ended"
        kill -KILL "$pid"
    fi
    wait "$pid"
    rc=$?
    pid=
    [ $rc -eq 0 ] && pass "exit 0 after SIGTERM during streams" || fail "exit 0 after SIGTERM during streams" "exit status $rc"
    grep -q "SIGTERM: no new connections" "$work/one.log" || fail "SIGTERM log" "$(tail -3 "$work/one.log")"
else
    stop_server TERM "exit 0 after SIGTERM"
fi

# --- server 2: precedence (flags > environment > config file), rate limit, queue, CORS ------------
cat >"$work/config.json" <<JSON
{"model": "$model", "alias": "from-config", "parallel": 1, "queue_size": 1, "threads": 1, "port": 1, "ctx_size": 32768,
 "api_key": ["k1", "k2", "k3", "k4"], "api_key_file": "$work/keys", "rate_limit": 2, "rate_burst": 2,
 "cors_origin": "http://example.test", "idle_timeout": 2}
JSON
printf '# one key per line\nk5\n' >"$work/keys"
OXILLAMA_ALIAS=from-env start_server two --config "$work/config.json"
req "env overrides config" 200 '"id":"from-env"' -H "Authorization: Bearer k2" "$base/v1/models"
req "config overrides defaults" 200 '"n_slots":1,' -H "Authorization: Bearer k3" "$base/v1/models"
[ "$port" != 1 ] && pass "flag overrides config" || fail "flag overrides config" "port $port"
req "rate limit: first request" 200 '"object":"list"' -H "Authorization: Bearer k1" "$base/v1/models"
req "rate limit: second request in burst" 200 '"object":"list"' -H "Authorization: Bearer k1" "$base/v1/models"
req "rate limit -> 429" 429 '"code":"rate_limit_exceeded"' -H "Authorization: Bearer k1" "$base/v1/models"
grep -qi '^retry-after: [1-9]' "$work/headers" && pass "429 has Retry-After" || fail "429 has Retry-After" "$(cat "$work/headers")"
req "other key has its own bucket" 200 '"object":"list"' -H "Authorization: Bearer k4" "$base/v1/models"
req "key from --api-key-file" 200 '"object":"list"' -H "Authorization: Bearer k5" "$base/v1/models"
# (the client sends nothing and waits, at most 60 s, for the server to close the connection)
if python3 -c "
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=60)
assert s.recv(1) == b''
" "$port"; then pass "idle connection closed (--idle-timeout)"; else fail "idle connection closed (--idle-timeout)" "still open"; fi

# queue: one slot busy, one request queued, the next one is shed with 503. The busy slot's request
# has no end of generation and a 32768-token slot to fill: it runs until its client leaves (the
# waits are bounded; the check does not depend on how fast the machine generates)
long='{"prompt": "Once", "max_tokens": 1000, "temperature": 0}'
endless='{"prompt": "Once", "max_tokens": 32000, "temperature": 0, "logit_bias": {"2": -100}}'
curl -s -o /dev/null --max-time 300 -H "Authorization: Bearer k2" -H "$J" -d "$endless" "$base/v1/completions" &
c1=$!
i=0
while [ $i -lt 600 ] && ! curl -s -H "Authorization: Bearer k1" "$base/slots" | grep -q '"is_processing":true'; do
    sleep 0.05
    i=$((i + 1))
done
[ $i -lt 600 ] || fail "queue setup: the first request occupies the slot" \
    "no slot with \"is_processing\":true after 600 polls: $(curl -s -H "Authorization: Bearer k1" "$base/slots" | head -c 300)"
curl -s -o /dev/null --max-time 60 -H "Authorization: Bearer k3" -H "$J" -d "$long" "$base/v1/completions" &
c2=$!
i=0
while [ $i -lt 600 ] && ! curl -s -H "Authorization: Bearer k1" "$base/metrics" | grep -q '^oxillama_queue_depth 1'; do
    sleep 0.05
    i=$((i + 1))
done
[ $i -lt 600 ] || fail "queue setup: the second request waits in the queue" \
    "no 'oxillama_queue_depth 1' after 600 polls: $(curl -s -H "Authorization: Bearer k1" "$base/metrics" | grep '^oxillama_queue_depth')"
req "full queue -> 503" 503 '"code":"server_overloaded"' -H "Authorization: Bearer k4" -H "$J" -d "$long" "$base/v1/completions"
grep -qi '^retry-after: 1' "$work/headers" && pass "503 has Retry-After" || fail "503 has Retry-After" "$(cat "$work/headers")"
kill $c1 2>/dev/null
wait $c1 2>/dev/null
wait $c2

req "CORS preflight" 204 '' -X OPTIONS -H "Origin: http://example.test" "$base/v1/chat/completions"
grep -qi '^access-control-allow-origin: http://example.test' "$work/headers" && pass "CORS allow origin" ||
    fail "CORS allow origin" "$(cat "$work/headers")"
req "CORS other origin" 200 '' -H "Origin: http://evil.test" "$base/health"
grep -qi '^access-control-allow-origin' "$work/headers" && fail "CORS other origin refused" "$(cat "$work/headers")" ||
    pass "CORS other origin refused"
stop_server INT "exit 0 after SIGINT"

# --- server 3: tool calls, on a bigram model that answers every prompt with one call -------------
python3 "$here/make_toolcall_model.py" "$work/toolcall.gguf" || fail "make_toolcall_model.py" "exit $?"
start_server three -m "$work/toolcall.gguf" -np 2 -t 1 --alias toolcall
python3 "$here/check_toolcalls.py" "$base" || status=1
if [ -d "$here/node_modules/openai" ]; then
    node "$here/toolcalls.mjs" "$base" toolcall || status=1
fi
stop_server TERM "tool-call server: exit 0 after SIGTERM"

# --- assistant tool calls with JSON-text arguments: objects for a template that takes them
# (Hermes 3's), the text for one that appends them to a string (Functionary v3.2's)
for t in "NousResearch-Hermes-3-Llama-3.1-8B-tool_use objects" "meetkai-functionary-medium-v3.2 text"; do
    set -- $t
    start_server args -m "$work/toolcall.gguf" -np 1 -c 4096 -t 1 \
        --chat-template-file "$here/../../golden/chat-templates/$1/template.jinja"
    python3 "$here/check_tool_args.py" "$base" "$2" || status=1
    stop_server TERM "tool-args server ($2): exit 0 after SIGTERM"
done

# --- server 4: the same model under a template whose prompt opens <think> (Qwen QwQ's as Qwen
# publishes it: golden/chat-templates' copy less llama.cpp's enable_thinking switch): the text
# before the call is reasoning_content (llama-server's default reasoning format, deepseek); the
# rendered tools need a longer context than the default
if [ -d "$here/node_modules/openai" ]; then
    sed '/enable_thinking/d' "$here/../../golden/chat-templates/Qwen-QwQ-32B/template.jinja" >"$work/qwq.jinja"
    start_server four -m "$work/toolcall.gguf" -np 2 -c 4096 -t 1 --alias toolcall --chat-template-file "$work/qwq.jinja"
    node "$here/toolcalls.mjs" "$base" toolcall think || status=1
    stop_server TERM "think-template server: exit 0 after SIGTERM"
fi

exit $status
