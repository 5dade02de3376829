# Cross build for AArch64 Linux (README "Other architectures"): Debian's gcc-aarch64-linux-gnu +
# libc6-dev-arm64-cross, linked statically so qemu-aarch64-static runs the binaries without a
# target sysroot. The subset build (OXL_SUBSET): no PCRE2, utf8proc, cJSON, libmicrohttpd, Criterion.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
set(OXL_SUBSET ON CACHE BOOL "" FORCE)
set(OXL_BUILD_TESTS OFF CACHE BOOL "" FORCE)
