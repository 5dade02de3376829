# oxillama info on the hybrid families (arch/hybrid.c): the mixer each layer runs, as the per-layer
# arrays pick it (golden/arch/README.md: nemotron_h's pattern M F M A F M with Mamba-2 in 2 groups;
# lfm2's head_count_kv [0,0,2,0,2] marking conv layers, short conv kernel l_cache 3).
oxl_output_test(info-arch-nemotron-h ok
  "layer mixers +mamba2 mlp mamba2 attention mlp mamba2\n.*ssm +mamba2: d_inner 128, d_state 16, d_conv 4, heads 8, 2 groups"
  ${OXL_BIN} info ${G}/arch/nemotron_h.gguf)
oxl_output_test(info-arch-lfm2 ok
  "layer mixers +shortconv shortconv attention shortconv attention\n.*short conv +l_cache 3 \\(state of 2 columns\\).*\n  output +tied to token_embd; final norm token_embd_norm\\.weight"
  ${OXL_BIN} info ${G}/arch/lfm2.gguf)
