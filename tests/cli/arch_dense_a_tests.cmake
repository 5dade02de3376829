# glm4, seed_oss, ernie4_5, apertus: their logits goldens run in golden-arch-<isa> (golden/arch/).
# `oxillama info` shows each family's distinctive graph parameters, as llama.cpp's print_info and the
# files' keys give them: glm4's partial normal RoPE (n_rot 8 of head_dim 16, rope type 0) and sandwich
# norms, seed_oss's head_dim 32 from key_length (n_embd_head_k = 32 with n_embd 64 and 4 heads),
# apertus's per-layer xIELU parameters (the file's xielu.alpha_p/alpha_n/beta/eps arrays).
oxl_output_test(info-arch-glm4 ok
  "rope +normal, n_rot 8, freq_base 10000,[^\n]*\n  norm +rms, eps 1e-05; post-attention and post-FFN norms\n  ffn +swiglu \\(fused gate;up\\)"
  ${OXL_BIN} info ${G}/arch/glm4.gguf)
oxl_output_test(info-arch-seed-oss ok "attention +n_head 4, n_head_kv 2, head_dim 32,[^\n]*\n  rope +neox, n_rot 32, freq_base 1e\\+07"
  ${OXL_BIN} info ${G}/arch/seed_oss.gguf)
oxl_output_test(info-arch-apertus ok
  "ffn +xielu \\(no gate\\), sequential residual\n  xielu +layer 0: alpha_p 0\\.203382, alpha_n -1\\.05023, beta 0\\.5, eps -1e-06\n +layer 1: alpha_p 0\\.503382, alpha_n -1\\.45023, beta 0\\.5, eps -1e-06\n"
  ${OXL_BIN} info ${G}/arch/apertus.gguf)
# Crafted bad apertus and glm4 files (a missing or mistyped xIELU key, a NaN parameter, a missing
# post-FFN norm, too many NextN layers) are refused with exit status 1..125 and a message naming the
# file and the key or tensor (tests/cli/check_arch_bad_files.py).
add_test(NAME arch-bad-files COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_arch_bad_files.py ${OXL_BIN} ${G}
                                     ${CMAKE_CURRENT_BINARY_DIR}/arch-bad-files)
