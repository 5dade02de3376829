# The MoE families with -ngl all on the Vulkan device (tests/cli/gpu_golden.sh): every layer, experts
# included, offloaded and run there, llama.cpp's logits goldens passing with max|Δ|/range within the
# CPU's own bounds of golden/arch/tolerances.tsv (2e-6; grok, whose GELU rounds to f16, 1e-4; gpt-oss
# with mxfp4 experts and q8_0 projections, its file's 1.5e-2) rather than the runner's 1e-3 for device
# runs. Skipped without a device.
if(OXL_GPU_ENABLED)
  add_test(NAME golden-vulkan-moe COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpu_golden.sh ${OXL_BIN} 2e-6
    ${G}/arch/mixtral.logits.gguf ${G}/arch/gpt-oss.logits.gguf ${G}/arch/qwen2moe.logits.gguf
    ${G}/arch/qwen3moe.logits.gguf ${G}/arch/olmoe.logits.gguf ${G}/arch/phimoe.logits.gguf
    ${G}/arch/ernie4_5-moe.logits.gguf ${G}/arch/hunyuan-moe.logits.gguf ${G}/arch/minimax-m2.logits.gguf
    ${G}/arch/glm4moe.logits.gguf)
  add_test(NAME golden-vulkan-moe-grok COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpu_golden.sh ${OXL_BIN} 1e-4
    ${G}/arch/grok.logits.gguf)
  add_test(NAME golden-vulkan-moe-mxfp4 COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpu_golden.sh ${OXL_BIN} 1.5e-2
    ${G}/arch/gpt-oss-MXFP4_MOE.logits.gguf)
  set_tests_properties(golden-vulkan-moe golden-vulkan-moe-grok golden-vulkan-moe-mxfp4 PROPERTIES SKIP_RETURN_CODE 77
                       LABELS gpu-sweep)
endif()
