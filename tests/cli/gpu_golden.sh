#!/bin/sh
# ctest golden-vulkan-moe*: `oxillama golden -ngl all` on each golden: the model loads with every
# repeating layer (its experts included) offloaded to the Vulkan device (the "offloading N of N
# repeating layers" line), the pass runs there (no line sending the context back to the CPU), every
# check passes, and the logits' max|Δ|/range is within BOUND (tighter than the runner's bound for
# device runs). Exits 77 (skipped) without a Vulkan device, unless OXILLAMA_REQUIRE_VULKAN=1.
# usage: gpu_golden.sh OXILLAMA BOUND GOLDEN...
bin=$1
bound=$2
shift 2
if ! "$bin" run --list-devices 2>/dev/null | grep -q '^ *Vulkan0:'; then
    if [ "$OXILLAMA_REQUIRE_VULKAN" = 1 ]; then
        echo "gpu_golden: FAILED: no Vulkan device and OXILLAMA_REQUIRE_VULKAN=1"
        exit 1
    fi
    echo "gpu_golden: no Vulkan device: skipped"
    exit 77
fi
for f in "$@"; do
    out=$(OXILLAMA_LOG_LEVEL=info "$bin" golden -ngl all "$f" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    if [ "$rc" -ne 0 ]; then
        echo "gpu_golden: FAILED: $f: exit status $rc"
        exit 1
    fi
    if ! printf '%s\n' "$out" | grep -q 'offloading \([0-9][0-9]*\) of \1 repeating layers'; then
        echo "gpu_golden: FAILED: $f: not every layer was offloaded"
        exit 1
    fi
    if printf '%s\n' "$out" | grep -q 'runs on the CPU'; then
        echo "gpu_golden: FAILED: $f: the pass ran on the CPU"
        exit 1
    fi
    d=$(printf '%s\n' "$out" | sed -n 's/.*logits max|Δ|\/range \([0-9.e+-]*\) .*/\1/p')
    if [ -z "$d" ] || ! awk -v d="$d" -v b="$bound" 'BEGIN { exit !(d + 0 <= b + 0) }'; then
        echo "gpu_golden: FAILED: $f: max|Δ|/range '$d' above $bound"
        exit 1
    fi
done
