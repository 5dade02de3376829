# WebSocket streaming (GET /v1/ws): the same events as the SSE routes, llama.cpp's greedy text,
# several requests on one socket, errors that keep the socket, a close that cancels the
# generation (tests/server/ws.sh with npm's ws client; skipped without it: npm ci in tests/server).
add_test(NAME server-ws COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/ws.sh ${OXL_BIN} ${M}/stories260K.gguf ${G}/run)
set_tests_properties(server-ws PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
