# Prompt batches through the tiled mul_mat shaders (Vulkan): stories260K's perplexity at -c 128 with
# every layer on the device against llama.cpp's logits (check_vk_kld.sh).
if(OXL_GPU_ENABLED)
  add_test(NAME vk-tiled-kld COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_vk_kld.sh ${OXL_BIN} ${M}/stories260K.gguf
           ${G}/perplexity)
  set_tests_properties(vk-tiled-kld PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu-sweep)
endif()
