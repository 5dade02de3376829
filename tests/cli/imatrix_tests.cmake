# oxillama imatrix against llama-imatrix (golden/quantize): the GGUF layout's keys, tensors and
# counts, its values (1e-5 relative with an f32 cache and no flash attention; 5e-5 with the
# defaults' f16 cache), the same for deepseek2-lite's experts and MLA products, the final
# perplexity, IQ2_XXS quantization with our file equal to
# llama-quantize's with llama-imatrix's, the legacy .dat layout and its read-back, and the refusals
# of bad input (tests/cli/check_imatrix.py, exit status checked).
add_test(NAME imatrix-llama COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_imatrix.py ${OXL_BIN} ${G}
         ${CMAKE_CURRENT_BINARY_DIR}/imatrix-llama)
oxl_output_test(imatrix-help ok "usage: oxillama imatrix -m MODEL -f TEXT.*--output-format.*--process-output"
                ${OXL_BIN} imatrix --help)
oxl_output_test(imatrix-verb-listed ok "  imatrix +importance matrix" ${OXL_BIN} --help)
