#!/bin/sh
# Measures max|Δ|/range of logits goldens (and max|Δ|/max|ref| of embeddings goldens, pooled and
# per token) on every ISA cap this CPU runs and prints, per tolerances.tsv line, the worst value and
# the bound the rule gives: max(3 × worst, 1e-6), rounded up to two significant digits
# (golden/README.md, "Tolerances").
#   tools/golden_tolerances.sh OXILLAMA GOLDEN...     e.g. build/oxillama golden/arch/*.logits.gguf
# The caps tried are OXL_TOLERANCE_ISAS (default: the x86-64 ones); a cap the CPU cannot run is skipped.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OXILLAMA GOLDEN..." >&2; exit 2; }
bin=$1
shift
isas=${OXL_TOLERANCE_ISAS:-scalar sse41 avx2 avx512bw avx512vnni}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
status=0
for isa in $isas; do
    out=$(OXILLAMA_ISA=$isa "$bin" golden "$@") && rc=0 || rc=$?
    cap=$(printf '%s\n' "$out" | sed -n 's/^# ISA cap: //p')
    if [ "$cap" != "$isa" ]; then
        echo "# $isa: not run on this CPU, skipped" >&2
        continue
    fi
    [ "$rc" -eq 0 ] || status=1
    printf '%s\n' "$out" | awk -v isa="$isa" '
        /^# / && !/^# ISA cap/ && !/passed/ { n = split($2, p, "/"); file = p[n] }
        /^(PASS|FAIL)  / {
            for (i = 3; i < NF; i++) {
                if ($i ~ /^max\|Δ\|\//) {
                    key = file
                    if ($2 == "embeddings") key = key ($3 == "pooled" ? ":pooled" : ":tokens")
                    print key, isa, $(i + 1)
                }
            }
        }' >>"$tmp"
done
printf '# file\tworst\tbound\t(worst per ISA cap)\n'
awk '
    { if (!($1 in worst) || $3 + 0 > worst[$1]) worst[$1] = $3 + 0; per[$1] = per[$1] " " $2 "=" $3 }
    END {
        for (f in worst) {
            b = 3 * worst[f]
            if (b < 1e-6) b = 1e-6
            e = 10 ^ (int(log(b) / log(10) + 100) - 100 - 1)
            r = int(b / e); if (r * e < b * (1 - 1e-12)) r++
            printf "%s\t%.2e\t%.1e\t(%s )\n", f, worst[f], r * e, per[f]
        }
    }' "$tmp" | sort
if [ $status -ne 0 ]; then
    echo "# some checks failed (see oxillama golden's output)" >&2
fi
exit $status
