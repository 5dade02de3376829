#!/bin/sh
# The Vulkan offload from the command line (tests/cli/vulkan_tests.cmake): each case prints
# "PASS <case>" or "FAIL <case>: <why>" and exits 1 on a failure; 77 (ctest's skip) when there is
# no Vulkan device, unless OXILLAMA_REQUIRE_VULKAN=1 (CI, on Mesa's lavapipe) makes that a failure.
# usage: vulkan.sh CASE OXILLAMA_BINARY SOURCE_DIR
set -u
case_=$1 bin=$2 src=$3
m=$src/models/stories260K.gguf
g=$src/golden
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
fails=0
fail() {
    echo "FAIL $case_: $*"
    fails=$((fails + 1))
}
expect() { # STATUS NAME CMD...: stdout in $work/out, stderr in $work/err
    want=$1 name=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" -eq "$want" ] || fail "$name: exit status $rc, expected $want; stderr: $(head -c 600 "$work/err")"
}
has() { # FILE FIXED-STRING NAME
    grep -qF -- "$2" "$1" || fail "$3: '$2' not in $(basename "$1"): $(head -c 600 "$1")"
}
count() { # FILE FIXED-STRING N NAME: the string is on exactly N lines
    n=$(grep -cF -- "$2" "$1")
    [ "$n" -eq "$3" ] || fail "$4: '$2' on $n lines, expected $3: $(head -c 600 "$1")"
}

"$bin" run --list-devices >"$work/devices" 2>&1
if ! grep -q "^  Vulkan0: " "$work/devices"; then
    if [ "${OXILLAMA_REQUIRE_VULKAN:-0}" = 1 ]; then
        echo "FAIL $case_: no Vulkan device and OXILLAMA_REQUIRE_VULKAN=1: $(cat "$work/devices")"
        exit 1
    fi
    echo "SKIP $case_: no Vulkan device ($(cat "$work/devices"))"
    exit 77
fi
dev0=$(sed -n 's/^  Vulkan0: //p' "$work/devices")

# llama.cpp's greedy continuation of "Once upon a time" (64 tokens), as run_greedy.sh checks it
text=$(cat "$g/run/once.prompt" "$g/run/once.expected")
greedy() { # NAME ARGS...: run prints the golden text
    name=$1
    shift
    expect 0 "$name" "$bin" run -m "$m" -p "$(cat "$g/run/once.prompt")" -n 64 --temp 0 -t 2 "$@"
    [ "$(cat "$work/out")" = "$text" ] || fail "$name: the text differs from llama.cpp's: '$(cat "$work/out")'"
}

case $case_ in
run)
    greedy "-ngl 99" -ngl 99
    has "$work/err" "offloading 5 of 5 repeating layers and the output layer to Vulkan device 0 ($dev0)" "-ngl 99"
    greedy "-ngl all" --n-gpu-layers all
    has "$work/err" "offloading 5 of 5 repeating layers and the output layer to Vulkan device 0" "-ngl all"
    greedy "-ngl 5" --gpu-layers 5
    has "$work/err" "offloading 5 of 5 repeating layers to Vulkan device 0" "-ngl 5"
    greedy "-ngl 2" -ngl 2 --device Vulkan0
    has "$work/err" "offloading 2 of 5 repeating layers to Vulkan device 0" "-ngl 2"
    greedy "-ngl 0" -ngl 0
    count "$work/err" "offloading" 0 "-ngl 0"
    greedy "--device none" -ngl 99 --device none
    count "$work/err" "offloading" 0 "--device none"
    greedy "-fa off, f32 cache" -ngl 99 -fa off -ctk f32 -ctv f32
    has "$work/err" "offloading 5 of 5" "f32 cache"
    count "$work/err" "runs on the CPU" 0 "f32 cache"
    ;;
fallback)
    # no such device, no driver: one line saying so, then the CPU's run
    for env in OXILLAMA_VK_DEVICE=99 VK_ICD_FILENAMES=/nonexistent/icd.json; do
        expect 0 "$env" env "$env" "$bin" run -m "$m" -p "$(cat "$g/run/once.prompt")" -n 64 --temp 0 -t 2 -ngl 99
        [ "$(cat "$work/out")" = "$text" ] || fail "$env: the text differs from llama.cpp's: '$(cat "$work/out")'"
        count "$work/err" "running on the CPU" 1 "$env"
        count "$work/err" "Vulkan" 1 "$env"
        count "$work/err" "offloading" 0 "$env"
    done
    expect 0 "no device 99" env OXILLAMA_VK_DEVICE=99 "$bin" run -m "$m" -p Once -n 1 --temp 0 -ngl 99
    has "$work/err" "-ngl 99: Vulkan: no device 99 (" "no device 99"
    expect 0 "no driver" env VK_ICD_FILENAMES=/nonexistent/icd.json "$bin" run --list-devices
    has "$work/out" "Available devices: none" "no driver"
    # a cache type and features the device path does not cover: one line naming them, the CPU's text
    greedy "-ctk bf16" -ngl 99 -ctk bf16 -ctv bf16
    count "$work/err" "does not run a KV cache type other than f16 or f32" 1 "-ctk bf16"
    expect 0 "llama4" "$bin" golden -ngl 99 -m "$g/arch/llama4.gguf" "$g/arch/llama4.logits.gguf"
    count "$work/err" "the Vulkan backend does not run the attention temperature" 1 "llama4"
    expect 0 "mamba" "$bin" golden -ngl 99 -m "$g/arch/mamba.gguf" "$g/arch/mamba.logits.gguf"
    count "$work/err" "does not run recurrent (Mamba) layers" 1 "mamba"
    expect 0 "deepseek2" "$bin" golden -ngl 99 -m "$g/arch/deepseek2.gguf" "$g/arch/deepseek2.logits.gguf"
    count "$work/err" "does not run latent attention (MLA)" 1 "deepseek2"
    expect 0 "bert" "$bin" golden -ngl 99 -m "$g/arch/bert.gguf" "$g/arch/bert.logits.gguf"
    count "$work/err" "architecture bert runs its own forward pass" 1 "bert"
    # the cache on the device: saving the state is a named error
    expect 1 "--prompt-cache" "$bin" run -m "$m" -p Once -n 1 --temp 0 -ngl 99 --prompt-cache "$work/state.bin"
    has "$work/err" "the KV cache of 5 layers is on the Vulkan device (-ngl), where saving it is not supported" \
        "--prompt-cache"
    ;;
golden-arch)
    # every dense decoder family of golden/arch the device path covers, all layers and the head on the
    # device: argmax, greedy, max|d|/range <= 1e-3
    for a in llama llama3 qwen2 qwen2vl qwen3 gemma gemma2 gemma3 phi2 phi3 gpt2 gptneox starcoder starcoder2 \
        stablelm stablelm2-12b falcon falcon-40b bloom command-r cohere2 exaone4 granite internlm2 minicpm olmo2 \
        olmo3 glm4 ernie4_5 hunyuan-dense seed_oss smollm3; do
        expect 0 "$a" "$bin" golden -ngl 99 -m "$g/arch/$a.gguf" "$g/arch/$a.logits.gguf"
        has "$work/err" "repeating layers and the output layer to Vulkan device 0" "$a"
        count "$work/err" "on the CPU" 0 "$a"
        count "$work/out" "PASS" 3 "$a"
        has "$work/out" "the Vulkan device's" "$a"
    done
    # half the layers on the device, the head on the CPU
    expect 0 "qwen3 -ngl 1" "$bin" golden -ngl 1 -m "$g/arch/qwen3.gguf" "$g/arch/qwen3.logits.gguf"
    has "$work/err" "offloading 1 of 2 repeating layers to Vulkan device 0" "qwen3 -ngl 1"
    count "$work/out" "PASS" 3 "qwen3 -ngl 1"
    # f16 and bf16 weights (mul_mat_f16/_bf16, both sum in the CPU's order, products exact): llama.cpp's
    # logits to the bit on lavapipe, as on the CPU
    for f in F16 BF16; do
        expect 0 "stories260K-$f" "$bin" golden -ngl 99 "$g/models/stories260K-$f.once.gguf"
        count "$work/out" "PASS" 3 "stories260K-$f"
        has "$work/out" "max|Δ|/range 0.00e+00 (bound 1.0e-03, the Vulkan device's)" "stories260K-$f"
    done
    ;;
tools)
    expect 0 "perplexity -ngl" "$bin" perplexity -m "$m" -f "$src/golden/run/once.expected" -c 32 -b 32 -ngl 99
    has "$work/err" "offloading 5 of 5 repeating layers and the output layer" "perplexity -ngl"
    has "$work/out" "Final estimate: PPL = " "perplexity -ngl"
    expect 0 "bench -ngl" "$bin" bench -m "$m" -p 8 -n 4 -r 1 -o csv -ngl 99
    has "$work/out" '"Vulkan,CPU"' "bench -ngl"
    has "$work/out" '"f16","f16","99"' "bench -ngl"
    # serve: the same greedy text over HTTP with the layers on the device
    "$bin" serve -m "$m" --port 0 -ngl 99 -t 2 2>"$work/log" &
    pid=$!
    port=""
    for _ in $(seq 1 300); do
        port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/log")
        [ -n "$port" ] && grep -q "loaded in" "$work/log" && break
        kill -0 "$pid" 2>/dev/null || break
        port=""
        sleep 0.1
    done
    if [ -z "$port" ]; then
        fail "serve -ngl did not start: $(cat "$work/log")"
    else
        has "$work/log" "offloading 5 of 5 repeating layers and the output layer" "serve -ngl"
        curl -s "http://127.0.0.1:$port/completion" -H 'Content-Type: application/json' \
            -d '{"prompt":"Once upon a time","n_predict":64,"temperature":0}' >"$work/body"
        has "$work/body" "$(head -c 60 "$g/run/once.expected" | tr -d '\n')" "serve -ngl text"
        # the same prompt again: the slot keeps the cached prefix (oxl_seq_truncate) and rewrites the rest
        curl -s "http://127.0.0.1:$port/completion" -H 'Content-Type: application/json' \
            -d '{"prompt":"Once upon a time","n_predict":64,"temperature":0}' >"$work/body2"
        has "$work/body2" "$(head -c 60 "$g/run/once.expected" | tr -d '\n')" "serve -ngl text, prefix reused"
        has "$work/body2" '"cache_n":4' "serve -ngl second request: 4 prompt tokens from the cache"
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=""
    ;;
*)
    fail "unknown case"
    ;;
esac
[ "$fails" -eq 0 ] && echo "PASS $case_"
[ "$fails" -eq 0 ]
