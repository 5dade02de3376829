# The JavaScript package's WebAssembly module (js/, README "Use it from JavaScript"): in the wasm32
# build (cmake/wasm32-wasi.cmake) the library's objects linked as a WASI reactor,
# oxillama-js.wasm, exporting the functions of include/oxillama.h plus malloc and free. No _start:
# js/oxillama.mjs calls _initialize, then the oxl_* functions. Single-threaded, as the whole wasm32
# build (Debian's wasi-libc has no wasm32-wasi-threads sysroot): oxl_ctx_params.n_threads 1.
# The package script (js/package.json "prepack") copies it to js/oxillama.wasm.
if(NOT CMAKE_SYSTEM_NAME STREQUAL "WASI")
  return()
endif()
# the exported names: every OXL_API function of the public header
file(READ ${PROJECT_SOURCE_DIR}/include/oxillama.h oxl_js_header)
string(REGEX MATCHALL "OXL_API[^;(]*[ *](oxl_[a-z0-9_]+)\\(" oxl_js_decls "${oxl_js_header}")
set(oxl_js_exports malloc free)
foreach(decl IN LISTS oxl_js_decls)
  string(REGEX REPLACE ".*[ *](oxl_[a-z0-9_]+)\\($" "\\1" name "${decl}")
  # src/chat (Jinja, JSON) is not in the subset (src/text/subset.c); the built-in chat formats
  # (oxl_chat_builtin_*, src/text/chat_builtin.c) are, and js/oxillama.mjs renders chats with them
  if(OXL_SUBSET AND name MATCHES "^oxl_(chat_|json_schema_to_grammar$)" AND NOT name MATCHES "^oxl_chat_builtin_")
    continue()
  endif()
  list(APPEND oxl_js_exports ${name})
endforeach()
list(LENGTH oxl_js_exports oxl_js_n)
if(oxl_js_n LESS 40)
  message(FATAL_ERROR "cmake/wasm32-js.cmake: only ${oxl_js_n} exports found in include/oxillama.h")
endif()
add_executable(oxillama-js ${OXL_LAYER_OBJECTS})
set_target_properties(oxillama-js PROPERTIES LINKER_LANGUAGE C)
target_link_libraries(oxillama-js PRIVATE m)
target_link_options(oxillama-js PRIVATE -mexec-model=reactor -Wl,--gc-sections)
foreach(name IN LISTS oxl_js_exports)
  target_link_options(oxillama-js PRIVATE "-Wl,--export=${name}")
endforeach()
