#!/bin/sh
# Flash attention over a prompt batch of 64+ tokens with an f16 cache: ggml's tiled kernel
# (ggml_compute_forward_flash_attn_ext_tiled), f32 queries and accumulators, the keys and values in
# tiles of 64. llama.cpp d32676d, one 128-token chunk per batch as oxillama perplexity evaluates it:
#   llama-perplexity -m golden/arch/qwen3.gguf -f perplexity/stories.txt -c 128 -b 128 -ub 128 -t 2 -fa on
#   -> Final estimate: PPL = 825.7348 (golden/README.md)
# The position-by-position kernel with its f16 accumulator (ggml's for smaller batches) gives 825.778
# here and the unfused graph 825.738, so the bound below (0.001) tells the three apart; what remains
# (1e-4) is in the rest of the model's sums, equal with flash attention off.
# usage: check_flash_tiled.sh OXILLAMA_BINARY MODEL DIR
set -eu
out=$("$1" perplexity -m "$2" -f "$3/stories.txt" -c 128 -t 2 -fa on -ctk f16 -ctv f16 2>/dev/null)
ppl=$(printf '%s\n' "$out" | sed -n 's/^Final estimate: PPL = \([0-9.]*\).*/\1/p')
echo "tiled flash attention, f16 cache: PPL $ppl (llama.cpp 825.7348, within 0.001)"
awk -v p="$ppl" 'BEGIN { d = p - 825.7348; exit (p != "" && d <= 0.001 && d >= -0.001) ? 0 : 1 }'
