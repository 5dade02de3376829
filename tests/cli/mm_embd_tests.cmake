# Image embeddings decoded with llama.cpp's positions (tests/unit/test_mm_embd.c, Criterion suite
# mm_embd, against golden/mm/*.golden.gguf) once per ISA cap: the unit binary's suite with
# OXILLAMA_ISA set. Included from cli_tests.cmake.
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME mm-embd-${isa} COMMAND $<TARGET_FILE:oxl-tests> --filter "mm_embd/*")
  set_tests_properties(mm-embd-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()
