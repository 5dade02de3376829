# oxillama info shows the layer kinds and delta-net heads of a gated delta-net hybrid
# (golden/arch/README.md, qwen3next: layers 0-2 delta net, layer 3 full attention; 2 key and 4 value
# heads of 16, value head h reading key head h / 2; fused ssm_ba).
oxl_output_test(info-arch-deltanet ok "layer kinds +R R R A \\(R delta net, A full attention every 4\\)\n.*delta net +gated delta net: 2 key heads, 4 value heads of 16 \\(value head h reads key head h / \\(n_v / n_k\\)\\), conv kernel 4, fused ssm_ba"
  ${OXL_BIN} info ${G}/arch/qwen3next.gguf)
