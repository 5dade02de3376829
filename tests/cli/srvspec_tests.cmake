# oxillama serve with LoRA adapters (GET / POST /lora-adapters, the per-request "lora" field) against
# llama.cpp's greedy texts and logits with the same adapters (golden/lora/), and with speculative
# decoding (-md, --spec-type ngram-simple, speculative.* fields): llama.cpp's greedy text and the text
# of plain decoding, the draft counts in timings and /metrics; exit and HTTP statuses checked.
add_test(NAME serve-lora COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_serve_lora.py ${OXL_BIN}
                                 ${PROJECT_SOURCE_DIR})
add_test(NAME serve-spec COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_serve_spec.py ${OXL_BIN}
                                 ${PROJECT_SOURCE_DIR})
