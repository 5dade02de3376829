# gemma3n: oxillama info prints the graph's own mechanisms (golden/arch/README.md, gemma3n: 4 AltUp
# streams with stream 0 active, LAuReL rank 64, 256 per-layer inputs per layer stored f16, activation
# sparsity on layers 0-9, layers 20 and 21 reading the caches of layers 18 and 19).
oxl_output_test(info-arch-gemma3n ok "ffn +geglu. activation sparsity \\(gaussian top-k, std x 1\\.64485\\) on layers 0-9\n  altup +4 streams, active stream 0\n  laurel +rank 64\n  per-layer embd +256 per layer and token \\(per_layer_token_embd f16\\)\n  kv sharing +from layer 20: 20 reads 18, 21 reads 19\n"
  ${OXL_BIN} info ${G}/arch/gemma3n.gguf)
