# CMake 3.25 has no WASI platform: what cmake/wasm32-wasi.cmake needs of one. Executables are
# WebAssembly modules (.wasm) and there are no shared libraries.
set(CMAKE_EXECUTABLE_SUFFIX ".wasm")
set_property(GLOBAL PROPERTY TARGET_SUPPORTS_SHARED_LIBS FALSE)
