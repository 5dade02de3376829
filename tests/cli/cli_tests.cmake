# Command-line parity checks against llama.cpp's reference outputs in golden/, run once per ISA cap
# (OXILLAMA_ISA) so every kernel cell the CPU has is exercised end to end. The ISA-named tests exist
# for the ISAs this CPU runs only (oxillama refuses OXILLAMA_ISA naming another): cmake/cpu_isas.c
# asks the library's own detection (src/kernels/cpu.c over the generated spec table) at configure time, so a
# new ISA is tested without touching this file.
try_run(oxl_isas_run oxl_isas_compiled ${PROJECT_BINARY_DIR}/cpu_isas
  SOURCES ${PROJECT_SOURCE_DIR}/cmake/cpu_isas.c ${PROJECT_SOURCE_DIR}/src/kernels/cpu.c ${PROJECT_SOURCE_DIR}/src/core/errors.c
          ${OXL_GENERATED_DIR}/oxl_types.c
  CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${PROJECT_SOURCE_DIR}/src/core;${PROJECT_SOURCE_DIR}/src/kernels;${PROJECT_SOURCE_DIR}/include;${OXL_GENERATED_DIR}"
  COMPILE_DEFINITIONS -D_GNU_SOURCE
  LINK_LIBRARIES Threads::Threads
  COMPILE_OUTPUT_VARIABLE oxl_isas_log
  RUN_OUTPUT_VARIABLE OXL_TEST_ISAS)
if(NOT oxl_isas_compiled OR NOT oxl_isas_run EQUAL 0 OR NOT OXL_TEST_ISAS)
  message(FATAL_ERROR "cmake/cpu_isas.c (the ISAs this CPU runs) failed:\n${oxl_isas_log}")
endif()
message(STATUS "ISA-named tests for this CPU's ISAs: ${OXL_TEST_ISAS}")

set(OXL_BIN $<TARGET_FILE:oxillama-cli>)

# oxl_output_test(NAME ok|refusal REGEX COMMAND...): a command whose output must match REGEX (CMake
# regex; ctest's PASS_REGULAR_EXPRESSION) and whose exit status must be 0 (ok) or an error status
# (refusal; a crash or signal is not one): tests/cli/expect_status.sh checks the status, which ctest
# ignores when it matches output.
function(oxl_output_test name want regex)
  add_test(NAME ${name} COMMAND sh ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/expect_status.sh ${want} ${ARGN})
  set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}"
                       FAIL_REGULAR_EXPRESSION "expect_status: FAILED")
endfunction()
set(G ${PROJECT_SOURCE_DIR}/golden)
set(M ${PROJECT_SOURCE_DIR}/models)

# Model logits goldens: every file of golden/models (stories260K in f32 and in each weight format
# that has one, golden/README.md; a new format's golden joins by being there).
file(GLOB OXL_LOGITS_GOLDENS CONFIGURE_DEPENDS ${G}/models/*.gguf)
list(LENGTH OXL_LOGITS_GOLDENS oxl_n_logits_goldens)
if(oxl_n_logits_goldens LESS 10)
  message(FATAL_ERROR "golden/models holds ${oxl_n_logits_goldens} goldens, expected at least 10")
endif()

# The C sources are as clang-format writes them (.clang-format; generated/ excluded).
add_test(NAME format COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_format.sh ${PROJECT_SOURCE_DIR})

# Every model chat template of golden/chat-templates against Python Jinja2's renderings.
add_test(NAME golden-chat-templates COMMAND ${OXL_BIN} golden ${G}/chat-templates)

# The quant checker itself runs every ISA cell the CPU has.
# The files are the spec's formats with goldens (OXL_QUANT_GOLDEN_FORMATS, generated/oxl_kernels.cmake).
list(TRANSFORM OXL_QUANT_GOLDEN_FORMATS PREPEND ${G}/quant/ OUTPUT_VARIABLE OXL_QUANT_GOLDENS)
list(TRANSFORM OXL_QUANT_GOLDENS APPEND .gguf)
add_test(NAME golden-quant COMMAND ${OXL_BIN} golden ${OXL_QUANT_GOLDENS})

foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME golden-logits-${isa} COMMAND ${OXL_BIN} golden ${OXL_LOGITS_GOLDENS})
  add_test(NAME run-greedy-${isa} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_greedy.sh ${OXL_BIN} ${G}/run)
  set_tests_properties(golden-logits-${isa} run-greedy-${isa}
                       PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()

add_test(NAME perplexity-kld COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_perplexity.sh ${OXL_BIN}
         ${M}/stories260K.gguf ${G}/perplexity)
# ggml's tiled flash attention for prompt batches (golden/README.md, perplexity: qwen3 -b 128 -fa on).
add_test(NAME flash-tiled COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_flash_tiled.sh ${OXL_BIN}
         ${G}/arch/qwen3.gguf ${G}/perplexity)
# Repacked K-quant weights (Q4_K, Q6_K) against llama.cpp's run of the same Q4_K_M file.
add_test(NAME repack-kquant COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_repack.sh ${OXL_BIN}
         ${G}/quantize/synth-small-f32.gguf ${G}/perplexity ${CMAKE_CURRENT_BINARY_DIR}/repack-kquant)
# the same with the AVX2 layouts (8 rows, pmaddubsw)
add_test(NAME repack-kquant-avx2 COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_repack.sh ${OXL_BIN}
         ${G}/quantize/synth-small-f32.gguf ${G}/perplexity ${CMAKE_CURRENT_BINARY_DIR}/repack-kquant-avx2)
set_tests_properties(repack-kquant-avx2 PROPERTIES ENVIRONMENT OXILLAMA_ISA=avx2)
# Quantized and bf16 KV caches against llama.cpp's runs with the same (and q8_0/q4_0 with an f16) cache.
add_test(NAME kv-quant COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_kv_quant.sh ${OXL_BIN}
         ${G}/arch/qwen3.gguf ${G}/perplexity ${G}/quantize/synth-small-f32.gguf)

# oxillama bench: llama-bench's CSV fields in its order (the test's row: pp8, one thread, repacking
# on) and its markdown columns, with the model named as llama-bench does (t/s values not checked).
oxl_output_test(bench-csv ok "build_commit,build_number,cpu_info,gpu_info,backends,model_filename,model_type,model_size,model_n_params,n_batch,n_ubatch,n_threads,cpu_mask,cpu_strict,poll,type_k,type_v,n_gpu_layers,n_cpu_moe,split_mode,main_gpu,no_kv_offload,flash_attn,devices,tensor_split,tensor_buft_overrides,load_mode,embeddings,no_op_offload,no_host,fit_target,fit_min_ctx,n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts,repack\n\"oxillama\",\"0\",\"[^\"]*\",\"\",\"CPU\",\"[^\"]*stories260K-Q4_0\.gguf\",\"llama 0\.29M Q4_0\",\"[0-9]+\",\"292800\",\"2048\",\"512\",\"1\",\"0x0\",\"0\",\"50\",\"f16\",\"f16\",\"-1\",[^\n]*\"8\",\"0\",\"0\",\"[0-9T:Z-]+\",\"[0-9]+\",\"0\",\"[0-9.]+\",\"0\.000000\",\"1\"\n"
  ${OXL_BIN} bench -m ${M}/stories260K-Q4_0.gguf -p 8 -n 0 -r 1 -t 1 -o csv)
oxl_output_test(bench-md ok "\\| model +\\| +size \\| +params \\| backend +\\| threads \\| type_k \\| +test \\| +t/s \\|\n.*\\| llama 0\\.29M all F32 \\(guessed\\) +\\| +1\\.12 MiB \\| +0\\.29 M \\| CPU +\\| +1 \\| +f32 \\| +pp8 \\| +[0-9.]+ ± [0-9.]+ \\|\n\\| llama 0\\.29M all F32 \\(guessed\\) .* tg4 "
  ${OXL_BIN} bench -m ${M}/stories260K.gguf -p 8 -n 4 -r 1 -t 1 -ctk f32)
# Latent attention reads V from the K cache: different K and V cache types are refused (llama.cpp too).
oxl_output_test(kv-mla-types refusal "K and V cache types must be the same"
  ${OXL_BIN} run -m ${G}/arch/deepseek2.gguf -p Once -n 1 -ctk q8_0 -ctv f16)
# An embedding model (no output head) cannot generate: run refuses it rather than print text from
# zero logits.
oxl_output_test(run-refuses-encoder refusal "bert\\.gguf: an embedding model \\(no output head\\) cannot generate text"
  ${OXL_BIN} run -m ${G}/arch/bert.gguf -p Hello -n 4)
# oxillama info shows a tensor's type, shape and offset as they stand in the file.
oxl_output_test(info-stories ok "blk\\.0\\.ffn_gate\\.weight +f32 +64 x 172 +44032 +311808"
  ${OXL_BIN} info ${M}/stories260K.gguf)
oxl_output_test(info-rejects-truncated refusal "trunc\\.gguf: .*byte"
  sh -c "head -c 100 '${M}/stories260K.gguf' > '${CMAKE_CURRENT_BINARY_DIR}/trunc.gguf' && '${OXL_BIN}' info '${CMAKE_CURRENT_BINARY_DIR}/trunc.gguf'")

# llama.cpp's tokenizer conformance fixtures, through the golden runner.
file(GLOB OXL_TOKENIZER_GOLDENS ${G}/tokenizer/*.gguf)
add_test(NAME golden-tokenizer COMMAND ${OXL_BIN} golden ${OXL_TOKENIZER_GOLDENS})
# The shared reference set's tokenizer fixtures (vocabularies not kept in golden/tokenizer: the
# other BPE ones, Llama 3's, Baichuan's), from ../shared beside the source tree. Without it the test
# is skipped, saying so (ctest lists it as not run), or fails under OXILLAMA_REQUIRE_SHARED (set by
# ./build.sh test in CI, which must have the set).
set(OXL_SHARED_TOKDIR ${PROJECT_SOURCE_DIR}/../shared/golden/tokenizer)
add_test(NAME golden-tokenizer-shared COMMAND sh -c "
  if ls '${OXL_SHARED_TOKDIR}'/*.gguf >/dev/null 2>&1; then exec '${OXL_BIN}' golden '${OXL_SHARED_TOKDIR}'/*.gguf; fi
  echo 'golden-tokenizer-shared: ${OXL_SHARED_TOKDIR} has no fixtures: the shared tokenizer goldens were not checked'
  if [ -n \"\$OXILLAMA_REQUIRE_SHARED\" ]; then exit 1; fi
  exit 77")
set_tests_properties(golden-tokenizer-shared PROPERTIES SKIP_RETURN_CODE 77)
# oxillama tokenize prints llama-tokenize's shapes; the ids are the golden prompt's (golden/models/stories260K.once.gguf).
oxl_output_test(tokenize-ids ok "^\\[1, 403, 407, 261, 378\\]"
  ${OXL_BIN} tokenize -m ${M}/stories260K.gguf -p "Once upon a time" --ids)

# oxillama quantize end to end: the Q4_K_M mix with a legacy imatrix (blk.1.attn_v gets q6_K).
oxl_output_test(quantize-q4_K_M ok "blk\\.1\\.attn_v\\.weight +q6_K"
  sh -c "'${OXL_BIN}' quantize --imatrix '${G}/quantize/synth-small.imatrix.dat' '${G}/quantize/synth-small-f32.gguf' '${CMAKE_CURRENT_BINARY_DIR}/synth-Q4_K_M.gguf' Q4_K_M 2 && '${OXL_BIN}' info '${CMAKE_CURRENT_BINARY_DIR}/synth-Q4_K_M.gguf'")

# The K-quant mixes of stories260K (5 layers: the per-layer rules apply) and synth-small Q4_K_M are
# llama-quantize's files byte for byte (golden/quantize/llama-quantize.sha256).
add_test(NAME quantize-kquant-files COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_quantize_files.sh ${OXL_BIN}
         ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/quantize-kquant-files)

# Every architecture (dense decoders; mixture-of-experts, latent attention, state-space and hybrid
# models): llama.cpp's logits for one tiny random model each (golden/arch/, every logits file names
# its model beside it), once per ISA cap.
file(GLOB OXL_ARCH_GOLDENS ${G}/arch/*.logits.gguf)
foreach(isa IN LISTS OXL_TEST_ISAS)
  add_test(NAME golden-arch-${isa} COMMAND ${OXL_BIN} golden ${OXL_ARCH_GOLDENS})
  set_tests_properties(golden-arch-${isa} PROPERTIES ENVIRONMENT "OXILLAMA_ISA=${isa}")
endforeach()

# oxillama serve end to end on loopback ports, with curl and the OpenAI Node client (tests/server/).
add_test(NAME server COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/run.sh ${OXL_BIN} ${M}/stories260K.gguf ${G}/run)
set_tests_properties(server PROPERTIES TIMEOUT 600)
# An embedding model behind the server: generation routes refused, embeddings served.
add_test(NAME server-encoder COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/encoder.sh ${OXL_BIN} ${G}/arch/bert.gguf)
# oxillama info shows the graph parameters gemma2's model uses (golden/arch/README.md: window 8 on
# layers 0 and 2, attention soft-cap 5, final soft-cap 0.5).
oxl_output_test(info-arch-graph ok "soft-cap 5\n  sliding window +n_swa 8 on layers 0 2\n.*final soft-cap 0\\.5"
  ${OXL_BIN} info ${G}/arch/gemma2.gguf)
# ... and the experts, routing and SSM sizes of the MoE, latent-attention and hybrid models
# (golden/arch/README.md: deepseek2-v3 sigmoid routing over 4 groups; jamba Mamba layers 0 and 2).
oxl_output_test(info-arch-moe ok "experts +8 experts, top-3, n_ff_exp 32.*\n  routing +sigmoid, top-k weights renormalised, weights x 2\\.5, 4 groups \\(best 2 kept\\)"
  ${OXL_BIN} info ${G}/arch/deepseek2-v3.gguf)
oxl_output_test(info-arch-ssm ok "ssm +mamba: d_inner 128, d_state 16, d_conv 4, dt_rank 4\n  recurrent layers 0 2"
  ${OXL_BIN} info ${G}/arch/jamba.gguf)

# Issue-5 parity on converted files: dense arch models converted to F16/Q8_0 by oxillama quantize give
# llama.cpp's greedy continuation of the file llama-quantize made (golden/arch-converted/README.md).
find_program(OXL_PYTHON3 python3)
add_test(NAME arch-converted COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_converted.py ${OXL_BIN}
         ${G} ${CMAKE_CURRENT_BINARY_DIR}/arch-converted)

# The server under load: many connections and streams, slow and idle clients, clients leaving
# mid-stream; greedy answers = llama.cpp's, RSS back within 10 % (tests/server/load.sh, ~5 s).
add_test(NAME server-load COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/load.sh ${OXL_BIN} ${M}/stories260K.gguf ${G}/run)
set_tests_properties(server-load PROPERTIES TIMEOUT 180)
# A stream queued longer than --idle-timeout arrives whole (tests/server/stream_queued.py).
add_test(NAME server-stream-queued COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/server/stream_queued.py ${OXL_BIN}
         ${M}/stories260K.gguf)
set_tests_properties(server-stream-queued PROPERTIES TIMEOUT 300)

# Leak checks of run, quantize and a short server session under valgrind (tests/cli/leak.sh). The
# sanitizer build (build-asan) runs the same commands under LeakSanitizer instead.
find_program(OXL_VALGRIND valgrind)
if(OXL_VALGRIND AND NOT OXL_SANITIZE)
  foreach(what run quantize server)
    add_test(NAME leak-${what} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/leak.sh ${what} ${OXL_BIN} ${PROJECT_SOURCE_DIR})
    set_tests_properties(leak-${what} PROPERTIES TIMEOUT 600 LABELS leak)
  endforeach()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/sampling_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/value_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/tolerances_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/layers_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/qflags_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/fp4_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/iq2_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/imatrix_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/shlib_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/cliconv_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/../jsmod_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/pybind_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/api21_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/splitgguf_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/samplers_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/deltanet_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/archnope_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/arch_moe3_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/arch_dense_a_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/hybrid_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/grammar_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/structured_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/gemma3n_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/encoders_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/specdec_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/kvstate_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/toolcalls_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/lora_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/srvnative_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/benchdepth_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/toolstream_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/ctxshift_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/srvspec_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/lazygram_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/specpair_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/anthropic_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/rbudget_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/rbudget2_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/deploy_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/mm_embd_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/webui_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/mm_prep_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/models_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/mm_clip_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/ws_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/mm_cli_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/mm_srv_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/mmsrv_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/vulkan_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/vkq_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/vkmoe_tests.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/vktile_tests.cmake)
