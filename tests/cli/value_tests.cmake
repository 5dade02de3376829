# oxillama run -cnv: the prompt the model is given (--verbose-prompt) for -sys, --chat-template NAME,
# --chat-template JINJA and --chat-template-file FILE equals llama.cpp's rendering of the same
# conversation (golden/chat-templates, golden/chat-builtin); stdin from a file ending in /exit; every
# case checks the exit status (tests/cli/check_chat_cli.py).
find_program(OXL_PYTHON3 python3)
execute_process(COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_chat_cli.py - - - list
                OUTPUT_VARIABLE oxl_chat_cli_cases OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\n" ";" oxl_chat_cli_cases "${oxl_chat_cli_cases}")
foreach(case IN LISTS oxl_chat_cli_cases)
  add_test(NAME chat-cli-${case} COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_chat_cli.py ${OXL_BIN}
           ${M}/stories260K.gguf ${G} ${case})
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/check_chat_cli.py)

# llama.cpp's embeddings of the encoder models (golden/arch/bert, nomic-bert: golden.kind
# embeddings) through `oxillama golden`: the model's pooling, the pooled and the per-token
# embeddings, each within its bound in golden/arch/tolerances.tsv (relative to the reference's
# largest value); exit status 0 and every line.
oxl_output_test(golden-embeddings ok
  "bert\\.logits\\.gguf\nPASS  embeddings pooling[^\n]*\nPASS  embeddings pooled \\(cls\\)[^\n]*\nPASS  embeddings per token[^\n]*\n.*nomic-bert\\.logits\\.gguf\nPASS  embeddings pooling[^\n]*\nPASS  embeddings pooled \\(mean\\)[^\n]*\nPASS  embeddings per token[^\n]*\n# 6 passed, 0 failed, 0 files not checkable"
  ${OXL_BIN} golden ${G}/arch/bert.logits.gguf ${G}/arch/nomic-bert.logits.gguf)

# oxillama quantize (the command) for every FTYPE and FTYPE-imat of golden/quantize/expected.json:
# general.file_type value, tensor order, each tensor's type, shape and sha256 as llama-quantize's.
add_test(NAME quantize-cli-llama COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_quantize_cli.py ${OXL_BIN}
         ${G} ${CMAKE_CURRENT_BINARY_DIR}/quantize-cli-llama)
