# Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) with Anthropic's official
# Node SDK: llama.cpp's greedy text through a chat template, prompt token counts, stop sequences,
# tool use (tests/server/anthropic.sh; the script checks every reply and its exit status).
add_test(NAME server-anthropic COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/anthropic.sh ${OXL_BIN} ${M}/stories260K.gguf ${G}/run)
set_tests_properties(server-anthropic PROPERTIES TIMEOUT 300)
