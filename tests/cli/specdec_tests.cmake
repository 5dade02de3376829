# Speculative decoding in oxillama run (-md, --spec-type ngram-simple): llama.cpp's greedy text
# golden/run/once.expected with drafts; greedy and seeded sampled text equal to plain decoding on
# stories260K (drafts from its Q8_0 / Q4_0 copies and from n-grams) and on every golden/arch model
# that can rewind (itself as draft); recurrent ones and incompatible drafts refused with their named
# errors. Every run's exit status is checked (tests/cli/check_spec.py).
add_test(NAME spec-decode COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_spec.py ${OXL_BIN} ${PROJECT_SOURCE_DIR}
                                  ${CMAKE_CURRENT_BINARY_DIR}/spec-decode)
