# The mmproj vision towers and projectors (src/mm/clip.c) against llama.cpp's libmtmd goldens
# (golden/mm/: llava15, llava-next, qwen2vl, gemma3): the Criterion tests mm_clip/* and mm_clip_bad/* of
# tests/unit/test_mm_clip.c, once per ISA cap (OXILLAMA_ISA), as golden-arch-<isa> runs the text models.
# Included from cli_tests.cmake, whose OXL_TEST_ISAS it uses.
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME mm-clip-${isa} COMMAND $<TARGET_FILE:oxl-tests> --filter "mm_clip*/*")
  set_tests_properties(mm-clip-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()
