# Context shift (llama.cpp's --context-shift / --keep, tools/completion/completion.cpp and
# tools/server/server-context.cpp) in oxillama run, and the refusals around it.
add_test(NAME ctxshift-run COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_ctx_shift_run.sh ${OXL_BIN}
                                  ${M}/stories260K.gguf ${G}/run/once.prompt ${G}/run/once.expected)
# --keep N keeps N prompt tokens after BOS: n_keep = 3, n_discard = (31 - 3) / 2 = 14
oxl_output_test(ctxshift-run-keep ok "n_past = 31, n_left = 28, n_ctx = 32, n_keep = 3, n_discard = 14\n"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -p "Once upon a time" -c 32 -n 40 --temp 0 -t 2 --context-shift --keep 2 -v)
# --keep -1, or more than the prompt: the whole prompt (5 tokens with BOS): n_discard = (31 - 5) / 2 = 13
oxl_output_test(ctxshift-run-keep-all ok "n_past = 31, n_left = 26, n_ctx = 32, n_keep = 5, n_discard = 13\n"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -p "Once upon a time" -c 32 -n 40 --temp 0 -t 2 --context-shift --keep -1 -v)
oxl_output_test(ctxshift-run-keep-long ok "n_past = 31, n_left = 26, n_ctx = 32, n_keep = 5, n_discard = 13\n"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -p "Once upon a time" -c 32 -n 40 --temp 0 -t 2 --context-shift --keep 100 -v)
# the last flag wins, as llama.cpp's paired flags
oxl_output_test(ctxshift-run-no-shift ok "context full and context shift is disabled => stopping"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -p "Once upon a time" -c 32 -n 40 --temp 0 -t 2 --context-shift --no-context-shift)
oxl_output_test(ctxshift-run-keep-bad refusal "error: --keep -2: a count of tokens, or -1 for the whole prompt"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -p "Once upon a time" --keep -2)
# models whose cache cannot shift are refused before generating (llama_memory_can_shift)
oxl_output_test(ctxshift-run-recurrent refusal "error: --context-shift: position shift: architecture mamba keeps recurrent state"
  ${OXL_BIN} run -m ${G}/arch/mamba.gguf -p "Once upon a time" -c 32 -n 40 --context-shift)
oxl_output_test(ctxshift-run-mrope refusal "error: --context-shift: position shift: M-RoPE \\(architecture qwen2vl\\) cannot be shifted"
  ${OXL_BIN} run -m ${G}/arch/qwen2vl.gguf -p "Once upon a time" -c 32 -n 40 --context-shift)
# serve: finish "length" at n_ctx - 1 without shift, generation past the slot's context with
# --context-shift, the warning for a model that cannot shift; the request log (text, json, none)
add_test(NAME ctxshift-serve COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_ctx_shift_serve.py ${OXL_BIN}
                                    ${M}/stories260K.gguf ${G}/arch/mamba.gguf ${G}/run/once.prompt
                                    ${G}/run/once.expected)
set_tests_properties(ctxshift-serve PROPERTIES TIMEOUT 300)
oxl_output_test(ctxshift-run-cnv refusal "error: --context-shift is not implemented with -cnv"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -cnv --context-shift)
oxl_output_test(ctxshift-run-spec refusal "error: --context-shift is not implemented with speculative decoding"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -p "Once upon a time" --spec-type ngram-simple --context-shift)
# -lv/--log-verbosity N (llama.cpp's thresholds): under 3 nothing but the text (6 tokens, the last
# one a partial word), 4 and up as -v
oxl_output_test(log-verbosity-2 ok "^Once upon a time, there was a little g\n?$"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -p "Once upon a time" -n 6 --temp 0 -t 2 -lv 2)
oxl_output_test(log-verbosity-4 ok "oxillama: isa [a-z0-9]+; threads 2;"
  ${OXL_BIN} run -m ${M}/stories260K.gguf -p "Once upon a time" -n 6 --temp 0 -t 2 --log-verbosity 4)
oxl_output_test(log-format-bad refusal "error: --log-format 'xml': text or json"
  ${OXL_BIN} serve -m ${M}/stories260K.gguf --log-format xml)
