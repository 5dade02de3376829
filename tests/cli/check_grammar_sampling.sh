#!/bin/sh
# Grammar-constrained sampling against llama.cpp: for every case of DIR/grammar.tsv, `oxillama run`
# with that model, seed, temperature, token count, sampler flags and --grammar-file GRAMMARS/<file>
# (one thread) must exit 0 and print exactly the prompt followed by llama-completion's continuation
# for the same command (DIR/grammar/<case>.expected; golden/sampling/README.md, "Grammars").
# usage: check_grammar_sampling.sh OXILLAMA_BINARY MODELS_DIR GRAMMARS_DIR DIR [TSV, default grammar.tsv] [OPTION, default --grammar-file; -jf for JSON schemas]
set -u
bin=$1
models=$2
grammars=$3
dir=$4
opt=${6:---grammar-file}
tab=$(printf '\t')
passed=0 failed=0
set -f # the flags are split into words, never globbed
while IFS="$tab" read -r name model grammar seed temp n flags prompt; do
    case $name in '' | '#'*) continue ;; esac
    want="$prompt$(cat "$dir/grammar/$name.expected"; printf x)"
    want=${want%x}
    # the exit status rides after the last 'x', so trailing newlines of the text survive
    # shellcheck disable=SC2086
    got=$("$bin" run -m "$models/$model" -p "$prompt" -n "$n" --seed "$seed" --temp "$temp" $flags \
        "$opt" "$grammars/$grammar" -t 1 2>/dev/null </dev/null; printf 'x%d' $?)
    rc=${got##*x}
    got=${got%x*}
    if [ "$rc" -eq 0 ] && [ "$got" != "$prompt" ] && [ "$got" = "$want" ]; then
        echo "PASS  $name"
        passed=$((passed + 1))
    else
        echo "FAIL  $name (exit status $rc; $model $grammar seed $seed temp $temp $flags)"
        echo "  want: $want"
        echo "  got:  $got"
        failed=$((failed + 1))
    fi
done <"$dir/${5:-grammar.tsv}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
