# The layering of docs/architecture.md: each layer target's include path, no include by path, and
# an upward include refused by the compiler (tests/cli/check_layers.sh).
set(OXL_LAYER_SPECS)
foreach(layer IN LISTS OXL_LAYER_TARGETS)
  list(APPEND OXL_LAYER_SPECS "${layer}=$<JOIN:$<TARGET_PROPERTY:${layer},INCLUDE_DIRECTORIES>,:>")
endforeach()
add_test(NAME layers COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh ${PROJECT_SOURCE_DIR} ${OXL_GENERATED_DIR}
  ${CMAKE_C_COMPILER} ${OXL_LAYER_SPECS})
