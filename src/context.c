/* Inference contexts: KV cache allocation, batching of oxl_decode, logits. */
#include "context.h"

#include "arch.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

oxl_ctx_params oxl_ctx_default_params(void) {
    return (oxl_ctx_params){.n_ctx = 0, .n_batch = 512, .n_threads = 0, .type_k = OXL_KV_F16, .type_v = OXL_KV_F16,
                            .flash_attn = OXL_FLASH_ATTN_AUTO};
}

static oxl_type kv_type(oxl_kv_type t) { return t == OXL_KV_F16 ? OXL_TYPE_F16 : OXL_TYPE_F32; }

void oxl_ctx_free(oxl_ctx *ctx) {
    if (!ctx) {
        return;
    }
    if (ctx->kv.k) {
        for (int il = 0; il < ctx->model->hp.n_layer; il++) {
            free(ctx->kv.k[il]);
            free(ctx->kv.v[il]);
        }
    }
    free(ctx->kv.k);
    free(ctx->kv.v);
    free(ctx->work);
    free(ctx->logits);
    oxl_pool_free(ctx->pool);
    free(ctx);
}

oxl_ctx *oxl_ctx_new(const oxl_model *model, const oxl_ctx_params *params, oxl_error *err) {
    oxl_ctx_params p = params ? *params : oxl_ctx_default_params();
    const oxl_hparams *hp = &model->hp;
    if (p.n_ctx <= 0) {
        p.n_ctx = hp->n_ctx_train;
    }
    if (p.n_batch <= 0) {
        p.n_batch = 512;
    }
    if (p.n_batch > p.n_ctx) {
        p.n_batch = p.n_ctx;
    }
    if (p.n_threads <= 0) {
        p.n_threads = oxl_n_physical_cores();
    }
    if (p.n_ctx > (1 << 24) || p.n_threads > 512) {
        oxl_err_set(err, "context: n_ctx %d or n_threads %d out of range", p.n_ctx, p.n_threads);
        return NULL;
    }
    oxl_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        oxl_err_set(err, "context: out of memory");
        return NULL;
    }
    ctx->model = model;
    ctx->params = p;
    ctx->n_ctx = p.n_ctx;
    ctx->pool = oxl_pool_new(p.n_threads, err);
    if (!ctx->pool) {
        free(ctx);
        return NULL;
    }
    oxl_kv_cache *kv = &ctx->kv;
    kv->type_k = kv_type(p.type_k);
    kv->type_v = kv_type(p.type_v);
    kv->kv_dim = hp->n_head_kv * hp->head_dim;
    kv->k_row = oxl_row_size(kv->type_k, kv->kv_dim);
    kv->v_row = oxl_row_size(kv->type_v, kv->kv_dim);
    kv->k = calloc((size_t)hp->n_layer, sizeof(void *));
    kv->v = calloc((size_t)hp->n_layer, sizeof(void *));
    ctx->work_size = model->arch->work_size(model, p.n_batch, p.n_ctx, p.n_threads);
    ctx->work = malloc(ctx->work_size);
    ctx->logits = malloc((size_t)hp->n_vocab * (size_t)p.n_batch * sizeof(float));
    bool ok = kv->k && kv->v && ctx->work && ctx->logits;
    for (int il = 0; ok && il < hp->n_layer; il++) {
        kv->k[il] = malloc(kv->k_row * (size_t)p.n_ctx);
        kv->v[il] = malloc(kv->v_row * (size_t)p.n_ctx);
        ok = kv->k[il] && kv->v[il];
    }
    if (!ok) {
        oxl_ctx_free(ctx);
        oxl_err_set(err, "context: out of memory for a KV cache of %d tokens", p.n_ctx);
        return NULL;
    }
    return ctx;
}

int32_t oxl_ctx_n_ctx(const oxl_ctx *ctx) { return ctx->n_ctx; }
int32_t oxl_ctx_n_past(const oxl_ctx *ctx) { return ctx->n_past; }

void oxl_ctx_truncate(oxl_ctx *ctx, int32_t n_past) {
    if (n_past >= 0 && n_past < ctx->n_past) {
        ctx->n_past = n_past;
    }
}

int oxl_decode(oxl_ctx *ctx, const oxl_token *tokens, int32_t n, bool all_logits, oxl_error *err) {
    const oxl_model *m = ctx->model;
    const int32_t n_vocab = m->hp.n_vocab;
    if (n <= 0) {
        return oxl_err_set(err, "decode: empty batch");
    }
    if (n > ctx->n_ctx - ctx->n_past) {
        return oxl_err_set(err, "decode: %d tokens at position %d overflow the context of %d tokens (-c)", n,
                           ctx->n_past, ctx->n_ctx);
    }
    for (int32_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= n_vocab) {
            return oxl_err_set(err, "decode: token %d at index %d is outside the vocabulary of %d", tokens[i], i, n_vocab);
        }
    }
    if (all_logits && (size_t)n > (size_t)ctx->params.n_batch) {
        /* keep every row: grow the logits buffer to n rows */
        float *grown = realloc(ctx->logits, (size_t)n_vocab * (size_t)n * sizeof(float));
        if (!grown) {
            return oxl_err_set(err, "decode: out of memory for %d rows of logits", n);
        }
        ctx->logits = grown;
    }
    /* Split into passes of at most n_batch tokens; each pass keeps the logits it must. */
    for (int32_t done = 0; done < n;) {
        int32_t nb = n - done < ctx->params.n_batch ? n - done : ctx->params.n_batch;
        bool last_pass = done + nb == n;
        int32_t first_out = all_logits ? 0 : (last_pass ? nb - 1 : nb);
        float *out = all_logits ? ctx->logits + (size_t)done * n_vocab : ctx->logits;
        if (first_out < nb) {
            m->arch->forward(ctx, tokens + done, nb, ctx->n_past, first_out, out);
        } else {
            m->arch->forward(ctx, tokens + done, nb, ctx->n_past, nb, NULL);
        }
        ctx->n_past += nb;
        done += nb;
    }
    ctx->n_last = n;
    ctx->n_logits = all_logits ? n : 1;
    return 0;
}

const float *oxl_get_logits(const oxl_ctx *ctx, int32_t i) {
    if (i < 0) {
        i = ctx->n_last - 1;
    }
    if (ctx->n_logits == ctx->n_last && i < ctx->n_last) {
        return ctx->logits + (size_t)i * ctx->model->hp.n_vocab;
    }
    if (i == ctx->n_last - 1) {
        return ctx->logits;
    }
    return NULL;
}
