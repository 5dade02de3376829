# olmoe, ernie4_5-moe, glm4moe, hunyuan-dense, hunyuan-moe, minimax-m2 (golden/arch/; their logits
# goldens run in golden-arch-<isa>). Included from cli_tests.cmake, whose OXL_BIN and G it uses.

# `oxillama info` on glm4moe: 3 of the 4 blocks run (the NextN/MTP block is loaded unused), sigmoid
# routing renormalised then x2.5, one shared expert, the exp_probs_b selection bias; exit status 0.
oxl_output_test(info-arch-glm4moe ok
  "shape +n_embd 64, n_layer 3, [^\n]*\n  nextn/mtp layers 1 after the 3 layers \\(blk\\.3\\.\\.\\): loaded unused, not run\n.*rope +neox, n_rot 8, freq_base 1e\\+06.*routing +sigmoid, top-k weights renormalised, weights x 2\\.5\n  shared experts +n_ff 32 [^\n]*\n  leading layers +1 \\(dense FFN\\)\n  expert layers +1 2\n  selection bias +exp_probs_b"
  ${OXL_BIN} info ${G}/arch/glm4moe.gguf)

# hunyuan-dense: rope.scaling.alpha 4 raises the base 1e4 to 48760.5 at load (llama.cpp prints
# freq_base_train = 48760.5); the q/k norms act after RoPE.
oxl_output_test(info-arch-hunyuan ok
  "rope +neox, n_rot 16, freq_base 48760\\.5, [^\n]*\n  rope alpha +4: [^\n]*\n  norm +rms, eps 1e-05; q/k norms per head, after RoPE\n"
  ${OXL_BIN} info ${G}/arch/hunyuan-dense.gguf)

# A glm4moe file whose nextn_predict_layers is not below block_count is refused naming the key
# (`oxillama run`: tests/cli/check_bad_nextn.sh checks exit status 1 and the message; the
# unpatched file runs).
add_test(NAME arch-glm4moe-bad-nextn COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_bad_nextn.sh ${OXL_BIN}
         ${G}/arch/glm4moe.gguf ${CMAKE_CURRENT_BINARY_DIR}/arch-glm4moe-bad-nextn)
