#!/bin/sh
# oxillama's two set-up commands (see README):
#   ./build.sh        install missing Debian packages, build, and run the demo on the bundled model
#   ./build.sh test   build and run the whole test suite (what CI runs)
set -eu
cd "$(dirname "$0")"

PACKAGES="cmake ninja-build gcc python3 python3-jinja2 libcjson-dev libcriterion-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev clang libclang-rt-dev"

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
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C build -j2
}

# The sanitizer stage of `test`: the whole suite again in build-asan under AddressSanitizer +
# UndefinedBehaviorSanitizer, LeakSanitizer on (any report fails its test), then each libFuzzer
# harness for OXL_FUZZ_SECONDS seconds (default 20; tests/fuzz/run.sh, README "Hostile input").
sanitize() {
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOXL_SANITIZE=ON >/dev/null
    ninja -C build-asan -j2
    ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j2 --timeout 900
    tests/fuzz/run.sh "${OXL_FUZZ_SECONDS:-20}"
}

install_missing
build
case "${1:-demo}" in
demo)
    ./build/oxillama run -p "Once upon a time" -n 64 --temp 0
    ;;
test)
    ctest --test-dir build --output-on-failure -j2 --timeout 900
    sanitize
    ;;
*)
    echo "usage: ./build.sh [demo|test]" >&2
    exit 2
    ;;
esac
