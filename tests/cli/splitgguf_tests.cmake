# Split GGUF models (golden/split: llama-gguf-split's parts, llama.cpp d32676d), loaded from their
# first part. llama.cpp's goldens on the split files: the greedy tokens and logits of
# stories260K-Q4_0 (32 tokens) and of gpt-oss-MXFP4_MOE (golden/arch), exit status checked.
set(OXL_SPLIT ${G}/split)
oxl_output_test(split-golden-stories260K ok "greedy  32/32 tokens equal\n# 3 passed, 0 failed"
                ${OXL_BIN} golden -m ${OXL_SPLIT}/stories260K-Q4_0-00001-of-00005.gguf
                ${G}/models/stories260K-Q4_0.once.gguf)
oxl_output_test(split-golden-arch ok "greedy  16/16 tokens equal\n# 3 passed, 0 failed"
                ${OXL_BIN} golden -m ${OXL_SPLIT}/gpt-oss-MXFP4_MOE-00001-of-00005.gguf
                ${G}/arch/gpt-oss-MXFP4_MOE.logits.gguf)
# llama.cpp's greedy text (golden/run/once.expected) on stories260K.gguf split at test time by
# tests/cli/split_gguf.py (checked to write llama-gguf-split's bytes); run (mmap and --no-mmap)
# prints the whole file's greedy text, info names the parts, and crafted bad splits get their named
# error (tests/cli/check_split.py, exit statuses checked).
add_test(NAME split-files COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_split.py ${OXL_BIN} ${G} ${M}
                                  ${CMAKE_CURRENT_BINARY_DIR}/split-files)
