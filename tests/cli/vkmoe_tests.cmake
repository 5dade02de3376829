# The MoE families with -ngl all (tests/cli/gpu_golden.sh): every layer, experts included, offloaded
# to the Vulkan device, and llama.cpp's logits goldens passing. The goldens' f32 KV
# cache is not one the device keeps, so their passes run on the CPU; the device's own results for
# these models are checked against the CPU's in tests/gpu/test_moe_gpu.c. Skipped without a device.
if(OXL_GPU_ENABLED)
  add_test(NAME golden-vulkan-moe COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpu_golden.sh ${OXL_BIN}
    ${G}/arch/mixtral.logits.gguf ${G}/arch/gpt-oss.logits.gguf ${G}/arch/qwen2moe.logits.gguf
    ${G}/arch/qwen3moe.logits.gguf ${G}/arch/olmoe.logits.gguf ${G}/arch/phimoe.logits.gguf
    ${G}/arch/ernie4_5-moe.logits.gguf ${G}/arch/hunyuan-moe.logits.gguf ${G}/arch/minimax-m2.logits.gguf
    ${G}/arch/grok.logits.gguf)
  set_tests_properties(golden-vulkan-moe PROPERTIES SKIP_RETURN_CODE 77)
endif()
