# The self-speculative target/draft pair of oxl-make-synthetic (--tail-from/--tail-scale, and the
# target's first layers as draft): the files hold what bench/README.md says (byte-compared), and
# greedy runs with the draft and with n-grams print the plain run's text, with drafts accepted;
# --recite: a model that continues a passage its prompt quotes, for n-gram drafting.
# Every command's exit status is checked (tests/cli/check_spec_pair.py). No timings.
if(OXL_BUILD_TOOLS)
  add_test(NAME spec-synthetic-pair
           COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_spec_pair.py $<TARGET_FILE:oxl-make-synthetic>
                   ${OXL_BIN} ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/spec-synthetic-pair)
endif()
