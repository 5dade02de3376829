# Offloaded layers of quantized models (Vulkan): the greedy text of -ngl 99 equals the CPU's, for
# each stories260K weight format in models/ and the synth-small IQ4_XS and Q1_0 files.
if(OXL_GPU_ENABLED)
  add_test(NAME vk-quant-greedy COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_vk_greedy.sh ${OXL_BIN} 16
           ${M}/stories260K-Q8_0.gguf ${M}/stories260K-Q4_0.gguf ${M}/stories260K-Q4_1.gguf
           ${M}/stories260K-Q5_0.gguf ${M}/stories260K-Q5_1.gguf ${M}/stories260K-IQ4_NL.gguf
           ${M}/synth-small-IQ4_XS.gguf ${M}/synth-small-Q1_0.gguf)
  set_tests_properties(vk-quant-greedy PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu-sweep)
endif()
# The same models (and synth-small Q1_0 and IQ4_XS) against llama.cpp's logits goldens with every layer and the
# head on the device.
if(OXL_GPU_ENABLED)
  add_test(NAME vk-quant-golden COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_vk_golden.sh ${OXL_BIN}
           ${G}/models/stories260K-Q8_0.once.gguf ${G}/models/stories260K-Q4_0.once.gguf
           ${G}/models/stories260K-Q4_1.once.gguf ${G}/models/stories260K-Q5_0.once.gguf
           ${G}/models/stories260K-Q5_1.once.gguf ${G}/models/stories260K-IQ4_NL.once.gguf
           ${G}/models/synth-small-Q1_0.once.gguf ${G}/models/synth-small-IQ4_XS.once.gguf)
  set_tests_properties(vk-quant-golden PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu-sweep)
endif()
