#!/bin/sh
# Cross-ISA determinism: `oxillama run` greedy (64 tokens, --temp 0) on every model with a llama.cpp
# text in golden/run-cross: stories260K in f32, Q8_0, Q4_0, IQ4_NL and Q4_K_M (made here by
# `oxillama quantize`, checked to be llama-quantize's byte for byte; stories260K's rows of 64 and 172
# elements are not multiples of 256, so its Q4_K_M tensors fall back to the legacy formats, as
# llama-quantize does), and golden/quantize's synth-small model (rows of 256 and 512) in Q4_K_M,
# whose tensors are real K-quants (q4_K, q6_K), and in IQ4_XS (models/synth-small-IQ4_XS.gguf), must print llama.cpp's greedy text for that file
# (golden/run-cross/<model>.expected, golden/run/once.prompt) on x86 under every
# OXILLAMA_ISA cap this CPU runs, AArch64 (scalar, neon, neondot under qemu-aarch64-static), RISC-V
# (scalar; rvv at VLEN 128 and 256 under qemu-riscv64-static) and wasm32 (scalar, wasmsimd under
# Node's WASI). A run fails when it exits non-zero, prints no continuation, or prints another text.
# A missing golden fails the check (it never falls back to comparing the targets with each other).
# usage: determinism.sh SOURCE_DIR X86_BUILD AARCH64_BUILD RISCV64_BUILD WASM_BUILD
# OXL_DETERMINISM_ONLY=PREFIX keeps the targets whose label starts with PREFIX (e.g. x86/, for
# tests/mutation/run.py, which has no cross builds); the run says so.
set -u
src=$(cd "$1" && pwd)
x86=$2 a64=$3 rv=$4 wasm=$5
prompt=$(cat "$src/golden/run/once.prompt")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0 failed=0

check() { # name, ok (0/1), detail
    if [ "$2" -eq 0 ]; then
        echo "PASS  $1"
        passed=$((passed + 1))
    else
        echo "FAIL  $1"
        [ -n "$3" ] && echo "$3"
        failed=$((failed + 1))
    fi
}

# label, OXILLAMA_ISA cap, then the command that runs oxillama on this target
targets() {
    # x86: the caps this CPU runs (oxillama refuses a cap the CPU lacks)
    flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
    for cap in scalar: sse41:sse4_1 avx2:avx2 avx512bw:avx512bw avx512vnni:avx512_vnni; do
        isa=${cap%%:*} flag=${cap#*:}
        if [ -z "$flag" ] || echo "$flags" | grep -qw "$flag"; then
            echo "x86/$isa $isa $x86/oxillama"
        fi
    done
    for isa in scalar neon neondot; do
        echo "aarch64/$isa $isa qemu-aarch64-static $a64/oxillama"
    done
    echo "riscv64/scalar scalar qemu-riscv64-static -cpu rv64,v=true,vlen=128 $rv/oxillama"
    echo "riscv64/rvv-vlen128 rvv qemu-riscv64-static -cpu rv64,v=true,vlen=128 $rv/oxillama"
    echo "riscv64/rvv-vlen256 rvv qemu-riscv64-static -cpu rv64,v=true,vlen=256 $rv/oxillama"
    for isa in scalar wasmsimd; do
        echo "wasm32/$isa $isa node --no-warnings $src/tools/wasi-run.mjs $wasm/oxillama.wasm"
    done
}

# the Q4_K_M files, made here, must be llama-quantize's (golden/quantize/llama-quantize.sha256)
quantize() { # source model, output name
    "$x86/oxillama" quantize "$1" "$tmp/$2" Q4_K_M >"$tmp/quantize.log" 2>&1
    check "quantize $2" $? "$(tail -3 "$tmp/quantize.log")"
    want=$(sed -n "s/^\([0-9a-f]*\)  $2\$/\1/p" "$src/golden/quantize/llama-quantize.sha256")
    got=$(sha256sum "$tmp/$2" | cut -d' ' -f1)
    [ -n "$want" ] && [ "$got" = "$want" ]
    check "$2 = llama-quantize's file" $? "  sha256 $got, llama-quantize's ${want:-(not listed)}"
}
quantize "$src/models/stories260K.gguf" stories260K-Q4_K_M.gguf
quantize "$src/golden/quantize/synth-small-f32.gguf" synth-small-Q4_K_M.gguf

targets > "$tmp/targets"
if [ -n "${OXL_DETERMINISM_ONLY:-}" ]; then
    grep "^$OXL_DETERMINISM_ONLY" "$tmp/targets" > "$tmp/targets.only"
    mv "$tmp/targets.only" "$tmp/targets"
    echo "determinism: targets limited to $OXL_DETERMINISM_ONLY* (OXL_DETERMINISM_ONLY)"
fi
# Every llama.cpp text of golden/run-cross names its model: models/<name>.gguf, golden/arch/<name>.gguf
# (gpt-oss with MXFP4 experts), or a Q4_K_M file made
# above; a new model golden there joins the check. Fewer than six is a setup error.
n_expected=0
for golden in "$src"/golden/run-cross/*.expected; do
    name=$(basename "$golden" .expected)
    n_expected=$((n_expected + 1))
    model=$src/models/$name.gguf
    [ -f "$model" ] || model=$src/golden/arch/$name.gguf
    [ -f "$model" ] || model=$tmp/$name.gguf
    if [ ! -f "$model" ]; then
        check "$name: no model models/$name.gguf for $golden" 1 "  missing"
        continue
    fi
    if [ ! -s "$golden" ]; then
        check "$name: llama.cpp's greedy text $golden" 1 "  missing or empty"
        continue
    fi
    want=$(printf '%s' "$prompt"; cat "$golden"; printf x)
    while read -r label isa cmd; do
        # shellcheck disable=SC2086  # cmd is a command line
        got=$(OXILLAMA_ISA=$isa timeout 300 $cmd run -m "$model" -p "$prompt" -n 64 --temp 0 2>"$tmp/err" </dev/null; echo "x$?")
        rc=${got##*x}
        got=${got%x*}x
        if [ "$rc" -ne 0 ]; then
            check "$name $label" 1 "  exit status $rc
  $(tail -3 "$tmp/err")"
        elif [ "$got" = "${prompt}x" ] || [ "$got" = x ]; then
            check "$name $label" 1 "  no continuation printed
  $(tail -3 "$tmp/err")"
        else
            [ "$got" = "$want" ]
            check "$name $label == llama.cpp's greedy text" $? "  want: $want
  got:  $got"
        fi
    done < "$tmp/targets"
done
[ "$n_expected" -ge 6 ]
check "golden/run-cross holds $n_expected model texts (at least 6)" $?
echo "determinism: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
