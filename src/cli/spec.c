/* oxillama run with speculative decoding (-md, --spec-type): llama.cpp's speculative-simple loop
 * (examples/speculative-simple/speculative-simple.cpp) with common/speculative.cpp's draft-simple
 * and ngram-simple drafters (the library's oxl_draft_propose and oxl_ngram_draft). Each round drafts up to N tokens
 * after the last sampled one, has the target evaluate the last token and the draft in one decode with every position's
 * logits, samples position after position with the run's sampler while its pick equals the draft
 * (common_sampler_sample_and_accept_n) and drops the rejected positions from the cache. The
 * sampler sees exactly the logits and draws of one-token-at-a-time decoding, so the output is the
 * same (up to the rounding of batched versus single-token products). */
#include "args.h"
#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The architecture name of m for messages ("?" when the file has none). */
static const char *arch_name(const oxl_model *m, char *buf, size_t n) {
    if (oxl_model_meta_val_str(m, "general.architecture", buf, n) < 0) {
        snprintf(buf, n, "?");
    }
    return buf;
}

int oxl_spec_check(const oxl_opts *o, bool *ngram, bool *draft) {
    *ngram = false;
    *draft = o->model_draft != NULL;
    if (o->spec_type) {
        const char *s = o->spec_type;
        while (*s) {
            size_t n = strcspn(s, ",");
            if (n == 4 && !strncmp(s, "none", 4)) {
                /* nothing */
            } else if (n == 12 && !strncmp(s, "ngram-simple", 12)) {
                *ngram = true;
            } else if (n == 12 && !strncmp(s, "draft-simple", 12)) {
                if (!o->model_draft) {
                    fprintf(stderr, "error: --spec-type draft-simple needs a draft model (-md FILE)\n");
                    return -1;
                }
            } else {
                fprintf(stderr,
                        "error: --spec-type: unknown or unsupported type '%.*s' (none, ngram-simple, draft-simple)\n",
                        (int)n, s);
                return -1;
            }
            s += n + (s[n] == ',');
        }
    }
    if (o->draft_max < 1 || o->draft_min < 0 || o->draft_min > o->draft_max || !(o->draft_p_min >= 0.0f) ||
        o->draft_p_min > 1.0f) {
        fprintf(stderr, "error: speculative decoding needs --draft-max >= 1, 0 <= --draft-min <= --draft-max and "
                        "--draft-p-min in [0, 1]\n");
        return -1;
    }
    if (o->ngram_size_n < 1 || o->ngram_size_n > 1024 || o->ngram_size_m < 1 || o->ngram_size_m > 1024) {
        fprintf(stderr, "error: --spec-ngram-simple-size-n and -size-m must be in 1 .. 1024\n");
        return -1;
    }
    return 0;
}

int oxl_spec_can_rewind(const oxl_model *model, const oxl_model *dmodel) {
    char arch[64];
    if (oxl_model_is_recurrent(model) || (dmodel && oxl_model_is_recurrent(dmodel))) {
        const oxl_model *m = oxl_model_is_recurrent(model) ? model : dmodel;
        fprintf(stderr, "error: speculative decoding needs a model whose cache can rewind: %s%s\n",
                arch_name(m, arch, sizeof arch), m == dmodel ? " (the draft model)" : "");
        return -1;
    }
    return 0;
}

int oxl_spec_generate(const oxl_opts *o, const oxl_model *model, oxl_ctx *ctx, oxl_sampler *smpl,
                      const oxl_model *dmodel, oxl_ctx *dctx, bool ngram, const oxl_token *prompt, int32_t n_prompt,
                      int *n_gen_out) {
    const int32_t n_ctx = oxl_ctx_n_ctx(ctx);
    const int32_t n_vocab = oxl_model_n_vocab(model);
    const int32_t n_max = o->draft_max > o->ngram_size_m ? o->draft_max : o->ngram_size_m;
    oxl_error err = {0};
    int status = 1;
    oxl_token *hist = malloc(sizeof(oxl_token) * ((size_t)n_ctx + 1));
    oxl_token *dtoks = dmodel ? calloc((size_t)oxl_ctx_n_ctx(dctx) + 1, sizeof(oxl_token)) : NULL;
    oxl_token *batch = malloc(sizeof(oxl_token) * ((size_t)n_max + 1));
    oxl_token *ids = malloc(sizeof(oxl_token) * ((size_t)n_max + 1));
    if (!hist || !batch || !ids || (dmodel && !dtoks)) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    memcpy(hist, prompt, sizeof(oxl_token) * (size_t)n_prompt);
    /* verification batches score every drafted position as a single-token decode would */
    oxl_ctx_set_exact_batch(ctx, true);
    int32_t n_hist = n_prompt; /* the tokens in the target's cache */
    oxl_detok detok = {0};
    char piece[4096];
    int n_gen = 0;
    long n_drafted = 0, n_accept = 0;
    bool stop = o->n_predict == 0;
    oxl_token last = -1;
    const float *logits = oxl_get_logits(ctx, -1);
    int32_t n_ids = 0;
    while (!stop) {
        /* the round's sampled tokens, in order: the first round's is the prompt's continuation */
        if (last < 0) {
            ids[0] = oxl_sampler_sample(smpl, logits, n_vocab);
            oxl_sampler_accept(smpl, ids[0]);
            n_ids = 1;
        }
        for (int32_t i = 0; i < n_ids && !stop; i++) {
            last = ids[i];
            if (oxl_token_is_eog(model, last)) {
                stop = true;
                break;
            }
            int32_t w = oxl_detok_push(&detok, model, last, piece, (int32_t)sizeof piece);
            if (w > 0) {
                fwrite(piece, 1, (size_t)w, stdout);
                fflush(stdout);
            }
            n_gen++;
            /* the plain loop's end (run.c, llama-completion's): the token sampled when the next
             * one would fill the context is the last */
            if ((o->n_predict >= 0 && n_gen >= o->n_predict) || n_prompt + n_gen >= n_ctx) {
                stop = true;
            }
        }
        if (stop || n_hist >= n_ctx) {
            break;
        }
        /* draft: at most what the context and -n leave room for after `last` */
        int32_t cap = n_ctx - n_hist - 1;
        if (o->n_predict >= 0 && o->n_predict - n_gen - 1 < cap) {
            cap = o->n_predict - n_gen - 1;
        }
        int32_t nd = 0;
        if (cap > 0 && ngram) {
            nd = oxl_ngram_draft(hist, n_hist, last, o->ngram_size_n, o->ngram_size_m, batch + 1, cap);
        }
        if (cap > 0 && nd == 0 && dmodel) {
            nd = oxl_draft_propose(dctx, 0, dtoks, hist, n_hist, last, o->draft_p_min, o->draft_min,
                                   cap < o->draft_max ? cap : o->draft_max, batch + 1, &err);
            if (nd < 0) {
                fprintf(stderr, "\nerror: draft model: %s\n", err.msg);
                goto done;
            }
        }
        /* verify: the target evaluates last and the draft, keeping every position's logits */
        batch[0] = last;
        if (oxl_decode(ctx, batch, nd + 1, true, &err) != 0) {
            fprintf(stderr, "\nerror: %s\n", err.msg);
            goto done;
        }
        hist[n_hist++] = last;
        n_ids = 0;
        for (int32_t i = 0; i <= nd; i++) {
            oxl_token t = oxl_sampler_sample(smpl, oxl_get_logits(ctx, i), n_vocab);
            oxl_sampler_accept(smpl, t);
            ids[n_ids++] = t;
            if (i == nd || t != batch[1 + i]) {
                break;
            }
        }
        const int32_t acc = n_ids - 1;
        n_drafted += nd;
        n_accept += acc;
        memcpy(hist + n_hist, batch + 1, sizeof(oxl_token) * (size_t)acc);
        n_hist += acc;
        oxl_ctx_truncate(ctx, n_hist); /* the rejected draft tokens */
        if (oxl_ctx_n_past(ctx) != n_hist) {
            fprintf(stderr, "\nerror: the cache could not drop the rejected draft tokens\n");
            goto done;
        }
    }
    {
        int32_t tail = oxl_detok_flush(&detok, piece, (int32_t)sizeof piece);
        if (tail > 0) {
            fwrite(piece, 1, (size_t)tail, stdout);
        }
    }
    *n_gen_out = n_gen;
    /* llama.cpp speculative-simple's summary lines */
    oxl_log(o, OXL_LOG_INFO,
            "\n\nn_draft   = %d\nn_predict = %d\nn_drafted = %ld\nn_accept  = %ld\naccept    = %.3f%%\n",
            dmodel ? o->draft_max : o->ngram_size_m, n_gen, n_drafted, n_accept,
            n_drafted > 0 ? 100.0 * (double)n_accept / (double)n_drafted : 0.0);
    status = 0;
done:
    oxl_ctx_set_exact_batch(ctx, false);
    free(hist);
    free(dtoks);
    free(batch);
    free(ids);
    return status;
}
