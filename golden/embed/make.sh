#!/bin/sh
# Writes NAME.out for every case of cases.txt: what llama-embedding prints on stdout for the
# golden/arch model with the case's arguments, flash attention off (the attention oxillama's
# encoders reproduce) and 2 threads. llama-embedding prints from a logging thread that can lose
# the end of its stdout at exit, so the output is taken from its --log-file instead, which holds
# the same lines plus the log lines ("0.00.000.000 I ..." prefixed), which are dropped; that file
# can lose its end too, so each case runs until the longest output has been seen 3 times (at most
# 30 runs) and it must end as every complete output does, with an empty line.
# usage: make.sh /path/to/llama-embedding   (run from golden/embed)
set -eu
bin=$1
arch=../arch
tab=$(printf '\t')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
grep -v '^#' cases.txt | while IFS= read -r line; do
    name=${line%%"$tab"*}
    rest=${line#*"$tab"}
    model=${rest%%"$tab"*}
    args=${rest#*"$tab"}
    set -f
    old_ifs=$IFS
    IFS=$tab
    # shellcheck disable=SC2086 # the arguments are the tab-separated fields
    set -- $args
    IFS=$old_ifs
    set +f
    best=0 seen=0 try=0
    while [ "$try" -lt 30 ] && [ "$seen" -lt 3 ]; do
        try=$((try + 1))
        rm -f "$log"
        "$bin" -m "$arch/$model" -t 2 -fa off "$@" --log-file "$log" </dev/null >/dev/null 2>&1 || {
            echo "$name: llama-embedding failed"
            exit 1
        }
        grep -Ev '^[0-9]+\.[0-9]{2}\.[0-9]{3}\.[0-9]{3} [IWEDN] ' "$log" >"$name.try" || true
        n=$(wc -c <"$name.try")
        if [ "$n" -gt "$best" ]; then
            best=$n seen=1
            mv "$name.try" "$name.out"
        elif [ "$n" -gt 0 ] && [ "$n" -eq "$best" ] && cmp -s "$name.try" "$name.out"; then
            seen=$((seen + 1))
        fi
    done
    rm -f "$name.try"
    if [ "$seen" -lt 3 ] || [ "$(tail -c 2 "$name.out" | od -An -c | tr -d ' ')" != '\n\n' ]; then
        echo "$name: no complete output in $try runs"
        exit 1
    fi
    echo "$name: $(wc -c <"$name.out") bytes"
done
