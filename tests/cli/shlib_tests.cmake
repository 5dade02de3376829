# The installable library (README "Use it from C"): liboxillama.so's exported symbols, the installed
# package (pkg-config, find_package) and the source tree as a subproject (tests/package/).
# Not in the sanitizer build: its instrumented objects are checked by the plain build's run.
if(OXL_SANITIZE OR NOT TARGET oxillama_shared)
  return()
endif()
add_test(NAME shlib-exports COMMAND sh ${PROJECT_SOURCE_DIR}/tests/package/check_exports.sh
  $<TARGET_FILE:oxillama_shared> ${PROJECT_SOURCE_DIR}/include/oxillama.h ${CMAKE_C_COMPILER} ${OXL_SOVERSION})
if(OXL_INSTALL AND TARGET oxillama-cli)
  # builds docs/example.c four ways against the installed tree, runs its CLI: seconds
  add_test(NAME package-install COMMAND sh ${PROJECT_SOURCE_DIR}/tests/package/check_install.sh
    ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/package-install ${PROJECT_VERSION}
    ${CMAKE_INSTALL_LIBDIR} ${CMAKE_C_COMPILER} ${CMAKE_COMMAND} ${CMAKE_GENERATOR})
  # configures and builds the whole library again inside a parent project: minutes
  add_test(NAME package-subdirectory COMMAND sh ${PROJECT_SOURCE_DIR}/tests/package/check_subproject.sh
    subdirectory ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/package-subdirectory ${CMAKE_C_COMPILER}
    ${CMAKE_COMMAND} ${CMAKE_GENERATOR} "${CMAKE_C_COMPILER_LAUNCHER}")
  set_tests_properties(package-subdirectory PROPERTIES TIMEOUT 1800)
  # each works in its own folder of the build directory (the installed prefix, the parent project)
  set_tests_properties(package-install package-subdirectory PROPERTIES LABELS package)
endif()
