#!/bin/sh
# The device check for the Vulkan backend, prepared to run on a machine with a real GPU in one go
# (README "GPU offload (Vulkan)"): build with Vulkan, the golden parity checks with every layer
# offloaded, then `oxillama bench -ngl 99` beside llama.cpp's Vulkan llama-bench when one is given.
#
#   sh bench/gpu_check.sh [OUT_DIR]
#
# Environment: LLAMA_BENCH=/path/to/llama-bench (a Vulkan build of llama.cpp; without it only
# oxillama is timed), BIG=1 also makes and times an 8B-shaped Q4_K_M model (about 14 GiB of F16
# written first, then quantized: minutes), JOBS (build jobs, default the CPU count).
# Needs cmake, ninja, a C compiler, libvulkan-dev, glslc, python3 with jinja2 and a Vulkan driver.
# Writes OUT_DIR/gpu_check.md (the tables) and the logs beside it.
set -u
OUT=${1:-${OUT:-gpu-check-out}}
mkdir -p "$OUT"
JOBS=${JOBS:-$(nproc)}
B=build-gpu
REPORT="$OUT/gpu_check.md"
log() { printf '%s\n' "$*" | tee -a "$REPORT"; }
: >"$REPORT"

log "# oxillama Vulkan device check, $(date -u '+%Y-%m-%d %H:%M UTC')"
log ""
log "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs"
command -v nvidia-smi >/dev/null && log "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
command -v vulkaninfo >/dev/null && log "- Vulkan devices: $(vulkaninfo --summary 2>/dev/null | sed -n 's/^ *deviceName *= *//p' | tr '\n' ';')"
for t in cmake ninja glslc python3; do
    command -v $t >/dev/null || { log "missing: $t"; exit 1; }
done

log ""
log "## Build"
if ! cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DOXL_VULKAN=ON >"$OUT/cmake.log" 2>&1 ||
    ! ninja -C $B -j"$JOBS" oxillama bench/oxl-make-synthetic >"$OUT/build.log" 2>&1; then
    log "build failed: see cmake.log / build.log"
    tail -20 "$OUT/build.log" "$OUT/cmake.log"
    exit 1
fi
log "built $B/oxillama ($(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
X=$B/oxillama

log ""
log "## Parity with every layer offloaded (oxillama golden -ngl 99)"
fail=0
for m in llama qwen3 gemma3 mixtral gpt-oss; do
    if $X golden -ngl 99 -m golden/arch/$m.gguf golden/arch/$m.logits.gguf >"$OUT/golden-$m.log" 2>&1; then
        log "- $m: $(grep -E '^# ' "$OUT/golden-$m.log" | tail -1)"
    else
        log "- $m: FAILED ($(grep -E '^# |FAIL' "$OUT/golden-$m.log" | tail -1))"
        fail=1
    fi
done
want=$(cat golden/run/once.expected 2>/dev/null || true)
got=$($X run -ngl 99 -m models/stories260K.gguf -p "$(cat golden/run/once.prompt)" -n 64 --temp 0 2>"$OUT/run.err")
if [ -n "$want" ] && [ "$got" = "$want" ]; then log "- stories260K run -ngl 99: golden greedy text"; else
    log "- stories260K run -ngl 99: DIFFERS from golden/run/once.expected"; fail=1; fi
log "- device line: $(grep -m1 -i vulkan "$OUT/run.err")"

log ""
log "## Speed (2 runs each; -ngl 99; prompt 512, generation 128)"
V=golden/tokenizer/ggml-vocab-llama-spm.gguf
W=$OUT/models
mkdir -p "$W"
$B/bench/oxl-make-synthetic --vocab $V "$W/syn-F16.gguf" >/dev/null
models=""
for q in Q4_0 Q4_K_M Q8_0; do
    $X quantize "$W/syn-F16.gguf" "$W/syn-$q.gguf" $q >/dev/null 2>&1 && models="$models $W/syn-$q.gguf"
done
if [ "${BIG:-0}" = 1 ]; then
    $B/bench/oxl-make-synthetic --vocab $V --n-embd 4096 --n-layer 32 --n-ff 14336 --n-head 32 --n-head-kv 8 \
        "$W/big-F16.gguf" >/dev/null && $X quantize "$W/big-F16.gguf" "$W/big-Q4_K_M.gguf" Q4_K_M >/dev/null 2>&1 &&
        rm -f "$W/big-F16.gguf" && models="$models $W/big-Q4_K_M.gguf"
fi
log ""
log "| model | test | oxillama t/s | llama.cpp t/s | ratio |"
log "| --- | --- | ---: | ---: | ---: |"
for m in $models; do
    $X bench -m "$m" -ngl 99 -p 512 -n 128 -r 2 -o csv >"$OUT/oxl-$(basename "$m").csv" 2>"$OUT/oxl-$(basename "$m").err"
    if [ -n "${LLAMA_BENCH:-}" ]; then
        "$LLAMA_BENCH" -m "$m" -ngl 99 -p 512 -n 128 -r 2 -o csv >"$OUT/llama-$(basename "$m").csv" 2>/dev/null
    fi
    python3 - "$m" "$OUT" >>"$REPORT" <<'PY'
import csv, os, sys
m, out = sys.argv[1], sys.argv[2]
base = os.path.basename(m)
def rows(path):
    try:
        with open(path) as f:
            return {(int(r["n_prompt"]), int(r["n_gen"])): float(r["avg_ts"]) for r in csv.DictReader(f)}
    except (OSError, KeyError, ValueError):
        return {}
o, l = rows(f"{out}/oxl-{base}.csv"), rows(f"{out}/llama-{base}.csv")
for key, name in (((512, 0), "pp512"), ((0, 128), "tg128")):
    a, b = o.get(key), l.get(key)
    print(f"| {base} | {name} | {a if a else '-'} | {b if b else '-'} | {f'{a / b:.2f}' if a and b else '-'} |")
PY
done
tail -4 "$REPORT"
exit $fail
