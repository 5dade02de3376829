# llama-server's own API (/completion, /props, /apply-template, /models) against llama-server's
# replies in golden/server/ (tests/server/native.sh; the script checks every reply and its exit status).
add_test(NAME server-native COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/native.sh ${OXL_BIN} ${M}/stories260K.gguf ${G}/server)
set_tests_properties(server-native PROPERTIES TIMEOUT 300)
