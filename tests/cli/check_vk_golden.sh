#!/bin/sh
# Offloaded quantized models against llama.cpp's logits goldens: `oxillama golden -ngl 99` on each
# file must pass (argmax, max|Δ|/range within the device's bound, greedy tokens) and must have
# offloaded. Without a Vulkan loader or device the check is skipped (exit 77), unless
# OXILLAMA_REQUIRE_VULKAN=1.
# usage: check_vk_golden.sh OXILLAMA_BINARY GOLDEN...
set -u
bin=$1
shift
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
for golden in "$@"; do
    name=$(basename "$golden" .gguf)
    "$bin" golden -ngl 99 "$golden" >"$tmp/out" 2>&1
    rc=$?
    if ! grep -q "^offloading .* to Vulkan device" "$tmp/out"; then
        if [ "${OXILLAMA_REQUIRE_VULKAN:-}" != 1 ] && grep -q "Vulkan: no \(Vulkan loader\|device\)" "$tmp/out"; then
            echo "SKIP  $name: no Vulkan device"
            [ "$status" -eq 0 ] && status=77
            continue
        fi
        echo "FAIL  $name: nothing offloaded"
        cat "$tmp/out"
        status=1
        continue
    fi
    if [ "$rc" -ne 0 ]; then
        echo "FAIL  $name: golden -ngl 99 exit status $rc"
        cat "$tmp/out"
        status=1
    else
        echo "PASS  $name"
        grep -E "^(PASS|FAIL)" "$tmp/out" | sed 's/^/  /'
    fi
done
exit $status
