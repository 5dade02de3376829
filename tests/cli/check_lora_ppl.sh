#!/bin/sh
# oxillama perplexity --lora against llama-perplexity's KL-divergence base file made with the same
# adapter (golden/lora/README.md): mean KLD <= 1e-6 and 100 % same top token with the adapter;
# without it the same file must not fit (mean KLD > 0.1), so the adapter is really applied.
# usage: check_lora_ppl.sh OXILLAMA MODEL ADAPTER KLD_BASE
set -u
bin=$1 model=$2 lora=$3 base=$4
kout=$("$bin" perplexity -m "$model" --lora "$lora" -c 128 -t 2 --kl-divergence-base "$base" --kl-divergence 2>/dev/null)
rc=$?
kld=$(printf '%s\n' "$kout" | sed -n 's/^Mean    KLD: *\([-0-9.e]*\).*/\1/p')
top=$(printf '%s\n' "$kout" | sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p')
nout=$("$bin" perplexity -m "$model" -c 128 -t 2 --kl-divergence-base "$base" --kl-divergence 2>/dev/null)
nrc=$?
nkld=$(printf '%s\n' "$nout" | sed -n 's/^Mean    KLD: *\([-0-9.e]*\).*/\1/p')
echo "with --lora: exit $rc, mean KLD $kld (<= 1e-6), same top $top % (100); without: exit $nrc, mean KLD $nkld (> 0.1)"
awk -v rc="$rc" -v k="$kld" -v t="$top" -v nrc="$nrc" -v n="$nkld" 'BEGIN {
    ok = rc == 0 && k != "" && k + 0 <= 1e-6 && t == "100.000" && nrc == 0 && n != "" && n + 0 > 0.1
    exit ok ? 0 : 1 }'
