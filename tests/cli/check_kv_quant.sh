#!/bin/sh
# Quantized and bf16 KV caches against llama.cpp's own runs (golden/README.md, perplexity/qwen3.c128.fa.*.kld:
# llama-perplexity -m golden/arch/qwen3.gguf -f stories.txt -c 128 -t 2 -fa on -ctk T -ctv T,
# llama.cpp d32676d). qwen3's heads are 32 wide, so q8_0 and q4_0 rows hold whole blocks.
#
# 1. With the same cache type, oxillama's logits are llama.cpp's: mean KLD <= 1e-6 and 100 % same top
#    token (the bound of the f16 perplexity-kld test).
# 2. Against llama.cpp's f16 cache, oxillama's quantized cache drifts no further than llama.cpp's own
#    does. llama.cpp measured (llama-perplexity --kl-divergence, f16 base vs T):
#      q8_0: mean KLD 0.000073 ± 0.000002, max 0.000447, same top 98.571 ± 0.473 %
#      q4_0: mean KLD 0.012047 ± 0.000322, max 0.068659, same top 77.460 ± 1.666 %
#    Bound: mean KLD <= llama.cpp's mean + 3 standard errors (q8_0 0.000079, q4_0 0.013013).
#    The same for the other cache types, which have no same-type base file for qwen3 (part 3 has
#    them on synth-small); llama.cpp d32676d, llama-perplexity -m golden/arch/qwen3.gguf -f
#    stories.txt -c 128 -t 2 -fa on -ctk T -ctv T --kl-divergence-base qwen3.c128.fa.f16.kld
#    --kl-divergence:
#      q4_1:   mean KLD 0.009537 ± 0.000223, same top 80.317 ± 1.585 %  (bound 0.010206)
#      q5_0:   mean KLD 0.003037 ± 0.000083, same top 87.619 ± 1.313 %  (bound 0.003286)
#      q5_1:   mean KLD 0.002440 ± 0.000057, same top 89.683 ± 1.213 %  (bound 0.002611)
#      iq4_nl: mean KLD 0.009733 ± 0.000244, same top 78.095 ± 1.649 %  (bound 0.010465)
#      bf16:   mean KLD 0.000009 ± 0.000000, same top 99.683 ± 0.224 %  (bound 0.000010: the
#              printed 0.000000 is under 5e-7)
# 3. A model with 64-wide heads (synth-small, golden/quantize), where llama.cpp rotates q and k (v
#    and the attention output) by a Walsh-Hadamard matrix around a quantized cache: for every cache
#    type of the spec (gen/spec.py kv_cache, as `oxillama perplexity --help` lists them) but f32 and f16 —
#    q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl (rotated) and bf16 (not quantized: not rotated) — with the
#    same cache type, mean KLD <= 1e-6 and 100 % same top token (perplexity/synth-small.c128.fa.T.kld;
#    a type without its base file fails).
# 4. bf16 is not a quantized type (ggml_is_quantized), so llama.cpp runs a bf16 V cache without flash
#    attention too (kq rounded to bf16 for the product with V): the same bound against
#    perplexity/synth-small.c128.bf16.kld (llama-perplexity ... -fa off -ctk bf16 -ctv bf16).
# usage: check_kv_quant.sh OXILLAMA_BINARY MODEL DIR [MODEL_HEAD64]
set -eu
bin=$1
model=$2
dir=$3
model64=${4:-}
status=0
kld() { # cache type, base file [model [flash attention]] -> "mean_kld same_top"
    out=$("$bin" perplexity -m "${3:-$model}" -c 128 -t 2 -fa "${4:-on}" -ctk "$1" -ctv "$1" \
          --kl-divergence-base "$2" --kl-divergence 2>/dev/null)
    k=$(printf '%s\n' "$out" | sed -n 's/^Mean    KLD: *\([-0-9.e]*\).*/\1/p')
    t=$(printf '%s\n' "$out" | sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p')
    echo "${k:-nan} ${t:-nan}"
}
for spec in q8_0:0.000079 q4_0:0.013013; do
    type=${spec%%:*}
    bound=${spec#*:}
    set -- $(kld "$type" "$dir/qwen3.c128.fa.$type.kld")
    echo "$type vs llama.cpp $type: mean KLD $1 (<= 1e-6), same top $2 % (100)"
    awk -v k="$1" -v t="$2" 'BEGIN { exit (k != "nan" && k + 0 <= 1e-6 && t == "100.000") ? 0 : 1 }' || status=1
    set -- $(kld "$type" "$dir/qwen3.c128.fa.f16.kld")
    echo "$type vs llama.cpp f16: mean KLD $1 (<= $bound, llama.cpp's own drift + 3 SE)"
    awk -v k="$1" -v b="$bound" 'BEGIN { exit (k != "nan" && k + 0 <= b + 0) ? 0 : 1 }' || status=1
done
for spec in q4_1:0.010206 q5_0:0.003286 q5_1:0.002611 iq4_nl:0.010465 bf16:0.000010; do
    type=${spec%%:*}
    bound=${spec#*:}
    set -- $(kld "$type" "$dir/qwen3.c128.fa.f16.kld")
    echo "$type vs llama.cpp f16: mean KLD $1 (<= $bound, llama.cpp's own drift + 3 SE)"
    awk -v k="$1" -v b="$bound" 'BEGIN { exit (k != "nan" && k + 0 <= b + 0) ? 0 : 1 }' || status=1
done
if [ -n "$model64" ]; then
    types=$("$bin" perplexity --help 2>&1 | sed -n 's/.*--cache-type-k .*KV cache type for K: \(.*\) (default.*/\1/p' | tr -d ,)
    [ -n "$types" ] || { echo "no KV cache types in oxillama perplexity --help"; status=1; }
    for type in $types; do
        case $type in f32 | f16) continue ;; esac
        base=$dir/synth-small.c128.fa.$type.kld
        if [ ! -f "$base" ]; then
            echo "head 64, $type: no llama.cpp base file $base"
            status=1
            continue
        fi
        set -- $(kld "$type" "$base" "$model64")
        echo "head 64, $type vs llama.cpp $type: mean KLD $1 (<= 1e-6), same top $2 % (100)"
        awk -v k="$1" -v t="$2" 'BEGIN { exit (k != "nan" && k + 0 <= 1e-6 && t == "100.000") ? 0 : 1 }' || status=1
    done
    set -- $(kld bf16 "$dir/synth-small.c128.bf16.kld" "$model64" off)
    echo "head 64, bf16 without flash attention vs llama.cpp's: mean KLD $1 (<= 1e-6), same top $2 % (100)"
    awk -v k="$1" -v t="$2" 'BEGIN { exit (k != "nan" && k + 0 <= 1e-6 && t == "100.000") ? 0 : 1 }' || status=1
fi
exit $status
