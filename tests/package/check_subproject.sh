#!/bin/sh
# ctest package-subdirectory: a fresh parent CMake project takes the source tree in with
# add_subdirectory (MODE subdirectory) or FetchContent (MODE fetchcontent), builds docs/example.c
# against oxillama::oxillama (liboxillama.so), runs it on the bundled model and compares its text
# with llama.cpp's greedy continuation (golden/run/once.*). The parent must not get oxillama's tests
# or tools, and the generated kernels must go to oxillama's own binary directory.
# usage: check_subproject.sh MODE SOURCE_DIR WORK_DIR CC CMAKE GENERATOR [LAUNCHER]
set -u
mode=$1 src=$2 work=$3 cc=$4 cmake=$5 generator=$6 launcher=${7:-}
. "$(dirname "$0")/compare_run.sh"
rm -rf "$work"
mkdir -p "$work/parent" || exit 1
case $mode in
subdirectory) take="add_subdirectory(\"$src\" oxillama)" bindir=oxillama ;;
fetchcontent)
    take="include(FetchContent)
FetchContent_Declare(oxillama SOURCE_DIR \"$src\")
FetchContent_MakeAvailable(oxillama)"
    bindir=_deps/oxillama-build
    ;;
*)
    echo "usage: check_subproject.sh subdirectory|fetchcontent ..."
    exit 2
    ;;
esac
cat >"$work/parent/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.25)
project(oxillama_parent LANGUAGES C)
$take
foreach(t oxl-tests oxl-kernel-tests oxl-bench-kernels oxl-make-synthetic)
  if(TARGET \${t})
    message(FATAL_ERROR "the parent project got oxillama's target \${t}")
  endif()
endforeach()
add_executable(example "$src/docs/example.c")
target_link_libraries(example PRIVATE oxillama::oxillama)
EOT
args="-DCMAKE_C_COMPILER=$cc"
[ -n "$launcher" ] && args="$args -DCMAKE_C_COMPILER_LAUNCHER=$launcher"
# shellcheck disable=SC2086
if ! "$cmake" -S "$work/parent" -B "$work/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release $args \
    >"$work/cmake.log" 2>&1 || ! "$cmake" --build "$work/build" --target example >>"$work/cmake.log" 2>&1; then
    tail -40 "$work/cmake.log"
    echo "FAIL  $mode: the parent project does not configure or build"
    exit 1
fi
status=0
if [ ! -f "$work/build/$bindir/generated/oxl_kernels.cmake" ] || [ -e "$work/build/generated" ]; then
    echo "FAIL  $mode: the generated kernels are not in oxillama's binary directory ($bindir/generated)"
    status=1
fi
if [ -n "$(cd "$work/build" && ctest -N 2>/dev/null | grep 'Test *#')" ]; then
    echo "FAIL  $mode: the parent project has oxillama's tests"
    status=1
fi
readelf -d "$work/build/example" | grep -q 'NEEDED.*liboxillama\.so' || {
    echo "FAIL  $mode: example does not load liboxillama.so"
    status=1
}
compare_run "example-$mode" "$src" "$work/build/example" "$src/models/stories260K.gguf" || status=1
[ $status -eq 0 ] && echo "package-$mode: all checks passed"
exit $status
