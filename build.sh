#!/bin/sh
# oxillama's two set-up commands (see README):
#   ./build.sh        install missing Debian packages, build, and run the demo on the bundled model
#   ./build.sh test   build and run the whole test suite (what CI runs)
set -eu
cd "$(dirname "$0")"

PACKAGES="cmake ninja-build gcc python3 python3-jinja2 libcjson-dev libcriterion-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev"

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

install_missing
build
case "${1:-demo}" in
demo)
    ./build/oxillama run -p "Once upon a time" -n 64 --temp 0
    ;;
test)
    ctest --test-dir build --output-on-failure -j2 --timeout 900
    ;;
*)
    echo "usage: ./build.sh [demo|test]" >&2
    exit 2
    ;;
esac
