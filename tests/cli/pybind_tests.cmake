# The Python package (python/, built when OXL_PYTHON_PACKAGE is on): its pytest suite, python/tests, run by
# the interpreter the build found (Python3_EXECUTABLE) on the module the build made
# (build/python/oxillama): greedy text, token ids, logits and bert's embeddings against llama.cpp's
# goldens, streaming = whole completions, a built-in chat format's rendering, and the errors raised
# on a missing file, an unknown keyword argument and arguments not offered. pytest's exit status is
# the test's (no cache or bytecode is written into the source tree).
if(OXL_PYTHON_PACKAGE)
  add_test(NAME python COMMAND ${Python3_EXECUTABLE} -m pytest -p no:cacheprovider -q
           ${PROJECT_SOURCE_DIR}/python/tests)
  set_tests_properties(python PROPERTIES ENVIRONMENT
                       "PYTHONPATH=${PROJECT_BINARY_DIR}/python;PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300)
endif()
