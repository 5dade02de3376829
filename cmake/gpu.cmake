# The Vulkan compute backend (src/gpu): OXL_VULKAN = AUTO (default: on when the Vulkan loader and
# headers and glslc are found), ON (fails when one is missing) or OFF. The cross-build subset
# (OXL_SUBSET: the aarch64, riscv64 and wasm32 toolchain files) builds no Vulkan code.
# Defines OXL_GPU_ENABLED and, when on, OXL_GPU_SPIRV_SOURCE: a C file of the build tree holding the
# SPIR-V words of every shader of generated/gpu (oxl_spv_<name>[], oxl_spv_<name>_words), each
# compiled by `glslc --target-env=vulkan1.2 -O` from the build's own generated copy.
set(OXL_VULKAN AUTO CACHE STRING "Vulkan compute backend: AUTO, ON or OFF")
set_property(CACHE OXL_VULKAN PROPERTY STRINGS AUTO ON OFF)
set(OXL_GPU_ENABLED OFF)
if(OXL_SUBSET OR OXL_VULKAN STREQUAL "OFF")
  message(STATUS "Vulkan compute backend: off")
else()
  find_package(Vulkan QUIET)
  find_program(OXL_GLSLC glslc)
  if(Vulkan_FOUND AND OXL_GLSLC)
    set(OXL_GPU_ENABLED ON)
    message(STATUS "Vulkan compute backend: on (${Vulkan_LIBRARY}, ${OXL_GLSLC})")
  elseif(OXL_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "OXL_VULKAN=ON but the Vulkan loader/headers (found: ${Vulkan_FOUND}) or glslc "
      "(${OXL_GLSLC}) are missing: apt-get install libvulkan-dev glslc mesa-vulkan-drivers, or configure "
      "with -DOXL_VULKAN=OFF")
  else()
    message(STATUS "Vulkan compute backend: off (no Vulkan loader/headers or no glslc; OXL_VULKAN=AUTO)")
  endif()
endif()

if(OXL_GPU_ENABLED)
  include(${OXL_GENERATED_DIR}/gpu/oxl_gpu_shaders.cmake) # OXL_GPU_SHADER_NAMES
  set(spv_dir ${PROJECT_BINARY_DIR}/gpu_spirv)
  file(MAKE_DIRECTORY ${spv_dir})
  set(spv_words)
  foreach(name IN LISTS OXL_GPU_SHADER_NAMES)
    set(comp ${OXL_GENERATED_DIR}/gpu/${name}.comp)
    add_custom_command(OUTPUT ${spv_dir}/${name}.words
      COMMAND ${OXL_GLSLC} --target-env=vulkan1.2 -O -mfmt=c ${comp} -o ${spv_dir}/${name}.words
      DEPENDS ${comp} COMMENT "glslc ${name}.comp" VERBATIM)
    list(APPEND spv_words ${spv_dir}/${name}.words)
  endforeach()
  set(OXL_GPU_SPIRV_SOURCE ${spv_dir}/oxl_gpu_spirv.c)
  add_custom_command(OUTPUT ${OXL_GPU_SPIRV_SOURCE}
    COMMAND ${CMAKE_COMMAND} -DOUT=${OXL_GPU_SPIRV_SOURCE} -DDIR=${spv_dir} "-DNAMES=${OXL_GPU_SHADER_NAMES}"
      -P ${PROJECT_SOURCE_DIR}/cmake/gpu_embed.cmake
    DEPENDS ${spv_words} ${PROJECT_SOURCE_DIR}/cmake/gpu_embed.cmake
    COMMENT "embedding the SPIR-V of the compute shaders" VERBATIM)
endif()
