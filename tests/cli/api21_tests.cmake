# The embedding API (include/oxillama.h): a load cancelled by its progress callback leaks nothing
# (tests/cli/load_cancel.c under valgrind; definite and indirect leaks and memory errors fail, as in
# tests/cli/leak.sh; the exit status decides: the program exits 1 when a load was not cancelled as
# documented). The unit tests of the same API are tests/unit/test_embed_api.c.
add_executable(oxl-load-cancel ${CMAKE_CURRENT_LIST_DIR}/load_cancel.c)
target_link_libraries(oxl-load-cancel PRIVATE oxl_internal)
find_program(OXL_VALGRIND valgrind)
if(OXL_VALGRIND AND NOT OXL_SANITIZE)
  add_test(NAME leak-load-cancel COMMAND ${OXL_VALGRIND} -q --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --error-exitcode=1 $<TARGET_FILE:oxl-load-cancel>
    ${PROJECT_SOURCE_DIR}/models/stories260K-Q4_0.gguf)
  set_tests_properties(leak-load-cancel PROPERTIES TIMEOUT 300 LABELS leak)
elseif(OXL_SANITIZE)
  add_test(NAME leak-load-cancel COMMAND $<TARGET_FILE:oxl-load-cancel> ${PROJECT_SOURCE_DIR}/models/stories260K-Q4_0.gguf)
endif()

# -v/--log-disable set the library's log level: the --mlock warning shows by default, not with
# --log-disable (tests/cli/check_log_level.sh; 77: cannot drop CAP_IPC_LOCK, skipped). Not in the
# sanitizer build: AddressSanitizer replaces mlock with a no-op that succeeds, so no warning comes.
if(TARGET oxillama-cli AND NOT OXL_SANITIZE)
  add_test(NAME log-level-cli COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_log_level.sh $<TARGET_FILE:oxillama-cli>
    ${PROJECT_SOURCE_DIR}/models/stories260K.gguf)
  set_tests_properties(log-level-cli PROPERTIES SKIP_RETURN_CODE 77)
endif()
