# oxillama quantize with llama-quantize's --tensor-type, --leave-output-tensor and --override-kv:
# each output of golden/quantize/expected-flags.json byte for byte (tensors, overridden keys, whole
# file), the progress lines of golden/quantize/expected-flags.stderr, --quiet, and the errors of
# malformed option values and unsupported types and ftypes (exit status and message).
add_test(NAME quantize-flags-llama COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_quantize_flags.py ${OXL_BIN}
         ${G} ${CMAKE_CURRENT_BINARY_DIR}/quantize-flags-llama)
