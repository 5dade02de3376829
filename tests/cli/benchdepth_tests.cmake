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

# oxillama bench --batched (llama-batched-bench): its header and columns, one row per PP x TG x B
# in that nesting (B sequences in one context), N_KV = B x (PP + TG); rows whose sequences do not
# fit their share of -c are left out with a note; jsonl one object per row; -pps refused with its reason (timings not checked).
set(OXL_BB_ROW " +[0-9.]+ \\| +[0-9.]+ \\| +[0-9.]+ \\| +[0-9.]+ \\| +[0-9.]+ \\| +[0-9.]+ \\|\n")
oxl_output_test(bench-batched-md ok "\\|    PP \\|     TG \\|    B \\|   N_KV \\|   T_PP s \\| S_PP t/s \\|   T_TG s \\| S_TG t/s \\|      T s \\|    S t/s \\|\n\\|-------\\|--------\\|------\\|--------\\|----------\\|----------\\|----------\\|----------\\|----------\\|----------\\|\n\\|    16 \\|      4 \\|    1 \\|     20 \\|${OXL_BB_ROW}\\|    16 \\|      4 \\|    2 \\|     40 \\|${OXL_BB_ROW}\\|    16 \\|      4 \\|    4 \\|     80 \\|${OXL_BB_ROW}\\|    32 \\|      4 \\|    1 \\|     36 \\|${OXL_BB_ROW}\\|    32 \\|      4 \\|    2 \\|     72 \\|${OXL_BB_ROW}\\|    32 \\|      4 \\|    4 \\|    144 \\|${OXL_BB_ROW}\n$"
  ${OXL_BIN} bench --batched -m ${M}/stories260K.gguf -npp 16,32 -ntg 4 -npl 1,2,4 -t 1)
oxl_output_test(bench-batched-jsonl ok "^[{]\"n_kv_max\": 80, [^\n]*\"pp\": 16, \"tg\": 4, \"pl\": 1, \"n_kv\": 20, [^\n]*[}]\n[{][^\n]*\"pp\": 16, \"tg\": 4, \"pl\": 4, \"n_kv\": 80, [^\n]*[}]\nbench: PP 32 \\+ TG 4 skipped: one sequence holds 20 tokens \\(-c 80 / 4\\)\n$"
  ${OXL_BIN} bench --batched -m ${M}/stories260K.gguf -npp 16,32 -ntg 4 -npl 1,4 -c 80 -tgs --output-format jsonl -t 1)
oxl_output_test(bench-batched-pps refusal "error: -pps: a prompt shared between sequences needs a copy"
  ${OXL_BIN} bench --batched -m ${M}/stories260K.gguf -npp 16 -ntg 4 -npl 1 -pps)

# bench/compare.py --depths: one table per depth, rows matched on n_depth, named "pp32 @ d64",
# ratios of the two engines' rates (stand-in engines with known rates: tests/cli/check_compare_depths.py).
add_test(NAME bench-compare-depths COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_compare_depths.py
                                           ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/bench-compare-depths)
