#!/bin/sh
# `oxillama run -m MODEL ADAPTER-OPTIONS... -p PROMPT -n 64 --temp 0` prints PROMPT followed by
# llama.cpp's greedy text with the same adapters (a golden/lora/*.expected file) and exits 0.
# usage: check_lora_run.sh OXILLAMA MODEL PROMPT_FILE EXPECTED_FILE ADAPTER-OPTIONS...
set -u
bin=$1 model=$2 prompt=$(cat "$3") expected=$4
shift 4
got=$("$bin" run -m "$model" "$@" -p "$prompt" -n 64 --temp 0 -t 2 2>/dev/null </dev/null; echo "x$?")
rc=${got##*x}
got=${got%x*}
want=$(printf '%s' "$prompt"; cat "$expected")
if [ "$rc" -ne 0 ]; then
    echo "FAIL  oxillama run exited $rc"
    exit 1
fi
if [ "$got" != "$want" ]; then
    echo "FAIL  text differs from llama.cpp's"
    echo "  want: $want"
    echo "  got:  $got"
    exit 1
fi
echo "PASS  llama.cpp's greedy text with $* ($(wc -c <"$expected") bytes after the prompt)"
