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
