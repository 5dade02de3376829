# oxillama run with images (--mmproj, --image; -cnv's /image; a prompt without a marker): llama.cpp's
# greedy tokens of the golden/mm goldens, printed by the command line (tests/cli/check_mm_run.py),
# and the refusals, each an exit status 1 with the error named. Included from cli_tests.cmake;
# uses OXL_BIN, G, M and OXL_PYTHON3.
set(oxl_mm_img ${G}/mm/image.png)
# gemma3's 8th greedy token is the lone UTF-8 lead byte <0xF7>: the chat view must print it at the
# end of the reply as run does (the streaming detokenizer's held bytes are flushed).
foreach(pair llava15:llama llava-next:llama qwen2vl:qwen2vl qwen25vl:qwen2vl gemma3:gemma3)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 id)
  list(GET pair 1 text_model)
  foreach(mode run chat nomarker)
    add_test(NAME mm-${mode}-${id}
             COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_mm_run.py ${OXL_BIN} ${G}/mm/${id}.golden.gguf
                     ${G}/arch/${text_model}.gguf ${G}/mm/${id}.mmproj.gguf ${oxl_mm_img} $<$<NOT:$<STREQUAL:${mode},run>>:${mode}>)
  endforeach()
endforeach()

set(oxl_mm_run ${OXL_BIN} run -m ${G}/arch/llama.gguf -n 1 --temp 0)
set(oxl_mm_proj --mmproj ${G}/mm/llava15.mmproj.gguf)
oxl_output_test(mm-run-no-mmproj refusal "error: --image needs --mmproj" ${oxl_mm_run} --image ${oxl_mm_img} -p x)
oxl_output_test(mm-run-missing-image refusal "error: --image: image: [^:]*/no-such-image.png: cannot open"
                ${oxl_mm_run} ${oxl_mm_proj} --image ${CMAKE_CURRENT_BINARY_DIR}/no-such-image.png -p x)
# the test image cut after 1000 of its 2823 bytes
oxl_output_test(mm-run-truncated-png refusal "error: --image: [^:]*/mm-truncated.png: image: PNG: the data ends early"
                sh -c "head -c 1000 \"$1\" > \"$2\" && shift 2 && exec \"$@\"" sh ${oxl_mm_img}
                ${CMAKE_CURRENT_BINARY_DIR}/mm-truncated.png ${oxl_mm_run} ${oxl_mm_proj}
                --image ${CMAKE_CURRENT_BINARY_DIR}/mm-truncated.png -p x)
oxl_output_test(mm-run-markers refusal "error: the prompt has more image markers '<__media__>' than the 1 image given"
                ${oxl_mm_run} ${oxl_mm_proj} --image ${oxl_mm_img} -p "<__media__> and <__media__>")
oxl_output_test(mm-run-n-embd refusal "the projector makes embeddings of 64 values, the text model takes 256 \\(n_embd\\)"
                ${OXL_BIN} run -m ${M}/synth-small-Q1_0.gguf ${oxl_mm_proj} --image ${oxl_mm_img} -p x -n 1)
oxl_output_test(mm-run-audio refusal "error: --audio a.wav: audio input is not supported"
                ${oxl_mm_run} ${oxl_mm_proj} --audio a.wav -p x)
oxl_output_test(mm-run-context-shift refusal "error: --mmproj: --context-shift is not supported with images"
                ${oxl_mm_run} ${oxl_mm_proj} --image ${oxl_mm_img} --context-shift -p x)
oxl_output_test(mm-run-prompt-cache refusal "error: --mmproj: --prompt-cache is not supported with images"
                ${oxl_mm_run} ${oxl_mm_proj} --image ${oxl_mm_img} --prompt-cache ${CMAKE_CURRENT_BINARY_DIR}/mm.state -p x)
oxl_output_test(mm-run-spec refusal "error: --mmproj: speculative decoding \\(-md, --spec-type\\) is not supported"
                ${oxl_mm_run} ${oxl_mm_proj} --image ${oxl_mm_img} --spec-type ngram-simple -p x)
oxl_output_test(mm-run-no-mmproj-offload ok "--no-mmproj-offload ignored: this engine runs on the CPU"
                ${oxl_mm_run} ${oxl_mm_proj} --image ${oxl_mm_img} --no-mmproj-offload -p x)
oxl_output_test(mm-chat-image-no-mmproj ok "error: /image needs --mmproj"
                sh -c "printf '/image x.png\\n/exit\\n' | \"$@\"" sh ${oxl_mm_run} -cnv --chat-template chatml)
