#!/bin/sh
# ctest package-install: `cmake --install` of the build into a fresh prefix, then docs/example.c
# built against that installed package only, three ways, each run on the bundled stories260K model
# and compared with llama.cpp's greedy text (golden/run/once.*):
#  - cc $(pkg-config --cflags --libs oxillama): liboxillama.so (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig);
#  - the same with `pkg-config --static` and liboxillama.a (Libs.private must name every dependency);
#  - a CMake project with find_package(oxillama) (CMAKE_PREFIX_PATH=PREFIX): oxillama::oxillama and
#    oxillama::oxillama_static;
# and the installed command line. The versions of oxillama.pc, oxillamaConfigVersion.cmake and
# oxl_version() must all be the project's.
# usage: check_install.sh BUILD_DIR SOURCE_DIR WORK_DIR VERSION LIBDIR CC CMAKE GENERATOR
set -u
build=$1 src=$2 work=$3 version=$4 libdir=$5 cc=$6 cmake=$7 generator=$8
. "$(dirname "$0")/compare_run.sh"
rm -rf "$work"
mkdir -p "$work" || exit 1
prefix=$work/prefix
status=0
fail() {
    echo "FAIL  $*"
    status=1
}

if ! "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
    cat "$work/install.log"
    echo "FAIL  cmake --install"
    exit 1
fi
for f in bin/oxillama include/oxillama.h "$libdir/liboxillama.a" "$libdir/liboxillama.so" \
    "$libdir/pkgconfig/oxillama.pc" "$libdir/cmake/oxillama/oxillamaConfig.cmake" \
    "$libdir/cmake/oxillama/oxillamaConfigVersion.cmake" "$libdir/cmake/oxillama/oxillamaTargets.cmake"; do
    [ -e "$prefix/$f" ] || fail "installed: $f is missing"
done
[ $status -eq 0 ] && echo "PASS  installed: $(cd "$prefix" && find . -type f -o -type l | wc -l) files, all expected ones present"

export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
pcver=$(pkg-config --modversion oxillama)
[ "$pcver" = "$version" ] || fail "pkg-config --modversion oxillama: '$pcver', want '$version'"

# shared, with pkg-config
if $cc "$src/docs/example.c" $(pkg-config --cflags --libs oxillama) -o "$work/example-pc" 2>"$work/cc.log"; then
    readelf -d "$work/example-pc" | grep -q 'NEEDED.*liboxillama\.so' || fail "example-pc does not load liboxillama.so"
    LD_LIBRARY_PATH="$prefix/$libdir" compare_run example-pc "$src" "$work/example-pc" "$src/models/stories260K.gguf" ||
        status=1
    grep -qx "oxillama $version" "$work/example-pc.stderr" || fail "example-pc: oxl_version() is not '$version'"
else
    cat "$work/cc.log"
    fail "cc example.c \$(pkg-config --cflags --libs oxillama)"
fi

# static, with pkg-config --static: liboxillama.a in place of -loxillama
libs=$(pkg-config --static --libs oxillama | sed 's/-loxillama\b/-l:liboxillama.a/')
if $cc "$src/docs/example.c" $(pkg-config --cflags oxillama) $libs -o "$work/example-pc-static" 2>"$work/cc-static.log"; then
    if readelf -d "$work/example-pc-static" | grep -q 'NEEDED.*liboxillama'; then
        fail "example-pc-static loads liboxillama.so"
    fi
    compare_run example-pc-static "$src" "$work/example-pc-static" "$src/models/stories260K.gguf" || status=1
else
    cat "$work/cc-static.log"
    fail "cc example.c \$(pkg-config --static --libs oxillama) with liboxillama.a"
fi

# CMake: find_package(oxillama)
mkdir -p "$work/cmake-project"
cat >"$work/cmake-project/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.25)
project(oxillama_consumer LANGUAGES C)
find_package(oxillama $version EXACT REQUIRED CONFIG)
if(NOT oxillama_VERSION STREQUAL "$version")
  message(FATAL_ERROR "find_package(oxillama) gave version \${oxillama_VERSION}, want $version")
endif()
add_executable(example "$src/docs/example.c")
target_link_libraries(example PRIVATE oxillama::oxillama)
add_executable(example-static "$src/docs/example.c")
target_link_libraries(example-static PRIVATE oxillama::oxillama_static)
EOT
if "$cmake" -S "$work/cmake-project" -B "$work/cmake-build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 &&
    "$cmake" --build "$work/cmake-build" >>"$work/cmake.log" 2>&1; then
    readelf -d "$work/cmake-build/example" | grep -q 'NEEDED.*liboxillama\.so' ||
        fail "find_package example does not load liboxillama.so"
    compare_run example-cmake "$src" "$work/cmake-build/example" "$src/models/stories260K.gguf" || status=1
    compare_run example-cmake-static "$src" "$work/cmake-build/example-static" "$src/models/stories260K.gguf" ||
        status=1
else
    cat "$work/cmake.log"
    fail "a CMake project with find_package(oxillama $version EXACT)"
fi

# the installed command line
compare_run installed-cli "$src" "$prefix/bin/oxillama" run -m "$src/models/stories260K.gguf" -n 64 --temp 0 -t 2 -p ||
    status=1

[ $status -eq 0 ] && echo "package-install: all checks passed (version $version)"
exit $status
