#!/bin/sh
# Seeded sampling against llama.cpp: for every case of DIR/cases.tsv, `oxillama run` with that model,
# seed, temperature, top-k, top-p, min-p and token count (one thread) must exit 0 and print exactly the
# prompt followed by llama-completion's continuation for the same settings (DIR/<case>.expected;
# golden/sampling/README.md).
# usage: check_sampling.sh OXILLAMA_BINARY MODELS_DIR DIR [MODEL_FILE]   (MODEL_FILE: only its cases)
set -u
bin=$1
models=$2
dir=$3
only=${4:-}
tab=$(printf '\t')
passed=0 failed=0
while IFS="$tab" read -r name model seed temp top_k top_p min_p n prompt; do
    case $name in '' | '#'*) continue ;; esac
    [ -z "$only" ] || [ "$model" = "$only" ] || continue
    want="$prompt$(cat "$dir/$name.expected"; printf x)"
    want=${want%x}
    # the exit status rides after the last 'x', so trailing newlines of the text survive
    got=$("$bin" run -m "$models/$model" -p "$prompt" -n "$n" --seed "$seed" --temp "$temp" --top-k "$top_k" \
        --top-p "$top_p" --min-p "$min_p" -t 1 2>/dev/null </dev/null; printf 'x%d' $?)
    rc=${got##*x}
    got=${got%x*}
    if [ "$rc" -eq 0 ] && [ "$got" != "$prompt" ] && [ "$got" = "$want" ]; then
        echo "PASS  $name"
        passed=$((passed + 1))
    else
        echo "FAIL  $name (exit status $rc; $model seed $seed temp $temp top-k $top_k top-p $top_p min-p $min_p)"
        echo "  want: $want"
        echo "  got:  $got"
        failed=$((failed + 1))
    fi
done <"$dir/cases.tsv"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
