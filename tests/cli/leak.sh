#!/bin/sh
# Leak check: `oxillama run`, `oxillama quantize` and a short `oxillama serve` session under valgrind
# (--leak-check=full; definite and indirect leaks and memory errors fail). Every step is bounded.
# usage: leak.sh run|quantize|server OXILLAMA_BINARY SOURCE_DIR
# The server session: greedy completion (compared with golden/run/once.expected), a chat stream,
# /tokenize, a rejected request, Anthropic's Messages API (a stream, a tool round trip, count_tokens,
# a rejected block), a client that leaves mid-stream, then SIGTERM; the server must exit 0.
set -u
what=$1
bin=$2
src=$3
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
vg="valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --error-exitcode=1"
model=$src/models/stories260K.gguf

case $what in
run)
    got=$($vg "$bin" run -m "$model" -p "$(cat "$src/golden/run/once.prompt")" -n 64 --temp 0 -t 2 2>"$work/vg")
    rc=$?
    cat "$work/vg"
    want=$(cat "$src/golden/run/once.prompt" "$src/golden/run/once.expected")
    [ "$got" = "$want" ] || { echo "FAIL  run output differs: $got"; exit 1; }
    [ $rc -eq 0 ] && echo "PASS  run: no leak" || echo "FAIL  run: valgrind status $rc"
    exit $rc
    ;;
quantize)
    $vg "$bin" quantize --imatrix "$src/golden/quantize/synth-small.imatrix.dat" "$src/golden/quantize/synth-small-f32.gguf" \
        "$work/q.gguf" Q4_K_M 2 >/dev/null
    rc=$?
    [ $rc -eq 0 ] && echo "PASS  quantize: no leak" || echo "FAIL  quantize: valgrind status $rc"
    exit $rc
    ;;
server) ;;
*)
    echo "usage: leak.sh run|quantize|server OXILLAMA_BINARY SOURCE_DIR" >&2
    exit 2
    ;;
esac

$vg "$bin" serve --port 0 -m "$model" -np 2 -t 1 --idle-timeout 5 --shutdown-timeout 5 2>"$work/log" &
pid=$!
i=0
port=
while [ $i -lt 600 ] && kill -0 "$pid" 2>/dev/null; do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/log")
    [ -n "$port" ] && grep -q "loaded in" "$work/log" && break
    sleep 0.1
    i=$((i + 1))
done
grep -q "loaded in" "$work/log" || { echo "FAIL  server start"; cat "$work/log"; exit 1; }
base=http://127.0.0.1:$port
J="Content-Type: application/json"
status=0
python3 -c "import json,sys; print(json.dumps({'prompt': open(sys.argv[1]).read(), 'max_tokens': 64, 'temperature': 0}))" \
    "$src/golden/run/once.prompt" >"$work/greedy"
curl -s --max-time 120 -H "$J" --data-binary @"$work/greedy" "$base/v1/completions" >"$work/body"
text=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['choices'][0]['text'], end='')" "$work/body" 2>/dev/null)
[ "$text" = "$(cat "$src/golden/run/once.expected")" ] || { echo "FAIL  greedy completion: $(head -c 300 "$work/body")"; status=1; }
curl -s -N --max-time 120 -H "$J" -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": true}' \
    "$base/v1/chat/completions" | grep -q '^data: \[DONE\]' || { echo "FAIL  chat stream"; status=1; }
curl -s --max-time 60 -H "$J" -d '{"content": "Once upon a time", "with_pieces": true}' "$base/tokenize" | grep -q '"tokens"' ||
    { echo "FAIL  tokenize"; status=1; }
curl -s --max-time 60 -H "$J" -d '{"messages": "x"}' "$base/v1/chat/completions" | grep -q '"param":"messages"' ||
    { echo "FAIL  rejected request"; status=1; }
# Anthropic's Messages API: a stream, a tool round trip, count_tokens, a rejected block
curl -s -N --max-time 120 -H "$J" -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": true}' \
    "$base/v1/messages" | grep -q '^event: message_stop' || { echo "FAIL  messages stream"; status=1; }
tools='"tools": [{"name": "w", "input_schema": {"type": "object"}}], "system": [{"type": "text", "text": "Be brief."}]'
turn='[{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "ok"},
 {"type": "tool_use", "id": "t1", "name": "w", "input": {"a": 1}}]}, {"role": "user", "content": [{"type": "tool_result",
 "tool_use_id": "t1", "content": [{"type": "text", "text": "done"}]}]}]'
curl -s --max-time 120 -H "$J" -d "{\"messages\": $turn, $tools, \"max_tokens\": 4}" "$base/v1/messages" |
    grep -q '"type":"message"' || { echo "FAIL  messages tool round trip"; status=1; }
curl -s --max-time 60 -H "$J" -d "{\"messages\": $turn, $tools}" "$base/v1/messages/count_tokens" |
    grep -q '"input_tokens"' || { echo "FAIL  count_tokens"; status=1; }
curl -s --max-time 60 -H "$J" -d '{"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}], "max_tokens": 4}' \
    "$base/v1/messages" | grep -q '"type":"invalid_request_error"' || { echo "FAIL  messages rejected block"; status=1; }
curl -s -N --max-time 3 -H "$J" -d '{"prompt": "Once", "max_tokens": 2000, "logit_bias": {"2": -100}, "stream": true}' \
    "$base/v1/completions" >/dev/null 2>&1
kill -TERM "$pid"
i=0
while [ $i -lt 600 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
wait "$pid"
rc=$?
pid=
cat "$work/log" | grep -v "^oxillama serve:"
[ $rc -eq 0 ] && echo "PASS  server: no leak, exit 0" || { echo "FAIL  server: valgrind/exit status $rc"; status=1; }
exit $status
