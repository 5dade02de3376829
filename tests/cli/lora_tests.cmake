# LoRA adapters and control vectors (golden/lora/README.md). Included from cli_tests.cmake, whose
# OXL_BIN, G, OXL_PYTHON3 and OXL_TEST_ISAS it uses.

# llama.cpp's logits with the adapters each golden names (golden.lora, golden.control_vector),
# once per ISA cap; oxillama golden exits 1 on any failed check.
file(GLOB OXL_LORA_GOLDENS ${G}/lora/*.logits.gguf)
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME golden-lora-${isa} COMMAND ${OXL_BIN} golden ${OXL_LORA_GOLDENS})
  set_tests_properties(golden-lora-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()

# oxillama run with the options prints llama-completion's greedy text with the same options.
set(oxl_lora_run ${CMAKE_CURRENT_LIST_DIR}/check_lora_run.sh ${OXL_BIN} ${G}/arch/llama.gguf ${G}/run/once.prompt)
add_test(NAME lora-run COMMAND sh ${oxl_lora_run} ${G}/lora/llama.lora-a.expected --lora ${G}/lora/llama.lora-a.gguf)
add_test(NAME lora-run-scaled COMMAND sh ${oxl_lora_run} ${G}/lora/llama.lora-ab.expected
         --lora-scaled ${G}/lora/llama.lora-a.gguf:0.5,${G}/lora/llama.lora-b.gguf:0.75)
add_test(NAME lora-run-scaled-pairs COMMAND sh ${oxl_lora_run} ${G}/lora/llama.lora-ab.expected
         --lora-scaled ${G}/lora/llama.lora-a.gguf 0.5 --lora-scaled ${G}/lora/llama.lora-b.gguf 0.75)
add_test(NAME lora-run-cvec COMMAND sh ${oxl_lora_run} ${G}/lora/llama.lora-cvec.expected
         --lora ${G}/lora/llama.lora-a.gguf --control-vector-scaled ${G}/lora/llama.cvec.gguf:-1.5
         --control-vector-layer-range 1 1)
# oxillama perplexity --lora against llama-perplexity's KL-divergence base with the adapter.
add_test(NAME lora-perplexity COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_lora_ppl.sh ${OXL_BIN} ${G}/arch/llama.gguf
         ${G}/lora/llama.lora-a.gguf ${G}/lora/llama.lora-a.c128.kld)
# Bad adapter and control-vector files: exit 1 with the key or tensor named.
add_test(NAME lora-bad-files COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_lora_bad_files.py ${OXL_BIN}
         ${G}/arch/llama.gguf ${CMAKE_CURRENT_BINARY_DIR}/lora-bad-files)
# serve: a bad adapter stops the server before it listens, with the tensor named.
oxl_output_test(lora-serve-refuses refusal "LoRA tensor 'blk.7.attn_q.weight' does not exist in the base model"
  ${OXL_BIN} serve -m ${G}/arch/llama.gguf --port 0 --lora ${CMAKE_CURRENT_BINARY_DIR}/lora-bad-files/lora-absent.gguf)
set_tests_properties(lora-serve-refuses PROPERTIES DEPENDS lora-bad-files)
# oxillama export-lora writes llama-export-lora's files byte for byte, under every ISA cap.
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME export-lora-${isa} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_export_lora.sh ${OXL_BIN} ${G}
           ${CMAKE_CURRENT_BINARY_DIR}/export-lora-${isa})
  set_tests_properties(export-lora-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()
# serve --lora: /v1/completions answers llama-completion's greedy text with the adapter.
add_test(NAME lora-serve COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_lora_serve.sh ${OXL_BIN} ${G}/arch/llama.gguf
         ${G}/lora/llama.lora-a.gguf ${G}/run/once.prompt ${G}/lora/llama.lora-a.expected)
# qwen35's own forward pass does not apply control vectors yet (llama.cpp's graph does): refused.
oxl_output_test(cvec-qwen35-refused refusal "control vector: not supported for architecture 'qwen35' yet"
  ${OXL_BIN} run -m ${G}/arch/qwen35.gguf --control-vector ${G}/lora/llama.cvec.gguf -p Once -n 1)
