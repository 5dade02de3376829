/* Perplexity and KL divergence over a token stream, as llama.cpp's tools/perplexity/perplexity.cpp:
 * the text is cut into chunks of n_ctx tokens (the first replaced by BOS when the vocabulary adds
 * one), each chunk is evaluated from an empty cache, and the tokens after the first half of each
 * window are scored. The KL-divergence base file is llama.cpp's own layout:
 *   "_logits_", u32 n_ctx, i32 n_vocab, i32 n_chunk, i32 tokens[n_ctx*n_chunk],
 *   then per chunk and scored token: f32 scale, f32 min_log_prob, u16 q[n_vocab rounded up to even],
 *   log p_i = scale*q_i + min_log_prob. */
#ifndef OXL_PERPLEXITY_H
#define OXL_PERPLEXITY_H

#include "oxillama.h"

#include <stdio.h>

typedef struct oxl_ppl_stats {
    int n_chunk;
    size_t count;        /* scored tokens */
    double ppl, ppl_unc; /* exp(mean NLL) and its uncertainty */
    /* with a base file: */
    double kld, kld_unc;           /* mean KL(base || this) */
    double same_top, same_top_unc; /* fraction of tokens whose argmax equals the base's */
    double ppl_base, ppl_base_unc;
    double rms_dp, rms_dp_unc; /* RMS of Δp of the correct token */
    double kld_max;
} oxl_ppl_stats;

typedef struct oxl_ppl_params {
    int32_t n_ctx;         /* window; ignored with a base file to compare (it has its own) */
    const char *base_path; /* NULL: none */
    bool compare;          /* true: read base_path and compare; false: write it (when set) */
    FILE *progress;        /* per-chunk lines as llama.cpp prints them, or NULL */
    /* called once on the new context before the first window (adapters: --lora, --control-vector);
     * non-zero stops with an error. NULL: none */
    int (*setup)(void *user, oxl_ctx *ctx);
    void *setup_user;
} oxl_ppl_params;

/* text: UTF-8 input (unused when comparing: the base file holds the tokens). A context is made from
 * cp with n_ctx set to the window and n_batch to cp->n_batch (at most the window; <= 0: the window). Returns 0, or -1
 * with err (a malformed base file is named with the field and byte offset at fault). */
int oxl_perplexity(const oxl_model *model, const oxl_ctx_params *cp, const char *text, size_t len,
                   const oxl_ppl_params *p, oxl_ppl_stats *out, oxl_error *err);

#endif
