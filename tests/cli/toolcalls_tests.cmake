# --reasoning-format (run and serve): only none, deepseek and auto are accepted.
oxl_output_test(reasoning-format-run-bad refusal "--reasoning-format: 'bogus' is not one of none, deepseek, auto"
  ${OXL_BIN} run -m ${M}/stories260K.gguf --reasoning-format bogus -p hi -n 1)
oxl_output_test(reasoning-format-serve-bad refusal "--reasoning-format: 'bogus' is not one of none, deepseek, auto"
  ${OXL_BIN} serve -m ${M}/stories260K.gguf --reasoning-format bogus --port 0)
oxl_output_test(reasoning-format-run-none ok "Once upon a time"
  ${OXL_BIN} run -m ${M}/stories260K.gguf --reasoning-format none -p "Once upon a time" -n 4 --temp 0)
