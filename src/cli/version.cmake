# oxillama --version: the project version (project() VERSION) and the git commit of the source tree,
# written into <build>/cli/oxl_git_commit.h at build time, so that a new commit is seen without
# re-running CMake ("unknown" when the source is not a git checkout or git is missing).
# Included from the top-level CMakeLists.txt after the oxillama-cli target; also run as a script
# (cmake -DSRC=dir -DOUT=file [-DGIT=git] -P version.cmake), which is what the build does.
if(CMAKE_SCRIPT_MODE_FILE)
  set(commit unknown)
  if(GIT)
    execute_process(COMMAND ${GIT} -C ${SRC} rev-parse --short=12 HEAD OUTPUT_VARIABLE out RESULT_VARIABLE rc
                    ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0 AND out MATCHES "^[0-9a-f]+$")
      set(commit ${out})
    endif()
  endif()
  set(text "/* written by src/cli/version.cmake */\n#define OXL_GIT_COMMIT \"${commit}\"\n")
  set(old "")
  if(EXISTS ${OUT})
    file(READ ${OUT} old)
  endif()
  if(NOT old STREQUAL text) # unchanged: no rebuild
    file(WRITE ${OUT} "${text}")
  endif()
  return()
endif()

find_program(OXL_GIT git)
if(NOT OXL_GIT)
  set(OXL_GIT "")
endif()
set(OXL_GIT_COMMIT_H ${PROJECT_BINARY_DIR}/cli/oxl_git_commit.h)
add_custom_target(oxl_cli_git_commit BYPRODUCTS ${OXL_GIT_COMMIT_H}
                  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DOUT=${OXL_GIT_COMMIT_H} -DGIT=${OXL_GIT} -P
                          ${CMAKE_CURRENT_LIST_DIR}/version.cmake
                  COMMENT "git commit for oxillama --version" VERBATIM)
add_dependencies(oxillama-cli oxl_cli_git_commit)
target_include_directories(oxillama-cli PRIVATE ${PROJECT_BINARY_DIR}/cli)
