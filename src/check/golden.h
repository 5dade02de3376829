/* Golden parity checks: compare oxillama against reference files written by llama.cpp
 * (layouts in golden/README.md). One runner, `oxillama golden`, dispatches on the file's
 * `golden.kind` through a table of checkers; tests call the same checkers.
 */
#ifndef OXL_GOLDEN_H
#define OXL_GOLDEN_H

#include "gguf.h"
#include "golden_chat.h"
#include "golden_mm.h"
#include "golden_quant.h"
#include "golden_report.h"
#include "golden_tokenizer.h"

#include <stdbool.h>
#include <stdio.h>

/* golden.kind = logits: runs model_path on `tokens`, compares `logits` (argmax at every position,
 * max |Δ| relative to the logit range) and the greedy continuation `greedy`. The bound on
 * max|Δ|/range is the golden file's line in tolerances.tsv beside it (golden/README.md,
 * "Tolerances"); without such a table, 1e-3; a table without a line for the file is an error. */
/* The offload of the models the golden checks load (oxillama golden -ngl, --device): oxl_model_params
 * n_gpu_layers and main_gpu; default 0 and -1. */
void oxl_golden_set_gpu(int32_t n_gpu_layers, int32_t main_gpu);
int oxl_golden_logits(const oxl_gguf *g, const char *model_path, oxl_golden_report *r, oxl_error *err);

/* golden.kind = embeddings (an encoder model of golden/arch: bert, nomic-bert): runs model_path on
 * `tokens` in one batch, without flash attention, and compares `embd` (the pooled embedding with the
 * model's pooling, which must be golden.pooling) and `embd_tokens` (n_embd x n_tokens, pooling none)
 * by max |Δ| relative to the largest |value| of the reference row, each within its bound in the
 * tolerances.tsv beside the file (lines "<file>:pooled" and "<file>:tokens"; without a table, 3.8e-5). */
int oxl_golden_embeddings(const oxl_gguf *g, const char *model_path, oxl_golden_report *r, oxl_error *err);

/* Opens path, reads golden.kind and runs the matching checker. model_path may be NULL where the
 * kind needs no model (or names it in golden.model, looked up beside the golden file; multimodal:
 * the text model, else golden.text_model_path). */
int oxl_golden_run_file(const char *path, const char *model_path, oxl_golden_report *r, oxl_error *err);

#endif
