# Encoders: oxillama embed against llama-embedding's printed output on golden/arch/bert.gguf and
# nomic-bert.gguf (golden/embed: cases.txt and llama.cpp d32676d's outputs; check_embed.py checks
# the exit status, the text and every number within its bound).
add_test(NAME embed-llama COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_embed.py ${OXL_BIN} ${G}/embed ${G}/arch)
oxl_output_test(embed-bad-pooling refusal "--pooling 'sum': expected none, mean, cls, last or rank"
                ${OXL_BIN} embed -m ${G}/arch/bert.gguf -p hi --pooling sum)
# /v1/rerank (and /v1/reranking, /rerank, /reranking) of oxillama serve --rerank on
# golden/rerank/reranker.gguf against llama-server's replies (golden/rerank/expected.json): status,
# shape, ordering, texts, scores within 1e-4, error messages; 501 without --rerank.
add_test(NAME server-rerank COMMAND ${OXL_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/server/check_rerank.py ${OXL_BIN}
                                    ${G}/rerank)
# oxillama gguf-split (split by tensors, by size, --no-tensor-first-split, --dry-run, merge) and
# quantize --keep-split against llama-gguf-split's and llama-quantize's files: golden/split/cases.tsv
# run, the sha256 of every file written and of split's stdout as golden/split/expected.tsv, exit
# statuses checked (tests/cli/check_gguf_split.py).
add_test(NAME gguf-split-llama COMMAND ${OXL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_gguf_split.py ${OXL_BIN}
                                       ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/gguf-split-llama)
oxl_output_test(gguf-split-merge-whole refusal "input file does not contain split.count metadata"
                ${OXL_BIN} gguf-split --merge ${M}/stories260K.gguf ${CMAKE_CURRENT_BINARY_DIR}/never-written.gguf)
oxl_output_test(gguf-split-merge-exists refusal "gguf_merge: output file .*stories260K.gguf already exists"
                ${OXL_BIN} gguf-split --merge ${G}/split/stories260K-Q4_0-00001-of-00005.gguf ${M}/stories260K.gguf)
oxl_output_test(gguf-split-bad-count refusal "--split-max-tensors '0': expected a positive number of tensors"
                ${OXL_BIN} gguf-split --split-max-tensors 0 ${M}/stories260K.gguf ${CMAKE_CURRENT_BINARY_DIR}/never)
# deepseek2 files converted before llama.cpp split attn_kv_b load as llama.cpp loads them (its
# non-MLA branch): perplexity and KL divergence against llama-perplexity's runs on such a file.
add_test(NAME deepseek2-legacy COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_deepseek2_legacy.sh ${OXL_BIN} ${G})
