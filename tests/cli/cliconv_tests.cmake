# Command-line conventions (tests/cli/cliconv.sh; each case checks exit statuses and output):
#   cliconv-version         --version and `version`: project() VERSION, the git commit, compiler, the
#                           ISA (OXILLAMA_ISA=scalar gives "isa: scalar (OXILLAMA_ISA=scalar)")
#   cliconv-version-script  src/cli/version.cmake writes "unknown" outside git or without git
#   cliconv-help-per-verb   each verb's --help lists its own options only; another verb's is refused
#   cliconv-stray           `run -p Once upon a time` is refused with the quoted prompt; stray words,
#                           unknown options (run, perplexity, serve)
#   cliconv-chat-template   an unknown --chat-template name lists the built-in names; Jinja is accepted
#   cliconv-gpu-flags       llama.cpp's GPU options: one notice each, the same greedy text
#   cliconv-log             --log-disable (empty stderr, same text), -v/--verbose/--log-verbose settings
#   cliconv-serve-options   serve's -ctv/-fa reach the context; --chat-template reaches the prompt
#                           (prompt_tokens 5 = "Once upon a time" with BOS)
#   cliconv-manpage         every verb and every option of every --help is in docs/oxillama.1
#   cliconv-completion      docs/oxillama.bash-completion: complete -p and completions via COMP_WORDS
foreach(case version version-script help-per-verb stray chat-template gpu-flags log serve-options manpage completion)
  add_test(NAME cliconv-${case} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cliconv.sh ${case} ${OXL_BIN} ${PROJECT_SOURCE_DIR}
                                        ${PROJECT_VERSION})
  set_tests_properties(cliconv-${case} PROPERTIES TIMEOUT 120)
endforeach()
