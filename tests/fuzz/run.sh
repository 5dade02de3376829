#!/bin/sh
# Builds the libFuzzer harnesses (tests/fuzz/fuzz_*.c) with clang, ASan and UBSan in build-fuzz/ and
# runs each for a bounded time, starting from the committed seeds in tests/fuzz/corpus/<harness>/.
#   tests/fuzz/run.sh [seconds per harness, default 60] [harness ...]   (harnesses: gguf split model vocab jinja request json_schema grammar state chat_parse lora mmproj clip image)
# New inputs go to build-fuzz/corpus/<harness>/; a crash, leak, trap, timeout or allocation above
# -malloc_limit_mb stops the run with a non-zero status and leaves the input in build-fuzz/artifacts/.
# Replay one: build-fuzz/tests/fuzz/fuzz_<harness> <file>.
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-60}
[ $# -gt 0 ] && shift
harnesses=${*:-gguf split model vocab jinja request json_schema grammar state chat_parse lora mmproj clip image}

cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOXL_FUZZ=ON \
    -DOXL_BUILD_TESTS=OFF >/dev/null
targets=""
for h in $harnesses; do targets="$targets fuzz_$h"; done
ninja -C build-fuzz -j2 $targets

mkdir -p build-fuzz/artifacts
# one harness: its log in build-fuzz/fuzz_<harness>.log, its exit status in .../fuzz_<harness>.status
fuzz_one() {
    h=$1
    mkdir -p "build-fuzz/corpus/$h"
    # inputs are small (seeds <= 32 KB), so no legitimate allocation comes near 256 MB; -timeout
    # catches inputs that make the loader or decoder loop far longer than their size warrants
    rc=0
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "build-fuzz/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=256 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$h-" \
        "build-fuzz/corpus/$h" "tests/fuzz/corpus/$h" >"build-fuzz/fuzz_$h.log" 2>&1 || rc=$?
    echo "$rc" >"build-fuzz/fuzz_$h.status"
}

# OXL_FUZZ_JOBS harnesses at a time (default 2: each libFuzzer process uses one core), each for the
# full time; the first with a finding stops the run after its batch
jobs=${OXL_FUZZ_JOBS:-2}
set -- $harnesses
while [ $# -gt 0 ]; do
    batch=""
    i=0
    while [ $# -gt 0 ] && [ "$i" -lt "$jobs" ]; do
        echo "fuzz_$1: ${secs}s"
        fuzz_one "$1" &
        batch="$batch $1"
        shift
        i=$((i + 1))
    done
    wait
    for h in $batch; do
        if [ "$(cat "build-fuzz/fuzz_$h.status" 2>/dev/null)" != 0 ]; then
            tail -n 60 "build-fuzz/fuzz_$h.log" >&2
            echo "fuzz_$h: finding saved in build-fuzz/artifacts/ (replay: build-fuzz/tests/fuzz/fuzz_$h <file>)" >&2
            exit 1
        fi
        grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|Done [0-9]+ runs)' "build-fuzz/fuzz_$h.log" || true
    done
done
