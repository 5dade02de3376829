# WebAssembly build (README "Other architectures"): clang-16 --target=wasm32-wasi with SIMD128
# (the wasmsimd kernels; a build-time choice: the module needs an engine with SIMD128, as Node has),
# Debian's wasi-libc and libclang-rt-16-dev-wasm32. Single-threaded (cmake/wasi/pthread.h). The
# binaries run under Node's WASI (tools/wasi-run.mjs). The subset build (OXL_SUBSET): no PCRE2,
# utf8proc, cJSON, libmicrohttpd, Criterion.
set(CMAKE_SYSTEM_NAME WASI)
list(APPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_LIST_DIR}) # Platform/WASI.cmake
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(CMAKE_C_COMPILER clang-16)
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(CMAKE_SYSROOT /usr)
set(CMAKE_C_FLAGS_INIT "-msimd128 -D_WASI_EMULATED_PROCESS_CLOCKS -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_MMAN -isystem ${CMAKE_CURRENT_LIST_DIR}/wasi -include ${CMAKE_CURRENT_LIST_DIR}/wasi/oxl_wasi_sysconf.h")
# 8 MiB of stack (the kernel tests keep rows on the stack); memory grows on demand up to 4 GiB
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-z,stack-size=8388608 -Wl,--initial-memory=67108864 -Wl,--max-memory=4294967296 -lwasi-emulated-process-clocks -lwasi-emulated-signal -lwasi-emulated-mman")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR node --no-warnings ${CMAKE_CURRENT_LIST_DIR}/../tools/wasi-run.mjs)
# threads: the single-threaded stand-in is in libc's place
set(CMAKE_HAVE_LIBC_PTHREAD 1 CACHE INTERNAL "")
set(CMAKE_HAVE_PTHREAD_H 1 CACHE INTERNAL "")
set(THREADS_PREFER_PTHREAD_FLAG OFF)
set(OXL_SUBSET ON CACHE BOOL "" FORCE)
set(OXL_BUILD_TESTS OFF CACHE BOOL "" FORCE)
