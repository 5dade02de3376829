#!/bin/sh
# Repacked K-quant weights against llama.cpp: synth-small (golden/quantize) quantized to Q4_K_M by
# oxillama quantize (byte-identical to llama-quantize's file), evaluated with and without repacking
# against llama.cpp's own run (golden/README.md: perplexity/synth-small-Q4_K_M.c128.kld,
# llama-perplexity -c 128 -b 128 -ub 128 -t 2 --chunks 4, its repacking on). This random model
# amplifies float summation order: llama.cpp's own -nr (no repacking) run differs from its base by
# mean KLD 0.000060 +- 0.000001 (same top 99.206 %). Bound: that drift + 3 standard errors.
# usage: check_repack.sh OXILLAMA_BINARY SYNTH_SMALL_F32 DIR WORKDIR
set -eu
bin=$1
src=$2
dir=$3
work=$4
mkdir -p "$work"
"$bin" quantize "$src" "$work/synth-small-Q4_K_M.gguf" Q4_K_M >/dev/null 2>&1
status=0
for flag in "" "-nr"; do
    out=$("$bin" perplexity -m "$work/synth-small-Q4_K_M.gguf" -c 128 -t 2 $flag \
          --kl-divergence-base "$dir/synth-small-Q4_K_M.c128.kld" --kl-divergence 2>/dev/null)
    k=$(printf '%s\n' "$out" | sed -n 's/^Mean    KLD: *\([-0-9.e]*\).*/\1/p')
    echo "Q4_K_M ${flag:-repacked}: mean KLD ${k:-nan} vs llama.cpp (<= 0.000063, its own repack on/off drift + 3 SE)"
    awk -v k="${k:-nan}" 'BEGIN { exit (k != "nan" && k + 0 <= 0.000063) ? 0 : 1 }' || status=1
done
exit $status
