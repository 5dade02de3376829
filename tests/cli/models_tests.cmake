# Several models in one server (server/models.c): three golden/arch/ architectures served at once
# through --models-dir and through repeated -m/--alias; each request gets its model's llama.cpp
# greedy ids, --models-max unloads the least recently used model, never one with a request in
# flight (tests/server/check_models.py).
add_test(NAME server-models COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/server/check_models.py ${OXL_BIN} ${G}/arch)
set_tests_properties(server-models PROPERTIES TIMEOUT 300)
