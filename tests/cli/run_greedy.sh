#!/bin/sh
# `oxillama run --temp 0` must print exactly the prompt followed by llama.cpp's greedy continuation,
# and exit 0.
# usage: run_greedy.sh OXILLAMA_BINARY DIR   (DIR holds <name>.prompt and <name>.expected, 64 tokens)
set -eu
bin=$1
dir=$2
status=0
for prompt_file in "$dir"/*.prompt; do
    name=${prompt_file%.prompt}
    want=$(cat "$prompt_file" "$name.expected"; printf x)
    got=$(set +e; "$bin" run -p "$(cat "$prompt_file")" -n 64 --temp 0 -t 2 2>/dev/null; echo "x$?")
    rc=${got##*x}
    got=${got%x*}x
    if [ "$rc" -ne 0 ]; then
        echo "FAIL  run $(basename "$name"): exit status $rc"
        status=1
    elif [ "$got" = "$want" ]; then
        echo "PASS  run $(basename "$name")"
    else
        echo "FAIL  run $(basename "$name")"
        echo "  want: $want"
        echo "  got:  $got"
        status=1
    fi
done
exit $status
