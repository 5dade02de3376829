# oxillama bench -d (llama-bench's --n-depth): for each depth the pp then the tg tests, named as
# llama-bench names them ("pp16 @ d32"; no suffix at depth 0), n_depth in the CSV and JSON fields;
# a depth + test longer than a KV cache can hold is refused before any run (t/s values not checked).
oxl_output_test(bench-depth-md ok "\\| +pp16 \\| +[0-9.]+ ± [0-9.]+ \\|\n[^\n]*\\| +tg4 \\| +[0-9.]+ ± [0-9.]+ \\|\n[^\n]*\\| +pp16 @ d32 \\| +[0-9.]+ ± [0-9.]+ \\|\n[^\n]*\\| +tg4 @ d32 \\| +[0-9.]+ ± [0-9.]+ \\|\n\nbuild: oxillama"
  ${OXL_BIN} bench -m ${M}/stories260K.gguf -p 16 -n 4 -d 0,32 -r 1 -t 1 --log-disable)
oxl_output_test(bench-depth-csv ok ",n_prompt,n_gen,n_depth,[^\n]*\n[^\n]*,\"16\",\"0\",\"0\",[^\n]*\n[^\n]*,\"0\",\"4\",\"0\",[^\n]*\n[^\n]*,\"16\",\"0\",\"32\",[^\n]*\n[^\n]*,\"0\",\"4\",\"32\",[^\n]*\n$"
  ${OXL_BIN} bench -m ${M}/stories260K.gguf -p 16 -n 4 -d 0,32 -r 2 -t 1 -o csv --log-disable)
oxl_output_test(bench-depth-json ok "\"n_prompt\": 0, \"n_gen\": 4, \"n_depth\": 40,"
  ${OXL_BIN} bench -m ${M}/stories260K.gguf -p 0 -n 4 -d 40 -r 1 -t 1 -o json)
oxl_output_test(bench-depth-too-long refusal "error: tg4 @ d16777213 needs a context of 16777218 tokens, more than the 16777216 a KV cache can hold"
  ${OXL_BIN} bench -m ${M}/stories260K.gguf -p 0 -n 4 -d 0,16777213 -r 1)
