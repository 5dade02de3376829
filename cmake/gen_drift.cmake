# ctest gen-drift: regenerates into WORK_DIR and fails when it differs from SOURCE_DIR/generated.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${PYTHON} -m gen --out ${WORK_DIR}
  WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the generator failed (exit ${rc})")
endif()
execute_process(COMMAND diff -r ${WORK_DIR} ${SOURCE_DIR}/generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "generated/ differs from the generator's output: run `python3 -m gen --out generated` and commit")
endif()
