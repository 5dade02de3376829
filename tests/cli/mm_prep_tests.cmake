# The multimodal goldens (golden/mm/: LLaVA-1.5, LLaVA-NeXT, Qwen2-VL, Qwen2.5-VL, Gemma 3 through
# llama.cpp's libmtmd, each on image.png and on image2.png): chunk layout, token ids, positions, the
# preprocessed pixels and embeddings of every image chunk, the logits and the greedy tokens against
# llama.cpp's, once per ISA cap like golden-arch-<isa>. Per file the chunk count, six chunk fields, the
# sequence length, the positions per token, tokens / token_chunk / pos, the logits' argmax and the greedy
# tokens (14), and two lines (pixels, embeddings) per image chunk (llava-next 7, the others 1).
# Included from cli_tests.cmake (OXL_BIN, G).
file(GLOB OXL_MM_GOLDENS CONFIGURE_DEPENDS ${G}/mm/*.golden.gguf)
oxl_output_test(golden-mm ok "# 184 passed, 0 failed, 0 files not checkable" ${OXL_BIN} golden ${OXL_MM_GOLDENS})
foreach(isa IN LISTS OXL_TEST_ISAS)
  oxl_output_test(golden-mm-${isa} ok "# 184 passed, 0 failed, 0 files not checkable"
    ${OXL_BIN} golden ${OXL_MM_GOLDENS})
  set_tests_properties(golden-mm-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()
