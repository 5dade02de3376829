# JSON schemas (golden/json_schema/, golden/sampling/README.md "JSON schemas"). Included from
# cli_tests.cmake, whose OXL_BIN, G, M, OXL_PYTHON3 and OXL_TEST_ISAS it uses.

# `oxillama run -jf SCHEMA` prints llama-completion -jf's text for the same seed and flags (15 cases:
# 5 schemas x 3 seeds), under every ISA cap.
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME json-schema-sampling-${isa} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_grammar_sampling.sh ${OXL_BIN}
           ${M} ${G}/json_schema/schemas ${G}/sampling json-schema.tsv -jf)
  set_tests_properties(json-schema-sampling-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()

# 200 seeded generations under a schema (temperature 1, no cut-offs) all parse and validate.
add_test(NAME json-schema-200 COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_json_schema_runs.py ${OXL_BIN}
         ${M}/stories260K.gguf ${G}/json_schema/schemas/record.json 200)

# A schema the converter refuses: exit status 1 and llama.cpp's message.
add_test(NAME json-schema-bad
         COMMAND sh -c "out=$(\"$0\" run -m \"$1\" -p x -n 4 -j '{\"type\": \"kaboom\"}' 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && printf '%s' \"$out\" | grep -qF 'JSON schema conversion failed:' && printf '%s' \"$out\" | grep -qF 'Unrecognized schema: {\"type\":\"kaboom\"}'"
                 ${OXL_BIN} ${M}/stories260K.gguf)
