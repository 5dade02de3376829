# --reasoning-budget (llama.cpp's common/arg.cpp: -1 unrestricted, 0 no thinking): run -cnv and serve
# render the template with enable_thinking false and close a thought the template opens regardless
# (tests/cli/check_reasoning_budget.py: golden/chat-templates' Qwen3 and DeepSeek R1 renderings plus
# what the budget adds; the server's chat_template_kwargs, its reply structure and its 400s).
add_test(NAME reasoning-budget-cli COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_reasoning_budget.py
                                           ${OXL_BIN} ${M}/stories260K.gguf ${G} cli)
add_test(NAME reasoning-budget-serve COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_reasoning_budget.py
                                             ${OXL_BIN} ${M}/stories260K.gguf ${G} serve)
# Values below -1 are refused naming the flag (N > 0, a budget of thinking tokens: rbudget2_tests.cmake).
oxl_output_test(reasoning-budget-below refusal "error: --reasoning-budget -2: -1 \\(unrestricted\\), 0 \\(no thinking\\) or a number of thinking tokens"
  ${OXL_BIN} serve -m ${M}/stories260K.gguf --reasoning-budget -2)

# bench/sampler_cost.sh: one table row per sampler of the chain (CPU times not checked).
oxl_output_test(bench-sampler-cost ok "\\| dist \\| [^\n]*\n\\| penalties \\| [^\n]*\n\\| DRY \\| [^\n]*\n\\| top-k \\| [^\n]*\n\\| typical \\| [^\n]*\n\\| top-p \\| [^\n]*\n\\| min-p \\| [^\n]*\n\\| XTC \\| [^\n]*\n\\| top-n-sigma \\| [^\n]*\n\\| temp \\| [^\n]*\n\\| dynatemp \\| [^\n]*\n\\| mirostat v1 \\| [^\n]*\n\\| mirostat v2 \\| [^\n]*\n\\| logit bias \\| [^\n]*\n\\| grammar json \\| [^\n]*\n\\| top-a \\| [^\n]*\n\\| eta \\| [^\n]*\n\\| default chain \\| [^\n]*\n$"
  env OXL_BUILD=${CMAKE_BINARY_DIR} sh ${PROJECT_SOURCE_DIR}/bench/sampler_cost.sh 2 1)
