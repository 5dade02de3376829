/* Computing an importance matrix over a text, as llama.cpp's llama-imatrix
 * (tools/imatrix/imatrix.cpp compute_imatrix): the text's tokens (BOS added when the vocabulary
 * adds one) are cut into chunks of n_ctx tokens, the first of each replaced by BOS; each decode
 * takes n_seq = max(1, n_batch / n_ctx) chunks as parallel sequences from an empty cache, with
 * logits for every token, split into passes as llama.cpp's KV cache splits the batch into
 * micro-batches of n_ubatch tokens (llama_batch_allocr: split_simple for one sequence, else
 * split_equal: the same number of tokens of each sequence, sequence after sequence). The products
 * of the passes feed an oxl_imatrix_acc (src/quantize/imatrix_collect.h). The perplexity of each
 * chunk's second half is reported as llama-imatrix prints it. */
#ifndef OXL_IMATRIX_RUN_H
#define OXL_IMATRIX_RUN_H

#include "imatrix_collect.h"
#include "oxillama.h"

#include <stdio.h>

typedef struct oxl_imatrix_params {
    int32_t n_ctx;    /* chunk length in tokens (-c; llama-imatrix's default 512) */
    int32_t n_batch;  /* tokens per decode (-b; default 2048): n_batch / n_ctx chunks at once */
    int32_t n_ubatch; /* tokens per forward pass (-ub; default 512) */
    int32_t n_chunks; /* most chunks to process (--chunks); < 0: all */
    bool compute_ppl; /* print the perplexity (false: --no-ppl) */
    FILE *info;       /* llama-imatrix's informational lines (tokenizing, chunk count, ETA), or NULL */
    FILE *progress;   /* the running perplexity "[i]ppl," after each chunk, or NULL */
} oxl_imatrix_params;

typedef struct oxl_imatrix_result {
    int32_t n_chunk;     /* chunks processed */
    int32_t n_seq;       /* chunks per decode */
    double ppl, ppl_unc; /* with compute_ppl; ppl_unc 0 when the variance is not positive (no tokens scored) */
} oxl_imatrix_result;

/* Runs the model over text (len bytes) with acc observing every product (oxl_matmul_set_observer on
 * the calling thread, removed before returning). cp gives the threads, cache types and attention;
 * its n_ctx, n_batch and n_seq_max are set from p. Returns 0, or -1 with err: a bad n_ctx, a text
 * shorter than 2 chunks (llama-imatrix's limit), an embedding model, a failed decode or a
 * non-finite sum. */
int oxl_imatrix_compute(const oxl_model *model, const oxl_ctx_params *cp, const char *text, size_t len,
                        const oxl_imatrix_params *p, oxl_imatrix_acc *acc, oxl_imatrix_result *out, oxl_error *err);

#endif
