# gpt-oss with MXFP4 experts (golden/arch/gpt-oss-MXFP4_MOE.gguf, llama-quantize's MXFP4_MOE file):
# `oxillama run` prints llama.cpp's greedy text (golden/run-cross) under every ISA cap; the exit
# status is checked by the script.
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME run-gpt-oss-mxfp4-${isa}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_run_text.sh ${OXL_BIN} ${G}/arch/gpt-oss-MXFP4_MOE.gguf
                   ${G}/run/once.prompt ${G}/run-cross/gpt-oss-MXFP4_MOE.expected)
  set_tests_properties(run-gpt-oss-mxfp4-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()
