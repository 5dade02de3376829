# --reasoning-budget N > 0 and llama-server's reasoning_budget_* fields (llama.cpp's
# common/reasoning-budget.cpp sampler): on stories260K with DeepSeek R1's template, greedy output has
# the free run's first N token ids, then exactly the tokenizer's ids of the message and the end tag;
# the chat reply splits into reasoning_content and content there (tests/cli/check_reasoning_budget_n.py).
add_test(NAME reasoning-budget-n-serve COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_reasoning_budget_n.py
                                               ${OXL_BIN} ${M}/stories260K.gguf ${G} serve)
add_test(NAME reasoning-budget-n-cli COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_reasoning_budget_n.py
                                             ${OXL_BIN} ${M}/stories260K.gguf ${G} cli)
oxl_output_test(reasoning-budget-message-long refusal "error: --reasoning-budget-message: at most 1023 bytes"
  sh -c "exec ${OXL_BIN} run -m ${M}/stories260K.gguf -cnv --reasoning-budget 4 --reasoning-budget-message $(printf '%01024d' 0)")
