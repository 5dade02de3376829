#!/bin/sh
# oxillama serve on an embedding model (golden/arch/bert.gguf, no output head): the generation
# routes refuse it with a 400 naming the model (code model_not_supported) and /v1/embeddings
# answers. Then check_embeddings.py compares /v1/embeddings' values (three token-list inputs in one
# request) with llama.cpp's pooled embeddings: bert (cls pooling), bert with its pooling_type cleared
# (the server's mean fallback) and nomic-bert (mean pooling), found beside bert.gguf.
# usage: encoder.sh OXILLAMA_BINARY BERT_GGUF
set -u
bin=$1 model=$2
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
"$bin" serve --port 0 -m "$model" 2>"$work/log" &
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
passed=0 failed=0
check() { # name, expected status, body regex, curl args...
    name=$1 want=$2 rx=$3
    shift 3
    status=$(curl -s -o "$work/body" -w '%{http_code}' "$@")
    if [ "$status" = "$want" ] && grep -Eq "$rx" "$work/body"; then
        echo "PASS  $name"
        passed=$((passed + 1))
    else
        echo "FAIL  $name: status $status, body $(head -c 300 "$work/body")"
        failed=$((failed + 1))
    fi
}
for route in chat/completions completions responses; do
    case $route in
    chat/completions) body='{"messages": [{"role": "user", "content": "hi"}]}' ;;
    completions) body='{"prompt": "hi"}' ;;
    responses) body='{"input": "hi"}' ;;
    esac
    check "/v1/$route refused" 400 '"code":"model_not_supported".*|embedding model' \
        -H 'Content-Type: application/json' -d "$body" "$base/v1/$route"
done
check "/v1/embeddings answers" 200 '"object":"embedding"' -H 'Content-Type: application/json' \
    -d '{"input": "hello world"}' "$base/v1/embeddings"
here=$(dirname "$0")
arch=$(dirname "$model")
for args in "$model ${model%.gguf}.logits.gguf" "$model ${model%.gguf}.logits.gguf fallback" \
    "$arch/nomic-bert.gguf $arch/nomic-bert.logits.gguf"; do
    # shellcheck disable=SC2086 # the paths have no blanks (ctest's golden/arch)
    if python3 "$here/check_embeddings.py" "$bin" $args; then
        passed=$((passed + 1))
    else
        echo "FAIL  check_embeddings.py $args"
        failed=$((failed + 1))
    fi
done
echo "encoder server: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
