# The JavaScript package (js/, README "Use it from JavaScript"): tests/jsmod/check_js.sh builds the
# wasm32 module oxillama-js.wasm in its own folder, runs js/test/*.test.mjs under node --test
# (llama.cpp's greedy, sampling and tokenizer goldens for stories260K, llama.cpp's built-in chat
# format renderings, the library's load errors; a greedy chat against this build's command line,
# OXILLAMA_CLI) and installs the npm-packed package. Skipped, saying why, without clang-16, lld-16, wasi-libc,
# libclang-rt-16-dev-wasm32 or Node 18+. Not in the sanitizer build (the module is not instrumented).
if(OXL_SANITIZE)
  return()
endif()
add_test(NAME js-module COMMAND sh ${PROJECT_SOURCE_DIR}/tests/jsmod/check_js.sh ${PROJECT_SOURCE_DIR}
  ${PROJECT_BINARY_DIR}/js-module "${CMAKE_C_COMPILER_LAUNCHER}")
set_tests_properties(js-module PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1800 LABELS js)
if(TARGET oxillama-cli)
  set_tests_properties(js-module PROPERTIES ENVIRONMENT OXILLAMA_CLI=$<TARGET_FILE:oxillama-cli>)
endif()
