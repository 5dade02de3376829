# The kernel generator: gen/ renders templates/ into ${OXL_GENERATED_DIR} (the build directory's
# generated/), which is what the build compiles. The build never writes the source tree: the
# committed generated/ is the reviewable copy of that output, and ctest gen-drift fails when it
# differs from a fresh generation (cmake/gen_drift.cmake).
#
# The generator runs at configure time (it takes well under a second), so the generated source list
# (oxl_kernels.cmake) is known when targets are defined. Every generator input is a configure
# dependency: editing gen/*.py or templates/* makes the next build re-run CMake, which regenerates;
# files are rewritten only when their text changes, so an unchanged spec rebuilds nothing.
# Defines OXL_PYTHON, OXL_GENERATED_DIR and OXL_GENERATED_SOURCES (with per-file ISA compile flags).

# A Python 3 that can import jinja2: python3 on PATH first, then the system one.
set(OXL_PYTHON "")
find_program(OXL_PYTHON_ON_PATH NAMES python3)
foreach(candidate IN ITEMS "${OXL_PYTHON_ON_PATH}" /usr/bin/python3)
  if(candidate AND NOT OXL_PYTHON)
    execute_process(COMMAND "${candidate}" -c "import jinja2"
      RESULT_VARIABLE oxl_jinja_rc OUTPUT_QUIET ERROR_QUIET)
    if(oxl_jinja_rc EQUAL 0)
      set(OXL_PYTHON "${candidate}")
    endif()
  endif()
endforeach()
if(NOT OXL_PYTHON)
  message(FATAL_ERROR "The kernel generator needs Python 3 with Jinja2 (none of: python3 on PATH, "
    "/usr/bin/python3 can `import jinja2`). Install python3-jinja2 (apt-get install python3-jinja2) "
    "or `pip install jinja2`.")
endif()

set(OXL_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
file(GLOB OXL_GEN_INPUTS CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/gen/*.py
  ${PROJECT_SOURCE_DIR}/gen/tables/*.json
  ${PROJECT_SOURCE_DIR}/templates/*
  ${PROJECT_SOURCE_DIR}/templates/*/*)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${OXL_GEN_INPUTS})
execute_process(COMMAND ${OXL_PYTHON} -B -m gen --out ${OXL_GENERATED_DIR}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  RESULT_VARIABLE oxl_gen_rc OUTPUT_VARIABLE oxl_gen_out ERROR_VARIABLE oxl_gen_err)
if(NOT oxl_gen_rc EQUAL 0)
  message(FATAL_ERROR "the kernel generator failed (exit ${oxl_gen_rc}):\n${oxl_gen_err}")
endif()
if(oxl_gen_out)
  message(STATUS "Generated kernels (gen/ -> ${OXL_GENERATED_DIR}):\n${oxl_gen_out}")
endif()
include(${OXL_GENERATED_DIR}/oxl_kernels.cmake)

# gen-drift: the committed generated/ must equal what the generator writes now.
if(OXL_BUILD_TESTS)
  enable_testing()
  add_test(NAME gen-drift
    COMMAND ${CMAKE_COMMAND}
      -DPYTHON=${OXL_PYTHON} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${PROJECT_BINARY_DIR}/gen-drift
      -P ${PROJECT_SOURCE_DIR}/cmake/gen_drift.cmake)
endif()
