# The kernel generator: gen/ renders templates/ into generated/ (committed to the repository).
# Defines OXL_GENERATED_SOURCES (with per-file ISA compile flags) and the target oxl_generate,
# which reruns the generator when gen/*.py or templates/* change; files are rewritten only when
# their text changes, so an unchanged spec rebuilds nothing.

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

file(GLOB OXL_GEN_INPUTS CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/gen/*.py
  ${CMAKE_SOURCE_DIR}/templates/*
  ${CMAKE_SOURCE_DIR}/templates/*/*)
set(OXL_GEN_STAMP ${CMAKE_BINARY_DIR}/oxl_generate.stamp)
add_custom_command(
  OUTPUT ${OXL_GEN_STAMP}
  COMMAND ${OXL_PYTHON} -m gen --out ${CMAKE_SOURCE_DIR}/generated
  COMMAND ${CMAKE_COMMAND} -E touch ${OXL_GEN_STAMP}
  DEPENDS ${OXL_GEN_INPUTS}
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "Generating kernels (gen/ -> generated/)"
  VERBATIM)
add_custom_target(oxl_generate DEPENDS ${OXL_GEN_STAMP})

# The generated source list; re-read by CMake when it changes.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/generated/oxl_kernels.cmake)
include(${CMAKE_SOURCE_DIR}/generated/oxl_kernels.cmake)

# gen-drift: the committed generated/ must equal what the generator writes now.
if(OXL_BUILD_TESTS)
  enable_testing()
  add_test(NAME gen-drift
    COMMAND ${CMAKE_COMMAND}
      -DPYTHON=${OXL_PYTHON} -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DWORK_DIR=${CMAKE_BINARY_DIR}/gen-drift
      -P ${CMAKE_SOURCE_DIR}/cmake/gen_drift.cmake)
endif()
