# The logits checker's per-file bounds (golden/*/tolerances.tsv): a bound under the measured value
# fails, a missing or malformed line refuses the file (tests/cli/check_tolerances.sh checks exit status
# and output).
add_test(NAME golden-tolerances COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_tolerances.sh ${OXL_BIN} ${G} ${M}
         ${CMAKE_CURRENT_BINARY_DIR}/golden-tolerances)
