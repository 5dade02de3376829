# The web chat page at / (server/webui/) in Debian's headless chromium through puppeteer-core: the
# streamed greedy reply equals llama.cpp's, Markdown and escaping, the conversation list after a
# reload, the stop button, the page's headers, --no-webui (tests/server/webui.sh). The screenshot it
# takes lands in the build folder (docs/webui.png is one, shown in the README). Without chromium the
# test fails naming the package.
add_test(NAME server-webui COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/webui.sh ${OXL_BIN} ${M}/stories260K.gguf ${G}/run
                                   ${CMAKE_BINARY_DIR}/webui.png)
set_tests_properties(server-webui PROPERTIES TIMEOUT 300)
