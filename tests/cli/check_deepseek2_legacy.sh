#!/bin/sh
# deepseek2 converted with the merged attn_kv_b (golden/deepseek2-legacy, llama.cpp's non-MLA path)
# against llama.cpp's own runs: flash attention off, PPL equal to llama-perplexity's 812.9805 to 4
# decimals; off and on, mean KLD <= 1e-6 against llama.cpp's base file of the same setting and 100 %
# same top token; `info` names the merged form. Exit statuses checked.
# usage: check_deepseek2_legacy.sh OXILLAMA_BINARY GOLDEN_DIR
set -u
bin=$1 g=$2
m=$g/deepseek2-legacy/deepseek2-legacy.gguf
fail=0
out=$("$bin" perplexity -m "$m" -f "$g/perplexity/stories.txt" -c 128 -t 2 -fa off 2>/dev/null) || {
    echo "FAIL  perplexity -fa off: exit status $?"
    fail=1
}
ppl=$(printf '%s\n' "$out" | sed -n 's/^Final estimate: PPL = \([0-9.]*\).*/\1/p')
if [ "$ppl" = "812.9805" ]; then echo "PASS  PPL $ppl (llama.cpp 812.9805)"; else
    echo "FAIL  PPL '$ppl', llama.cpp 812.9805"
    fail=1
fi
for fa in off on; do
    kout=$("$bin" perplexity -m "$m" -c 128 -t 2 -fa $fa --kl-divergence-base \
        "$g/deepseek2-legacy/deepseek2-legacy.c128.fa$fa.kld" --kl-divergence 2>/dev/null) || {
        echo "FAIL  --kl-divergence -fa $fa: exit status $?"
        fail=1
    }
    kld=$(printf '%s\n' "$kout" | sed -n 's/^Mean    KLD: *\([-0-9.e]*\).*/\1/p')
    top=$(printf '%s\n' "$kout" | sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p')
    if awk -v k="$kld" -v t="$top" 'BEGIN { exit (k != "" && k + 0 <= 1e-6 && t == "100.000") ? 0 : 1 }'; then
        echo "PASS  -fa $fa: mean KLD $kld (<= 1e-6), same top $top %"
    else
        echo "FAIL  -fa $fa: mean KLD '$kld' (<= 1e-6), same top '$top' % (100)"
        fail=1
    fi
done
info=$("$bin" info "$m" 2>&1) || {
    echo "FAIL  info: exit status $?"
    fail=1
}
if printf '%s\n' "$info" | grep -q "merged attn_kv_b: multi-head, cache 4 heads of 24"; then
    echo "PASS  info names the merged attn_kv_b"
else
    echo "FAIL  info: no 'merged attn_kv_b: multi-head, cache 4 heads of 24' line"
    fail=1
fi
exit $fail
