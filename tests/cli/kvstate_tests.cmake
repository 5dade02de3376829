# Sequence state files (docs/state-format.md): oxillama run --prompt-cache / --prompt-cache-ro. The
# script exits 0 only when every check passed (ctest checks that status).
add_test(NAME run-prompt-cache
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_prompt_cache.sh ${OXL_BIN} ${M}/stories260K.gguf ${G}/arch/mamba.gguf)
set_tests_properties(run-prompt-cache PROPERTIES FAIL_REGULAR_EXPRESSION "FAILED")
# POST /slots/{id}?action=save|restore|erase with --slot-save-path: the script exits 0 only when every
# check passed.
add_test(NAME server-slot-state
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/../server/slot_state.sh ${OXL_BIN} ${M}/stories260K.gguf)
set_tests_properties(server-slot-state PROPERTIES TIMEOUT 300 FAIL_REGULAR_EXPRESSION "FAIL ")
