#!/bin/sh
# The cost of a grammar in `oxillama run`: the same generation with and without --grammar-file,
# alternated A/B, timed as the process's user CPU time (wall time is meaningless on a loaded
# machine). Prints each run, then the mean of each side and their ratio.
#   bench/grammar_cost.sh MODEL GRAMMAR [RUNS (default 3)] [SEEDS (default "4 7")] [N (default 64)]
# e.g. bench/grammar_cost.sh /tmp/oxl-bench/synthetic-0.25B-IQ4_XS.gguf golden/grammars/json.gbnf
set -eu
cd "$(dirname "$0")/.."
model=$1
grammar=$2
runs=${3:-3}
seeds=${4:-4 7}
n=${5:-64}
bin=${OXILLAMA:-build/oxillama}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$runs"); do
    for s in $seeds; do
        for mode in plain grammar; do
            set -- run -m "$model" -p "Once upon a time" -n "$n" --temp 0.8 --seed "$s" -t 1
            [ "$mode" = grammar ] && set -- "$@" --grammar-file "$grammar"
            /usr/bin/time -o "$tmp/time" -f "%U" "$bin" "$@" >/dev/null 2>"$tmp/err"
            gen=$(grep -o 'generated [0-9]* tokens' "$tmp/err" || echo 'generated ? tokens')
            echo "$r $s $mode $(cat "$tmp/time") $gen"
        done
    done
done | tee "$tmp/runs"
awk '{ t[$3] += $4; c[$3]++ } END {
    p = t["plain"] / c["plain"]; g = t["grammar"] / c["grammar"];
    printf "user CPU s, mean: plain %.3f, grammar %.3f, grammar / plain %.3f\n", p, g, g / p }' "$tmp/runs"
