# Streamed tool calls as llama-server streams them (arguments in pieces that add up to the
# non-streamed ones), through the OpenAI Node client (tests/server/toolstream.sh; skipped without
# the client: npm ci in tests/server).
add_test(NAME server-toolstream COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/toolstream.sh ${OXL_BIN})
set_tests_properties(server-toolstream PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
