#!/bin/sh
# POST /slots/{id}?action=save|restore|erase (--slot-save-path), as llama-server's: a slot saved after
# a chat, erased and restored continues the conversation with the same greedy text as a slot without
# cache, reusing the restored tokens (cached_tokens); file names that would leave the folder are 400;
# without --slot-save-path the route is 501. Exits 0 only when every check passed.
# usage: slot_state.sh OXILLAMA_BINARY MODEL
set -u
bin=$1
model=$2
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

start_server() {
    log=$work/$1.log
    shift
    : >"$log"
    "$bin" serve --port 0 -t 2 "$@" 2>"$log" &
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
stop_server() {
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    pid=
    [ $rc -eq 0 ] && pass "$1: exit status 0" || fail "$1" "exit status $rc"
}

# req NAME STATUS BODY_REGEX CURL_ARGS...: one request; its body stays in $work/body (sets name, want,
# re and got)
req() {
    name=$1 want=$2 re=$3
    shift 3
    got=$(curl -s -o "$work/body" -w '%{http_code}' --max-time 60 "$@")
    if [ "$got" = "$want" ] && { [ -z "$re" ] || grep -Eq -- "$re" "$work/body"; }; then
        pass "$name"
    else
        fail "$name" "status $got (want $want), body $(head -c 400 "$work/body")"
    fi
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2, end='')" "$1"; }
J="Content-Type: application/json"

# without --slot-save-path: 501, llama-server's message
start_server off -m "$model" -np 1
req "no --slot-save-path -> 501" 501 'Start it with `--slot-save-path`' -H "$J" -d '{"filename": "a.bin"}' \
    "$base/slots/0?action=save"
stop_server off

dir=$work/slots
mkdir -p "$dir"
start_server on -m "$model" -np 1 -c 512 --slot-save-path "$dir"
turn1='{"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 12, "temperature": 0}'
req "chat turn 1" 200 '"content"' -H "$J" -d "$turn1" "$base/v1/chat/completions"
answer=$(json "$work/body" "d['choices'][0]['message']['content']")
turn2=$(python3 -c "import json,sys; print(json.dumps({'messages': [{'role': 'user', 'content': 'Tell me a story.'}, {'role': 'assistant', 'content': sys.argv[1]}, {'role': 'user', 'content': 'And then?'}], 'max_tokens': 12, 'temperature': 0}))" "$answer")
# the reference: turn 2 on the slot that turn 1 left, never saved
req "chat turn 2 (reference)" 200 '"content"' -H "$J" -d "$turn2" "$base/v1/chat/completions"
ref_text=$(json "$work/body" "d['choices'][0]['message']['content']")
want_cached=$(json "$work/body" "d['usage']['prompt_tokens_details']['cached_tokens']")
[ "$want_cached" -gt 0 ] || fail "reference cached_tokens" "$want_cached"

# again from an empty slot: turn 1, save, erase, restore, turn 2
req "erase" 200 '"n_erased":[1-9]' -H "$J" -d '{}' "$base/slots/0?action=erase"
req "GET /slots after erase" 200 '"n_past":0' "$base/slots"
req "chat turn 1 again" 200 '"content"' -H "$J" -d "$turn1" "$base/v1/chat/completions"
[ "$(json "$work/body" "d['choices'][0]['message']['content']")" = "$answer" ] || fail "turn 1 again" "another answer"
req "GET /slots after turn 1" 200 '"n_past"' "$base/slots"
n_past=$(json "$work/body" "d[0]['n_past']")
[ "$n_past" -gt 0 ] || fail "slot 0 n_past" "$n_past"

req "save" 200 '"n_saved"' -H "$J" -d '{"filename": "chat.bin"}' "$base/slots/0?action=save"
saved=$(json "$work/body" "d['n_saved']")
written=$(json "$work/body" "d['n_written']")
[ "$saved" = "$n_past" ] && pass "n_saved = n_past ($saved)" || fail "n_saved" "$saved, n_past $n_past"
[ "$(json "$work/body" "d['filename']")" = chat.bin ] && [ "$(json "$work/body" "d['id_slot']")" = 0 ] &&
    json "$work/body" "d['timings']['save_ms']" >/dev/null && pass "save reply fields" || fail "save reply" "$(cat "$work/body")"
size=$(wc -c <"$dir/chat.bin")
[ "$size" = "$written" ] && pass "n_written = file size ($size)" || fail "n_written" "$written, file $size bytes"
[ "$(head -c 8 "$dir/chat.bin")" = OXLSTATE ] && pass "state file magic" || fail "state file" "no OXLSTATE magic"

req "erase after save" 200 "\"n_erased\":$saved" -H "$J" -d '{}' "$base/slots/0?action=erase"
req "GET /slots after the second erase" 200 '"n_past":0' "$base/slots"
req "restore" 200 "\"n_restored\":$saved" -H "$J" -d '{"filename": "chat.bin"}' "$base/slots/0?action=restore"
[ "$(json "$work/body" "d['n_read']")" = "$size" ] && pass "n_read = file size" || fail "n_read" "$(cat "$work/body")"
req "GET /slots after restore" 200 "\"n_past\":$saved" "$base/slots"
req "chat turn 2 after restore" 200 '"content"' -H "$J" -d "$turn2" "$base/v1/chat/completions"
new_text=$(json "$work/body" "d['choices'][0]['message']['content']")
cached=$(json "$work/body" "d['usage']['prompt_tokens_details']['cached_tokens']")
[ "$new_text" = "$ref_text" ] && pass "same greedy text after restore ('$new_text')" ||
    fail "text after restore" "'$new_text', want '$ref_text'"
[ "$cached" = "$want_cached" ] && pass "restored tokens reused (cached_tokens $cached)" ||
    fail "cached_tokens" "$cached, want $want_cached"

# names that would leave the folder, and other bad requests
for fn in '../x.bin' '/tmp/x.bin' 'a/b.bin' '..' '.' 'a\\b' 'x\u0000y' '' ' a' 'a.' 'c:d' 'a\u2215b'; do
    req "save filename '$fn' -> 400" 400 'Invalid filename' -H "$J" -d "{\"filename\": \"$fn\"}" "$base/slots/0?action=save"
    req "restore filename '$fn' -> 400" 400 'Invalid filename' -H "$J" -d "{\"filename\": \"$fn\"}" \
        "$base/slots/0?action=restore"
done
[ ! -e "$work/x.bin" ] && [ ! -e /tmp/x.bin.tmp ] && [ "$(ls "$dir")" = chat.bin ] &&
    pass "nothing written outside" || fail "files" "$(ls "$work" "$dir")"
req "filename not a string -> 400" 400 '"param":"filename"' -H "$J" -d '{"filename": 3}' "$base/slots/0?action=save"
req "unknown action -> 400" 400 'Invalid action' -H "$J" -d '{"filename": "a"}' "$base/slots/0?action=load"
req "no action -> 400" 400 'Invalid action' -H "$J" -d '{"filename": "a"}' "$base/slots/0"
req "slot 7 of 1 -> 400" 400 'Invalid slot ID' -H "$J" -d '{"filename": "a"}' "$base/slots/7?action=save"
req "slot id not a number -> 400" 400 'Invalid slot ID' -H "$J" -d '{"filename": "a"}' "$base/slots/x?action=save"
req "restore a missing file -> 400" 400 'Unable to restore slot: .*cannot open' -H "$J" -d '{"filename": "none.bin"}' \
    "$base/slots/0?action=restore"
head -c 300 "$dir/chat.bin" >"$dir/cut.bin"
req "restore a truncated file -> 400" 400 'Unable to restore slot: .*truncated: 172 payload bytes' -H "$J" \
    -d '{"filename": "cut.bin"}' "$base/slots/0?action=restore"
req "slot unchanged after a refused restore" 200 '"n_past":[1-9]' "$base/slots"
stop_server on
exit $status
