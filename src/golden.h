/* Golden parity checks: compare oxillama against reference files written by llama.cpp
 * (layouts in golden/README.md). One runner, `oxillama golden`, dispatches on the file's
 * `golden.kind` through a table of checkers; tests call the same checkers.
 */
#ifndef OXL_GOLDEN_H
#define OXL_GOLDEN_H

#include "gguf.h"

#include <stdbool.h>
#include <stdio.h>

/* Tally of checks; every check prints one line "PASS|FAIL  <what>  <measured error>" to out. */
typedef struct oxl_golden_report {
    FILE *out;      /* NULL: print nothing */
    int n_pass;
    int n_fail;
} oxl_golden_report;

/* Records one check and prints its line (printf-style description). */
void oxl_golden_line(oxl_golden_report *r, bool pass, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* golden.kind = quant: dequantization (bit-exact), reference quantization (byte-identical),
 * activation quantization and vec_dot (relative 1e-5 of sum |terms|), for every ISA cell this CPU
 * supports. Returns 0 when it could run (failures are counted in r), -1 with err on unusable files. */
int oxl_golden_quant(const oxl_gguf *g, oxl_golden_report *r, oxl_error *err);

/* golden.kind = logits: runs model_path on `tokens`, compares `logits` (argmax at every position,
 * max |Δ| relative to the logit range) and the greedy continuation `greedy`. The bound on
 * max|Δ|/range is the golden file's line in tolerances.tsv beside it (golden/README.md,
 * "Tolerances"); without such a table, 1e-3; a table without a line for the file is an error. */
int oxl_golden_logits(const oxl_gguf *g, const char *model_path, oxl_golden_report *r, oxl_error *err);

/* golden.kind = embeddings (an encoder model of golden/arch: bert, nomic-bert): runs model_path on
 * `tokens` in one batch, without flash attention, and compares `embd` (the pooled embedding with the
 * model's pooling, which must be golden.pooling) and `embd_tokens` (n_embd x n_tokens, pooling none)
 * by max |Δ| relative to the largest |value| of the reference row, each within its bound in the
 * tolerances.tsv beside the file (lines "<file>:pooled" and "<file>:tokens"; without a table, 3.8e-5). */
int oxl_golden_embeddings(const oxl_gguf *g, const char *model_path, oxl_golden_report *r, oxl_error *err);

/* llama.cpp's tokenizer fixtures (golden/tokenizer: <vocab>.gguf with <vocab>.gguf.inp and .out, the
 * layout of llama.cpp tests/test-tokenizer-0.cpp): each string, tokenized without BOS/EOS and without
 * parsing special tokens, must give the ids on its line (one check per string), and the pieces of
 * its ids must give the string back (one more check per string, except for WordPiece, which is
 * lossy, and text that is not UTF-8). Returns 0 when the files could be read (failures are counted
 * in r), -1 with err otherwise. */
int oxl_golden_tokenizer(const char *vocab_path, oxl_golden_report *r, oxl_error *err);

/* Chat templates (golden/README.md "chat-templates"): renders every <model>/template.jinja of dir
 * with every conversation of dir/cases.json and compares with <model>/<case>.txt or .error. */
int oxl_golden_chat_dir(const char *dir, oxl_golden_report *r, oxl_error *err);

/* Opens path, reads golden.kind and runs the matching checker. model_path may be NULL where the
 * kind needs no model (or names it in golden.model, looked up beside the golden file). */
int oxl_golden_run_file(const char *path, const char *model_path, oxl_golden_report *r, oxl_error *err);

#endif
