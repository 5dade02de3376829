#!/bin/sh
# oxillama's two set-up commands (see README):
#   ./build.sh        install missing Debian packages, build, and run the demo on the bundled model
#   ./build.sh test   build and run the whole test suite (what CI runs): ctest, the mutation check,
#                     the sanitizer stage and fuzzers, the cross-ISA stage
#   ./build.sh cross [aarch64|riscv64|wasm32]   the cross-ISA stage alone (README "Other architectures")
set -eu
cd "$(dirname "$0")"

PACKAGES="cmake ninja-build gcc python3 python3-dev python3-pytest python3-jinja2 libcjson-dev libcriterion-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev libwslay-dev nettle-dev libpng-dev libjpeg62-turbo-dev libwebp-dev libjs-marked libjs-highlight.js chromium clang clang-format libclang-rt-dev valgrind curl pkg-config haproxy mesa-vulkan-drivers libvulkan-dev glslc"

# The cross stage's toolchains and emulators (README "Other architectures")
CROSS_PACKAGES="qemu-user-static clang-16 lld-16 gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-riscv64-linux-gnu libc6-dev-riscv64-cross wasi-libc libclang-rt-16-dev-wasm32 nodejs"

install_missing() {
    missing=""
    for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "installing:$missing"
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd=sudo
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq $missing
}

build() {
    # OXL_PYTHON_PACKAGE=ON: the Python package (python/) is built and tested, never skipped for want of Python
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DOXL_WERROR=ON -DOXL_PYTHON_PACKAGE=ON >/dev/null
    ninja -C build -j2
}

# The sanitizer stage of `test`: the whole suite again in build-asan under AddressSanitizer +
# UndefinedBehaviorSanitizer, LeakSanitizer on (any report fails its test), but for the Vulkan
# golden sweeps (label gpu-sweep: the same host path over many models, 4.5 minutes of test time
# under ASan; the device's host code runs there in gpu-unit and vulkan-run/-fallback/-tools), then
# each libFuzzer harness for OXL_FUZZ_SECONDS seconds (default 20; tests/fuzz/run.sh, README
# "Hostile input").
sanitize() {
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOXL_SANITIZE=ON -DOXL_WERROR=ON >/dev/null
    ninja -C build-asan -j2
    ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j2 --timeout 900 -LE gpu-sweep
    tests/fuzz/run.sh "${OXL_FUZZ_SECONDS:-20}"
}

# The cross stage of `test`: the aarch64, riscv64 and wasm32 subset builds (cmake/*.cmake,
# OXL_SUBSET), then on each target under emulation the kernel tests (oxl-kernel-tests) and, at each
# of that target's ISAs (OXILLAMA_ISA), `oxillama golden` on the quant goldens, the stories260K model
# goldens and every architecture golden (golden/arch: 39 families' logits):
# qemu-aarch64-static (neon, neondot), qemu-riscv64-static with V at VLEN 128 and 256 (rvv), Node's
# WASI (wasmsimd), and the kernel tests on CPUs without dotprod or V (detection: those cells skipped,
# the rest pass); then tests/cross/determinism.sh compares greedy runs on all of them and x86's ISA
# caps with llama.cpp's texts; on wasm32 also the JavaScript package's tests (js/test, node --test).
# Every emulated command is bounded by `timeout`.
# $1: one target only (aarch64, riscv64, wasm32).
cross_build() { # build dir suffix, toolchain file name
    cmake -S . -B "build-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOXL_WERROR=ON \
        -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/$2.cmake" >/dev/null
    ninja -C "build-$1" -j2
}

cross_checks() { # label, kernel test program, oxillama program, the target's ISAs, then the emulator command
    label=$1 tests=$2 cli=$3 isas=$4
    shift 4
    rc=0
    echo "== $label: kernel tests"
    timeout 600 "$@" "$tests" || rc=1
    for isa in $isas; do
        echo "== $label: oxillama golden at OXILLAMA_ISA=$isa (quant, stories260K and architecture goldens)"
        # shellcheck disable=SC2046 # the file names have no spaces
        OXILLAMA_ISA=$isa timeout 900 "$@" "$cli" golden golden/quant/*.gguf golden/models/*.once.gguf \
            $(ls golden/arch/*.logits.gguf | grep -v -x -F "${skip_arch:-none}") || rc=1
    done
    return $rc
}

cross() {
    only=${1:-all}
    case $only in aarch64|riscv64|wasm32|all) ;;
    *)
        echo "usage: ./build.sh cross [aarch64|riscv64|wasm32]" >&2
        exit 2
        ;;
    esac
    PACKAGES=$CROSS_PACKAGES install_missing
    status=0
    case $only in all|aarch64)
        cross_build aarch64 aarch64-linux-gnu
        cross_checks aarch64 build-aarch64/tests/cross/oxl-kernel-tests build-aarch64/oxillama \
            "neon neondot" qemu-aarch64-static || status=1
        echo "== aarch64 without dotprod (cortex-a53): kernel tests, neondot skipped"
        timeout 600 qemu-aarch64-static -cpu cortex-a53 build-aarch64/tests/cross/oxl-kernel-tests || status=1
    esac
    case $only in all|riscv64)
        cross_build riscv64 riscv64-linux-gnu
        for vlen in 128 256; do
            cross_checks "riscv64 vlen=$vlen" build-riscv64/tests/cross/oxl-kernel-tests build-riscv64/oxillama \
                rvv qemu-riscv64-static -cpu "rv64,v=true,vlen=$vlen" || status=1
        done
        echo "== riscv64 without V: kernel tests, rvv skipped"
        timeout 600 qemu-riscv64-static -cpu rv64 build-riscv64/tests/cross/oxl-kernel-tests || status=1
    esac
    case $only in all|wasm32)
        cross_build wasm wasm32-wasi
        # gemma3n's golden needs glibc's sinf, cosf and tanhf to the last bit (golden/arch/README.md):
        # musl's (wasi-libc) differ in a few inputs, which this graph turns into other argmaxes
        skip_arch=golden/arch/gemma3n.logits.gguf cross_checks wasm32 build-wasm/tests/cross/oxl-kernel-tests.wasm build-wasm/oxillama.wasm \
            wasmsimd node --no-warnings tools/wasi-run.mjs || status=1
        echo "== wasm32: the JavaScript package (js/) on build-wasm/oxillama-js.wasm"
        OXILLAMA_WASM=build-wasm/oxillama-js.wasm timeout 900 node --test js/test/*.test.mjs || status=1
    esac
    if [ "$only" = all ]; then
        echo "== determinism across x86, aarch64, riscv64 and wasm32"
        tests/cross/determinism.sh . build build-aarch64 build-riscv64 build-wasm || status=1
    fi
    return $status
}

install_missing
build
case "${1:-demo}" in
demo)
    ./build/oxillama run -p "Once upon a time" -n 64 --temp 0
    ;;
test)
    # CI has the shared reference set beside the clone: its fixtures are required there, not skipped
    if [ -n "${CI:-}" ] && [ "${CI:-}" != false ]; then
        export OXILLAMA_REQUIRE_SHARED=1
        [ -d ../shared/golden/tokenizer ] || {
            echo "CI: ../shared/golden (the shared reference set) is missing beside the clone" >&2
            exit 1
        }
    fi
    ctest --test-dir build --output-on-failure -j2 --timeout 900
    # the suite must fail on each known bug (tests/mutation/run.py, README "Tests")
    python3 tests/mutation/run.py
    sanitize
    cross
    ;;
cross)
    cross "${2:-all}"
    ;;
*)
    echo "usage: ./build.sh [demo|test|cross [aarch64|riscv64|wasm32]]" >&2
    exit 2
    ;;
esac
