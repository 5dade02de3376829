# Cross build for RISC-V 64 Linux with the V extension (README "Other architectures"): clang-16
# (GCC 12 has no RVV intrinsics) with the C library of Debian's gcc-riscv64-linux-gnu +
# libc6-dev-riscv64-cross, linked statically for qemu-riscv64-static. The base is rv64gc; only the
# rvv kernel units are compiled with the V extension (gen/spec.py), and run when AT_HWCAP has 'V'.
# The subset build (OXL_SUBSET): no PCRE2, utf8proc, cJSON, libmicrohttpd, Criterion.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER clang-16)
set(CMAKE_C_COMPILER_TARGET riscv64-linux-gnu)
# -ffp-contract=off: no fused multiply-adds the source does not ask for (clang contracts a * b + c by
# default; GCC in ISO C mode, as the x86 and aarch64 builds compile, does not), so the scalar
# reference quantizers round as on x86
set(CMAKE_C_FLAGS_INIT "-march=rv64gc -ffp-contract=off")
set(CMAKE_FIND_ROOT_PATH /usr/riscv64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-riscv64-static -cpu rv64,v=true,vlen=256)
set(OXL_SUBSET ON CACHE BOOL "" FORCE)
set(OXL_BUILD_TESTS OFF CACHE BOOL "" FORCE)
