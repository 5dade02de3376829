# oxillama info shows the graph parameters of the NoPE / temperature / chunked-attention families
# (golden/arch/README.md): llama4's chunked layers 0-2 and 4 with llama.cpp's hard-coded chunk of
# 8192, its NoPE layer 3, the temperature (scale 0.1, offset 1, floor 8192) on that layer and the
# routing that weights the expert input; exaone4's global layers (every 4th of 64) without RoPE.
oxl_output_test(info-arch-llama4 ok
  "chunked attn +chunk 8192 on layers 0 1 2 4\n.*no-rope layers +3\n  qk l2 norm [^\n]*after RoPE[^\n]*\n  attn temperature +q \\*= 1 \\+ 0\\.1 ln\\(1 \\+ floor\\(\\(pos \\+ 1\\) / 8192\\)\\) on the no-rope layers\n.*routing +sigmoid, chosen on the raw logits, weights scale the expert input\n.*expert layers +1 3\n"
  ${OXL_BIN} info ${G}/arch/llama4.gguf)
oxl_output_test(info-arch-exaone4 ok
  "sliding window +n_swa 8 on layers 0 1 2 4 5 6 8 .* 60 61 62\n.*no-rope layers +3 7 11 15 19 23 27 31 35 39 43 47 51 55 59 63\n"
  ${OXL_BIN} info ${G}/arch/exaone4.gguf)
