# The Vulkan offload (-ngl) from the command line (tests/cli/vulkan.sh), on Mesa's lavapipe in CI:
#   vulkan-run          run -ngl 99 / all / 5 / 2 / 0, --device none, an f32 cache: llama.cpp's greedy
#                       text of stories260K and the stderr line naming the device
#   vulkan-fallback     no such device / no driver / an unsupported cache type or family: one line,
#                       the CPU's text; --prompt-cache with the cache on the device is a named error
#   vulkan-golden-arch  golden -ngl 99 for every dense decoder family of golden/arch the device covers,
#                       -ngl 1 (head on the CPU), f16 weights
#   vulkan-tools        perplexity, bench and serve with -ngl
# Built with the backend only; without a device they skip (77), under OXILLAMA_REQUIRE_VULKAN=1 fail.
if(OXL_GPU_ENABLED)
  foreach(case run fallback golden-arch tools)
    add_test(NAME vulkan-${case} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/vulkan.sh ${case} ${OXL_BIN} ${PROJECT_SOURCE_DIR})
    set_tests_properties(vulkan-${case} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
  # the sweeps over many models (label gpu-sweep) repeat one host path; the sanitizer stage leaves
  # them out (build.sh sanitize), its Vulkan host code runs there in gpu-unit and vulkan-run/-fallback/-tools
  set_tests_properties(vulkan-golden-arch PROPERTIES LABELS gpu-sweep)
endif()
