# ctest gen-drift: generates afresh into WORK_DIR (inside the build directory) and fails when the
# committed SOURCE_DIR/generated differs from it in any file, added, removed or changed. The build
# never writes SOURCE_DIR/generated, so a hand edit or a stale commit there stays visible here.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${PYTHON} -B -m gen --out ${WORK_DIR}
  WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the generator failed (exit ${rc})")
endif()
execute_process(COMMAND diff -r ${WORK_DIR} ${SOURCE_DIR}/generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "generated/ differs from the generator's output (diff above): run `python3 -m gen --out generated` and commit")
endif()
message("gen-drift: generated/ equals a fresh generation")
