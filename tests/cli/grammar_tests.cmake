# GBNF grammars (golden/sampling/README.md, "Grammars"; golden/grammars/README.md). Included from
# cli_tests.cmake, whose OXL_BIN, G, M and OXL_TEST_ISAS it uses.

# `oxillama run --grammar-file` with llama-completion's seed, temperature and sampler flags prints
# llama-completion's text (19 cases on stories260K f32: json, json_arr, list, arithmetic, c, chess,
# english, japanese and a grammar that ends the text), under every ISA cap.
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME grammar-sampling-${isa} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_grammar_sampling.sh ${OXL_BIN}
           ${M} ${G}/grammars ${G}/sampling)
  set_tests_properties(grammar-sampling-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()

# Bad grammars: exit status 1 and an error naming line:column and what is wrong, never a crash.
function(oxl_grammar_bad tname text msg)
  add_test(NAME grammar-bad-${tname}
           COMMAND sh -c "out=$(\"$0\" run -m \"$1\" -p x -n 4 --grammar \"$2\" 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && printf '%s' \"$out\" | grep -qF -- \"$3\""
                   ${OXL_BIN} ${M}/stories260K.gguf "${text}" "${msg}")
endfunction()
oxl_grammar_bad(undefined "root ::= \"a\" foo" "1:14: undefined rule 'foo'")
oxl_grammar_bad(class "root ::= \"a\"\nx ::= [abc" "2:7: unterminated character class")
oxl_grammar_bad(leftrec "root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]"
                "2:1: left recursion: rule 'expr'")
oxl_grammar_bad(noroot "start ::= \"a\"" "no rule named 'root'")
# the same through --grammar-file: the file's name, then line:column
add_test(NAME grammar-bad-file
         COMMAND sh -c "f=$(mktemp); printf 'root ::= \"{\" item* \"}\"\\nitem ::= [a-z\\n' >\"$f\"; out=$(\"$0\" run -m \"$1\" -p x -n 4 --grammar-file \"$f\" 2>&1); rc=$?; rm -f \"$f\"; echo \"$out\"; [ $rc -eq 1 ] && printf '%s' \"$out\" | grep -q -- ':2:10: unterminated character class'"
                 ${OXL_BIN} ${M}/stories260K.gguf)

# The same on a 32000-token vocabulary (byte tokens, many multi-byte pieces): llama-2-tiny-random
# of the shared reference set (../shared/models beside the source tree), 7 cases of
# golden/sampling/grammar-32k.tsv. Without the set the test is skipped, saying so, or fails under
# OXILLAMA_REQUIRE_SHARED (as golden-tokenizer-shared).
set(OXL_SHARED_MODELS ${PROJECT_SOURCE_DIR}/../shared/models)
add_test(NAME grammar-sampling-32k COMMAND sh -c "
  if [ -f '${OXL_SHARED_MODELS}/llama-2-tiny-random.gguf' ]; then exec sh '${CMAKE_CURRENT_LIST_DIR}/check_grammar_sampling.sh' '${OXL_BIN}' '${OXL_SHARED_MODELS}' '${G}/grammars' '${G}/sampling' grammar-32k.tsv; fi
  echo 'grammar-sampling-32k: ${OXL_SHARED_MODELS}/llama-2-tiny-random.gguf is missing: not checked'
  if [ -n \"\$OXILLAMA_REQUIRE_SHARED\" ]; then exit 1; fi
  exit 77")
set_tests_properties(grammar-sampling-32k PROPERTIES SKIP_RETURN_CODE 77)

# --grammar TEXT gives the same text as --grammar-file with that text (golden sentence.s1), exit 0;
# both flags at once are refused (exit 1).
add_test(NAME grammar-inline
         COMMAND sh -c "out=$(\"$0\" run -m \"$1\" -p 'Once upon a time' -n 64 --seed 1 --temp 0.8 --top-k 40 -t 1 --grammar \"$(cat \"$2\")\" 2>/dev/null); rc=$?; want=\"Once upon a time$(cat \"$3\")\"; echo \"$out\"; [ $rc -eq 0 ] && [ \"$out\" = \"$want\" ]"
                 ${OXL_BIN} ${M}/stories260K.gguf ${G}/grammars/sentence.gbnf ${G}/sampling/grammar/sentence.s1.expected)
add_test(NAME grammar-bad-both
         COMMAND sh -c "out=$(\"$0\" run -m \"$1\" -p x -n 4 --grammar 'root ::= \"a\"' --grammar-file \"$2\" 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && printf '%s' \"$out\" | grep -qF -- 'give one of --grammar, --grammar-file'"
                 ${OXL_BIN} ${M}/stories260K.gguf ${G}/grammars/sentence.gbnf)
