#!/bin/sh
# Seeded sampling chains against llama.cpp: for every case of DIR/chains.tsv, `oxillama run` with that
# model, seed, temperature, token count and sampler flags (penalties, DRY, typical, top-n-sigma, XTC,
# dynamic temperature, mirostat, --samplers / --sampling-seq; one thread) must exit 0 and print
# exactly the prompt followed by llama-completion's continuation for the same command
# (DIR/chains/<case>.expected; golden/sampling/README.md).
# usage: check_sampling_chains.sh OXILLAMA_BINARY MODELS_DIR DIR
set -u
bin=$1
models=$2
dir=$3
tab=$(printf '\t')
passed=0 failed=0
set -f # the flags are split into words, never globbed
while IFS="$tab" read -r name model seed temp n flags prompt; do
    case $name in '' | '#'*) continue ;; esac
    want="$prompt$(cat "$dir/chains/$name.expected"; printf x)"
    want=${want%x}
    # the exit status rides after the last 'x', so trailing newlines of the text survive
    # shellcheck disable=SC2086
    got=$("$bin" run -m "$models/$model" -p "$prompt" -n "$n" --seed "$seed" --temp "$temp" $flags -t 1 \
        2>/dev/null </dev/null; printf 'x%d' $?)
    rc=${got##*x}
    got=${got%x*}
    if [ "$rc" -eq 0 ] && [ "$got" != "$prompt" ] && [ "$got" = "$want" ]; then
        echo "PASS  $name"
        passed=$((passed + 1))
    else
        echo "FAIL  $name (exit status $rc; $model seed $seed temp $temp $flags)"
        echo "  want: $want"
        echo "  got:  $got"
        failed=$((failed + 1))
    fi
done <"$dir/chains.tsv"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
