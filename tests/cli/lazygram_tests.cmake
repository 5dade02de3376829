# Tool-call grammars of oxillama serve (tests/server/check_tool_grammar.py): a lazy grammar for
# tool_choice auto (free text before the trigger, a complete call after it), the grammar from the
# first token for required and a named tool (8 and 4 seeds at temperature 1 all give calls), a 400
# for a format without a tool grammar; on the Mistral form of make_toolcall_model.py's bigram model.
add_test(NAME server-tool-grammar COMMAND ${OXL_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/server/check_tool_grammar.py
                                          ${OXL_BIN} ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/server-tool-grammar)
