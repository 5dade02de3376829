# llama.cpp's further samplers (golden/sampling/README.md, chains): repetition penalties over the prompt
# and output, DRY, typical-p, top-n-sigma, XTC, dynamic temperature, mirostat v1/v2 and the chain's order
# (--samplers, --sampling-seq). Included from cli_tests.cmake, whose OXL_BIN, G, M and OXL_TEST_ISAS
# it uses.

# `oxillama run` with llama-completion's seed, temperature and sampler flags prints llama-completion's
# text (35 cases on stories260K f32), under every ISA cap.
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME sampling-chains-${isa} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_sampling_chains.sh ${OXL_BIN}
           ${M} ${G}/sampling)
  set_tests_properties(sampling-chains-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()

# Bad sampler flags: an error message and exit status 1, never a crash.
foreach(bad "--repeat-last-n;-1;invalid repeat-last-n" "--dry-penalty-last-n;-1;invalid dry-penalty-last-n" "--mirostat;3;--mirostat 3"
            "--samplers;infill;sampler 'infill' is not supported" "--sampling-seq;kkkkkkkkkkkkkkkk;too many samplers"
            "--samplers;foo;no sampler left")
  list(GET bad 0 flag)
  list(GET bad 1 value)
  list(GET bad 2 msg)
  string(REGEX REPLACE "[^a-z0-9]+" "-" tname "${flag}-${value}")
  add_test(NAME samplers-bad${tname}
           COMMAND sh -c "out=$(\"$0\" run -m \"$1\" -p x -n 1 \"$2\" \"$3\" 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && printf '%s' \"$out\" | grep -qF -- \"$4\""
                   ${OXL_BIN} ${M}/stories260K.gguf ${flag} ${value} ${msg})
endforeach()
