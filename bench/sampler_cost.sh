#!/bin/sh
# The CPU time of each sampler step per sampled token over a 32000-token vocabulary: makes a tiny
# synthetic model with llama's SPM vocabulary (only its vocabulary matters: no decoding is timed)
# unless MODEL is given, then runs oxl-bench-samplers (bench/samplers.c) on fixed logits and prints
# the CPU's name, the load average and one table row per sampler.
#   bench/sampler_cost.sh [ITERS (default 200)] [ROUNDS (default 5)] [MODEL]
set -eu
cd "$(dirname "$0")/.."
iters=${1:-200}
rounds=${2:-5}
build=${OXL_BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=${3:-$tmp/vocab32k.gguf}
if [ ! -f "$model" ]; then
    "$build/bench/oxl-make-synthetic" --vocab golden/tokenizer/ggml-vocab-llama-spm.gguf --n-embd 64 --n-layer 1 \
        --n-ff 128 --n-head 4 --n-head-kv 4 --ctx 256 "$model" >/dev/null 2>&1
fi
field() { lscpu | sed -n "s/^$1: *//p"; }
echo "cpu: $(field 'Model name') (family $(field 'CPU family'), model $(field 'Model'))"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "command: bench/sampler_cost.sh $iters $rounds"
"$build/bench/oxl-bench-samplers" "$model" --iters "$iters" --rounds "$rounds"
