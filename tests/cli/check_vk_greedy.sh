#!/bin/sh
# Offloaded quantized layers: `oxillama run -ngl 99 --temp 0` prints the same text as the CPU run
# (-ngl 0) of the same model, and says that it offloaded. Without a Vulkan loader or device the
# check is skipped (exit 77), unless OXILLAMA_REQUIRE_VULKAN=1.
# usage: check_vk_greedy.sh OXILLAMA_BINARY N_TOKENS MODEL...
# N_TOKENS is short on purpose: the device's float sums (norms, attention, f32 products) differ from
# the CPU's in the last bits, the activations' 8-bit quantization turns such differences into steps
# of a quantum now and then (logits move by ~1% of their range), and a greedy continuation flips at
# the first near-tie; the quantized products themselves equal the CPU's (tests/gpu/test_gpu_quant.c).
set -u
bin=$1
n=$2
shift 2
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
for model in "$@"; do
    name=$(basename "$model" .gguf)
    "$bin" run -m "$model" -p "Once upon a time" -n "$n" --temp 0 -t 2 -ngl 0 >"$tmp/cpu" 2>"$tmp/cpu.err"
    rc0=$?
    "$bin" run -m "$model" -p "Once upon a time" -n "$n" --temp 0 -t 2 -ngl 99 >"$tmp/gpu" 2>"$tmp/gpu.err"
    rc1=$?
    if [ "$rc0" -ne 0 ] || [ "$rc1" -ne 0 ]; then
        echo "FAIL  $name: exit status $rc0 (-ngl 0), $rc1 (-ngl 99)"
        cat "$tmp/gpu.err"
        status=1
        continue
    fi
    if ! grep -q "^offloading .* to Vulkan device" "$tmp/gpu.err"; then
        # only a missing loader or device is a skip; a model the device path refuses is a failure
        if [ "${OXILLAMA_REQUIRE_VULKAN:-}" = 1 ] || ! grep -q "Vulkan: no \(Vulkan loader\|device\)" "$tmp/gpu.err"; then
            echo "FAIL  $name: nothing offloaded"
            cat "$tmp/gpu.err"
            status=1
            continue
        fi
        echo "SKIP  $name: no Vulkan device"
        cat "$tmp/gpu.err"
        [ "$status" -eq 0 ] && status=77
        continue
    fi
    if cmp -s "$tmp/cpu" "$tmp/gpu"; then
        echo "PASS  $name: -ngl 99 prints the CPU's $n tokens"
    else
        echo "FAIL  $name"
        echo "  cpu: $(cat "$tmp/cpu")"
        echo "  gpu: $(cat "$tmp/gpu")"
        status=1
    fi
done
exit $status
