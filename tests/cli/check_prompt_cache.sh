#!/bin/sh
# oxillama run --prompt-cache (llama-cli's session file): the first run creates the state file, the
# second prints the same text while evaluating only the last prompt token again, a longer prompt
# reuses the cached prefix (with --prompt-cache-ro the file stays as it was), a recurrent model reuses
# a cached prefix of its prompt, and a damaged or foreign file is a named error. The reused counts are
# the prompt's token counts from `oxillama tokenize`; each text is compared with a run without cache.
# usage: check_prompt_cache.sh OXILLAMA STORIES_MODEL MAMBA_MODEL
set -u
bin=$1 stories=$2 mamba=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "check_prompt_cache: FAILED: $*"; exit 1; }

# run NAME ARGS...: stdout to $dir/NAME.out, stderr to $dir/NAME.err; the exit status must be 0
run() {
    name=$1; shift
    "$bin" run -t 2 --temp 0 -n 16 "$@" > "$dir/$name.out" 2> "$dir/$name.err"
    rc=$?
    [ $rc -eq 0 ] || { cat "$dir/$name.err"; fail "$name: exit status $rc"; }
}
ntok() { "$bin" tokenize --ids -m "$1" -p "$2" | tr -cd ',' | wc -c | awk '{print $1 + 1}'; }
same() { cmp -s "$dir/$1.out" "$dir/$2.out" || fail "$1 printed '$(cat "$dir/$1.out")', $2 '$(cat "$dir/$2.out")'"; }
has() { grep -qF "$2" "$dir/$1.err" || { cat "$dir/$1.err"; fail "$1: no line '$2' on stderr"; }; }

p1="Once upon a time"
p2="Once upon a time there was a dog"
n1=$(ntok "$stories" "$p1")
n2=$(ntok "$stories" "$p2")
[ "$n1" -ge 3 ] && [ "$n2" -gt "$n1" ] || fail "token counts $n1 / $n2"
pc="$dir/p.state"

run ref1 -m "$stories" -p "$p1"
run ref2 -m "$stories" -p "$p2"
run first -m "$stories" -p "$p1" --prompt-cache "$pc"
same first ref1
has first "prompt cache $pc does not exist; it will be created"
has first "prompt $n1 tokens in"
[ -s "$pc" ] || fail "no state file written"
run second -m "$stories" -p "$p1" --prompt-cache "$pc"
same second ref1
has second "reused $((n1 - 1)) of $n1 prompt tokens (the file held $n1)"
has second "prompt 1 tokens in"
cp "$pc" "$dir/before"
run longer -m "$stories" -p "$p2" --prompt-cache "$pc" --prompt-cache-ro
same longer ref2
has longer "reused $n1 of $n2 prompt tokens (the file held $n1)"
has longer "prompt $((n2 - n1)) tokens in"
cmp -s "$pc" "$dir/before" || fail "--prompt-cache-ro changed the file"

# a recurrent model: a cached prefix of the prompt is reused; the same prompt again cannot step back
# one token, so it is evaluated whole
pm="$dir/m.state"
run mref1 -m "$mamba" -p "$p1"
run mref2 -m "$mamba" -p "$p2"
run mfirst -m "$mamba" -p "$p1" --prompt-cache "$pm"
same mfirst mref1
m1=$(ntok "$mamba" "$p1")
m2=$(ntok "$mamba" "$p2")
run mlonger -m "$mamba" -p "$p2" --prompt-cache "$pm" --prompt-cache-ro
same mlonger mref2
has mlonger "reused $m1 of $m2 prompt tokens (the file held $m1)"
run msame -m "$mamba" -p "$p1" --prompt-cache "$pm"
same msame mref1
has msame "reused 0 of $m1 prompt tokens"

# a state of another model, and a truncated one: named errors, exit status 1
"$bin" run -t 2 -m "$mamba" -p "$p1" -n 4 --prompt-cache "$pc" > /dev/null 2> "$dir/foreign.err"
rc=$?
[ $rc -eq 1 ] || fail "foreign state: exit status $rc"
has foreign "architecture \"llama\"; the context's model is \"mamba\""
head -c 200 "$dir/before" > "$pc"
"$bin" run -t 2 -m "$stories" -p "$p1" -n 4 --prompt-cache "$pc" > /dev/null 2> "$dir/cut.err"
rc=$?
[ $rc -eq 1 ] || fail "truncated state: exit status $rc"
has cut "truncated: 72 payload bytes of"
echo "check_prompt_cache: OK (stories $n1/$n2 tokens, mamba $m1/$m2)"
