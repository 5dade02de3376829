#!/bin/sh
# ctest js-module (tests/jsmod_tests.cmake): the JavaScript package (js/, README "Use it from
# JavaScript"). Builds the wasm32 target oxillama-js in WORK/build (cmake/wasm32-wasi.cmake), runs
# js/test/*.test.mjs under node --test on it, then packs js/ with npm pack (on a copy, so that the
# source tree gets no oxillama.wasm), installs the tarball into an empty project and runs
# tests/jsmod/installed.mjs there. Skipped (status 77) when the wasm32 toolchain or Node is absent.
# usage: check_js.sh SOURCE_DIR WORK_DIR [C_COMPILER_LAUNCHER]
set -u
src=$1 work=$2 launcher=${3:-}

missing=""
for tool in clang-16 wasm-ld-16 node npm; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -f /usr/lib/wasm32-wasi/libc.a ] || missing="$missing wasi-libc"
ls /usr/lib/llvm-16/lib/clang/16/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 ||
    missing="$missing libclang-rt-16-dev-wasm32"
if [ -n "$missing" ]; then
    echo "js-module: SKIPPED: the wasm32 toolchain is not complete here (missing:$missing);" \
        "./build.sh cross wasm32 installs it"
    exit 77
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 18 ]; then
    echo "js-module: SKIPPED: Node $node_major is older than 18 (node:test, WebAssembly SIMD)"
    exit 77
fi

set -e
mkdir -p "$work"
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOXL_WERROR=ON \
    -DCMAKE_TOOLCHAIN_FILE="$src/cmake/wasm32-wasi.cmake" ${launcher:+-DCMAKE_C_COMPILER_LAUNCHER=$launcher} >/dev/null
ninja -C "$work/build" -j2 oxillama-js >/dev/null
wasm=$work/build/oxillama-js.wasm

echo "== node --test js/test/*.test.mjs"
OXILLAMA_WASM=$wasm node --test "$src"/js/test/*.test.mjs

echo "== npm pack, install, import"
rm -rf "$work/pkg" "$work/app" "$work/npm-cache" "$work"/oxillama-*.tgz
mkdir -p "$work/pkg" "$work/app"
cp "$src/js/package.json" "$src/js/oxillama.mjs" "$src/js/wasi.mjs" "$work/pkg/"
cp -r "$src/js/scripts" "$work/pkg/"
export npm_config_cache="$work/npm-cache"
(cd "$work/pkg" && OXILLAMA_WASM=$wasm npm pack --silent --pack-destination "$work" >/dev/null)
tarball=$(ls "$work"/oxillama-*.tgz)
# the tarball's files: the two modules, the package file and the wasm module, nothing else
listing=$(tar -tzf "$tarball" | sort | tr '\n' ' ')
[ "$listing" = "package/oxillama.mjs package/oxillama.wasm package/package.json package/wasi.mjs " ] || {
    echo "js-module: FAILED: the tarball holds: $listing"
    exit 1
}
cmp "$wasm" "$work/pkg/oxillama.wasm"
(cd "$work/app" && echo '{"name":"app","private":true,"type":"module"}' >package.json &&
    npm install --offline --no-audit --no-fund --silent "$tarball")
cp "$src/tests/jsmod/installed.mjs" "$work/app/"
(cd "$work/app" && node installed.mjs "$src/models/stories260K.gguf" "$src/golden/run/once.prompt" \
    "$src/golden/run/once.expected")
echo "js-module: OK"
