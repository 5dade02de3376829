#!/bin/sh
# Perplexity and KL divergence against llama.cpp's own base file (golden/perplexity/README.md):
# PPL equal to llama.cpp's 4.6319 to 4 digits, mean KLD <= 1e-6, 100 % same top token.
# usage: check_perplexity.sh OXILLAMA_BINARY MODEL DIR
set -eu
bin=$1
model=$2
dir=$3
out=$("$bin" perplexity -m "$model" -f "$dir/stories.txt" -c 128 -t 2 2>/dev/null)
ppl=$(printf '%s\n' "$out" | sed -n 's/^Final estimate: PPL = \([0-9.]*\).*/\1/p')
kout=$("$bin" perplexity -m "$model" -c 128 -t 2 --kl-divergence-base "$dir/stories260K.c128.kld" --kl-divergence 2>/dev/null)
kld=$(printf '%s\n' "$kout" | sed -n 's/^Mean    KLD: *\([-0-9.e]*\).*/\1/p')
top=$(printf '%s\n' "$kout" | sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p')
echo "PPL $ppl (llama.cpp 4.6319); mean KLD $kld (<= 1e-6); same top $top % (100)"
awk -v p="$ppl" -v k="$kld" -v t="$top" 'BEGIN { ok = (p == "4.6319") && (k != "") && (k + 0 <= 1e-6) && (t == "100.000"); exit ok ? 0 : 1 }'
