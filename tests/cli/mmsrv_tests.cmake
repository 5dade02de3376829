# Images on the server's other routes, the image cache, Qwen2-VL in the server, and the image
# token limits (tests/server/vision_routes.sh), and --image-min-tokens / --image-max-tokens of
# `oxillama run`: the prompt's rows are llama.cpp's calc_size_preserved_ratio sizes. Included from
# cli_tests.cmake; uses OXL_BIN and G.
add_test(NAME server-vision-routes COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/vision_routes.sh ${OXL_BIN}
                                           ${CMAKE_SOURCE_DIR})
set_tests_properties(server-vision-routes PROPERTIES TIMEOUT 300)

# The 44x30 golden image under Qwen2-VL (align 28 = patch 14 x merge 2); the prompt is BOS +
# "<|vision_start|>" (14 tokens), the image rows, "<|vision_end|>\nDescribe:" (20 tokens):
# - default 8..4096 tokens: 12 rows (golden/mm/README.md): 46
# - --image-min-tokens 64: min_pixels 64 x 784 = 50176 > 28 x 56 (the rounded size), so
#   beta = sqrt(50176 / 1320) = 6.16540, h = ceil(30 x beta / 28) x 28 = 7 x 28, w = ceil(44 x beta / 28)
#   x 28 = 10 x 28: 10 x 7 = 70 rows: 14 + 70 + 20 = 104
# - --image-min-tokens 2 --image-max-tokens 4: 28 x 56 = 1568 lies in [1568, 3136]: 2 x 1 = 2 rows: 36
# - LLaVA-1.5 (mlp, fixed 42x42): the limits are ignored, as llama.cpp does: 19
set(oxl_mm_q ${OXL_BIN} run -m ${G}/arch/qwen2vl.gguf --mmproj ${G}/mm/qwen2vl.mmproj.gguf
    --image ${G}/mm/image.png -n 1 --temp 0 -p "<__media__>\nDescribe:")
oxl_output_test(mm-run-image-min-tokens ok "prompt 104 tokens" ${oxl_mm_q} --image-min-tokens 64)
oxl_output_test(mm-run-image-max-tokens ok "prompt 36 tokens" ${oxl_mm_q} --image-min-tokens 2 --image-max-tokens 4)
oxl_output_test(mm-run-image-tokens-default ok "prompt 46 tokens" ${oxl_mm_q})
oxl_output_test(mm-run-image-min-tokens-mlp ok "prompt 19 tokens"
                ${OXL_BIN} run -m ${G}/arch/llama.gguf --mmproj ${G}/mm/llava15.mmproj.gguf --image ${G}/mm/image.png
                -n 1 --temp 0 -p "<__media__>\nDescribe:" --image-min-tokens 64)
oxl_output_test(mm-run-image-tokens-conflict refusal
                "image_max_pixels \\(39200, image_max_tokens 50\\) is less than image_min_pixels \\(78400, image_min_tokens 100\\)"
                ${oxl_mm_q} --image-min-tokens 100 --image-max-tokens 50)
