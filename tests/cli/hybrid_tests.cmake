# oxillama info on the hybrid families (arch/hybrid.c): the mixer each layer runs, as the per-layer
# arrays pick it (golden/arch/README.md: nemotron_h's pattern M F M A F M with Mamba-2 in 2 groups;
# lfm2's head_count_kv [0,0,2,0,2] marking conv layers, short conv kernel l_cache 3).
oxl_output_test(info-arch-nemotron-h ok
  "layer mixers +mamba2 mlp mamba2 attention mlp mamba2\n.*ssm +mamba2: d_inner 128, d_state 16, d_conv 4, heads 8, 2 groups"
  ${OXL_BIN} info ${G}/arch/nemotron_h.gguf)
oxl_output_test(info-arch-lfm2 ok
  "layer mixers +shortconv shortconv attention shortconv attention\n.*short conv +l_cache 3 \\(state of 2 columns\\).*\n  output +tied to token_embd; final norm token_embd_norm\\.weight"
  ${OXL_BIN} info ${G}/arch/lfm2.gguf)
# The fused attn_qkv that llama.cpp's create_tensor_qkv accepts in place of attn_q/k/v: falcon-h1
# rewritten with Q, K, V stacked in one tensor (tests/cli/fuse_qkv.py) still gives llama.cpp's
# logits and greedy tokens of the separate-projection file.
oxl_output_test(golden-falcon-h1-fused-qkv ok
  "tensors: 33\n.*blk\\.0\\.attn_qkv\\.weight +f32 +64 x 128 .*PASS  logits argmax  0/48 positions differ\nPASS  logits max\\|Δ\\|/range [^\n]*\nPASS  greedy  16/16 tokens equal\n# 3 passed, 0 failed"
  sh -c "${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/fuse_qkv.py ${G}/arch/falcon-h1.gguf ${CMAKE_CURRENT_BINARY_DIR}/falcon-h1-fused.gguf && ${OXL_BIN} info ${CMAKE_CURRENT_BINARY_DIR}/falcon-h1-fused.gguf && ${OXL_BIN} golden -m ${CMAKE_CURRENT_BINARY_DIR}/falcon-h1-fused.gguf ${G}/arch/falcon-h1.logits.gguf")
