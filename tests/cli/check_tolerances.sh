#!/bin/sh
# The logits checker's per-file bounds (golden/README.md, "Tolerances") on a copy of the
# stories260K "once" golden: a bound below the measured max|Δ|/range fails the file (exit 1, the
# line shows the value and the bound), the same table with a loose bound passes it, and a table
# without a line for the file refuses it.
#   check_tolerances.sh OXILLAMA GOLDEN_DIR MODELS_DIR WORK_DIR
set -u
bin=$1 g=$2 m=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir" || exit 1
cp "$g/models/stories260K.once.gguf" "$m/stories260K.gguf" "$dir/" || exit 1
fail=0
run() { # want_status, want_pattern (grep -E on stdout and stderr), then the table's line
    printf '# file\tx86-64\tother\n%s\n' "$3" >"$dir/tolerances.tsv"
    "$bin" golden "$dir/stories260K.once.gguf" >"$dir/out.txt" 2>&1
    status=$?
    if [ "$status" -ne "$1" ] || ! grep -Eq "$2" "$dir/out.txt"; then
        echo "FAIL: table line '$3': status $status (want $1), output lacks /$2/:"
        cat "$dir/out.txt"
        fail=1
    else
        echo "ok: table line '$3': $(grep -E "$2" "$dir/out.txt")"
    fi
}
run 1 '^FAIL  logits max\|Δ\|/range [1-9]\.[0-9]{2}e-0[0-9] \(bound 1\.0e-09\) over 5 positions$' \
    "stories260K.once.gguf	1e-9	1e-9"
run 0 '^PASS  logits max\|Δ\|/range [0-9.]+e[-+][0-9]+ \(bound 1\.0e-03\) over 5 positions$' \
    "stories260K.once.gguf	1e-3	1e-3"
run 1 'no bound for stories260K\.once\.gguf' "stories260K.lily.gguf	1e-3	1e-3"
run 1 "tolerances\.tsv:2: expected 'file x86-64-bound other-bound'" "stories260K.once.gguf	1e-3"
exit $fail
