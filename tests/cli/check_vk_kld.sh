#!/bin/sh
# Prompt batches on the device against llama.cpp's logits: `oxillama perplexity -ngl 99 -c 128`
# evaluates stories.txt in batches of 128 tokens, which oxl_gpu_mul_mat_f32 multiplies with the
# tiled mul_mat shaders (128 >= OXL_GPU_TILED_MIN_COLS; tests/gpu/test_gpu_offload.c checks the
# dispatches); its KL divergence from golden/perplexity/stories260K.c128.kld (llama-perplexity's
# logits, -c 128) must stay within the device's bound: mean KLD <= 1e-5, the same top token
# everywhere. Without a Vulkan loader or device the check is skipped (exit 77), unless
# OXILLAMA_REQUIRE_VULKAN=1.
# usage: check_vk_kld.sh OXILLAMA_BINARY MODEL GOLDEN_PERPLEXITY_DIR
set -u
bin=$1
model=$2
dir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
"$bin" perplexity -m "$model" -c 128 -t 2 -ngl 99 --kl-divergence-base "$dir/stories260K.c128.kld" \
    --kl-divergence >"$tmp/out" 2>"$tmp/err"
rc=$?
if ! grep -q "^offloading .* to Vulkan device" "$tmp/err"; then
    if [ "${OXILLAMA_REQUIRE_VULKAN:-}" != 1 ] && grep -q "Vulkan: no \(Vulkan loader\|device\)" "$tmp/err"; then
        echo "SKIP  no Vulkan device"
        exit 77
    fi
    echo "FAIL  nothing offloaded"
    cat "$tmp/err"
    exit 1
fi
if [ "$rc" -ne 0 ]; then
    echo "FAIL  perplexity -ngl 99 exit status $rc"
    cat "$tmp/err"
    exit 1
fi
kld=$(sed -n 's/^Mean    KLD: *\([-0-9.e]*\).*/\1/p' "$tmp/out")
top=$(sed -n 's/^Same top p: *\([0-9.]*\).*/\1/p' "$tmp/out")
rms=$(sed -n 's/^RMS Δp *: *\([0-9.]*\).*/\1/p' "$tmp/out")
# The device's sums run in another order than the CPU's, so a near-tie may flip the top token at
# one position of the 635 (0.16 %); the probabilities themselves stay within 0.05 % (RMS; the
# CPU's own run is 0.004 % from llama.cpp's, the device's 0.016-0.033 %).
if awk -v k="$kld" -v t="$top" -v r="$rms" \
    'BEGIN { exit (k != "" && t != "" && r != "" && k + 0 <= 1e-5 && t + 0 >= 99.5 && r + 0 <= 0.05) ? 0 : 1 }'; then
    echo "PASS  mean KLD $kld (<= 1e-5), same top $top % (>= 99.5), RMS dp $rms % (<= 0.05)"
    exit 0
fi
echo "FAIL  mean KLD '$kld' (<= 1e-5), same top '$top' % (>= 99.5), RMS dp '$rms' % (<= 0.05)"
cat "$tmp/out"
exit 1
