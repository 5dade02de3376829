/* Inference contexts: per-sequence memory (model_memory.c), batching of decode calls into forward passes, logits,
 * image embeddings and their M-RoPE positions.
 * Behaviour reproduced: llama.cpp src/llama-context.cpp (llama_decode splitting a batch into
 * micro-batches of n_batch tokens; outputs only for tokens that ask for them), tools/mtmd/mtmd.cpp and
 * mtmd-helper.cpp (an image chunk's decoder positions and how far it advances the sequence). */
#include "context.h"

#include "adapter.h"
#include "arch_iface.h"
#include "errors.h"
#include "matmul.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

oxl_ctx_params oxl_ctx_default_params(void) {
    return (oxl_ctx_params){.n_ctx = 0,
                            .n_batch = 512,
                            .n_seq_max = 1,
                            .n_threads = 0,
                            .type_k = OXL_KV_F16,
                            .type_v = OXL_KV_F16,
                            .flash_attn = OXL_FLASH_ATTN_AUTO,
                            .embeddings = false,
                            .pooling = OXL_POOLING_UNSPECIFIED,
                            .seq_streams = false};
}

/* The cache element type of a -ctk/-ctv value (a ggml type id); OXL_TYPE_COUNT unless the spec
 * marks that format as a KV-cache type. */
static oxl_type kv_type(oxl_kv_type t) {
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    return tr != NULL && tr->kv_cache ? (oxl_type)t : OXL_TYPE_COUNT;
}

/* llama.cpp's checks on the cache types (llama-context.cpp): a quantized V cache (ggml_is_quantized:
 * not f32, f16 or bf16) only with flash attention; a quantized row must hold whole blocks per head,
 * or heads would share a block. */
static int check_kv_types(const oxl_hparams *hp, const oxl_ctx_params *p, oxl_type tk, oxl_type tv, oxl_error *err) {
    if (tk == OXL_TYPE_COUNT || tv == OXL_TYPE_COUNT) {
        return oxl_err_set(err, "context: KV cache type %d / %d is not one of " OXL_KV_TYPE_NAMES, (int)p->type_k,
                           (int)p->type_v);
    }
    if (oxl_type_traits_get(tv)->is_quantized && p->flash_attn == OXL_FLASH_ATTN_OFF) {
        return oxl_err_set(err, "context: V cache type %s needs flash attention (-fa on), as in llama.cpp",
                           oxl_type_traits_get(tv)->name);
    }
    /* latent attention reads V as the first head_dim_v values of each K row (llama.cpp: "model does
     * not support different K and V cache types", and V's blocks must divide n_embd_head_v) */
    if (hp->head_dim_v > 0 && tk != tv) {
        return oxl_err_set(err,
                           "context: this model's V is a view of its K cache, so the K and V cache types must be "
                           "the same (got %s and %s), as in llama.cpp",
                           oxl_type_traits_get(tk)->name, oxl_type_traits_get(tv)->name);
    }
    const oxl_type ts[2] = {tk, tv};
    for (int i = 0; i < 2; i++) {
        const int64_t blck = oxl_type_traits_get(ts[i])->blck_size;
        const int dim = i == 1 && hp->head_dim_v > 0 ? hp->head_dim_v : hp->head_dim;
        if (hp->n_head_kv > 0 && dim % blck != 0) {
            return oxl_err_set(err, "context: %s cache type %s needs a head size divisible by %lld; the model's is %d",
                               i == 0 ? "K" : "V", oxl_type_traits_get(ts[i])->name, (long long)blck, dim);
        }
    }
    return 0;
}

/* The pooling of a context, as llama_context's constructor resolves it: none without embeddings;
 * else the caller's, or when unspecified the model's `<arch>.pooling_type`, or none when the file
 * has no such key. Values outside the enum are refused. */
static int resolve_pooling(const oxl_model *m, const oxl_ctx_params *p, oxl_pooling *out, oxl_error *err) {
    *out = OXL_POOLING_NONE;
    if (!p->embeddings) {
        return 0;
    }
    int64_t v = p->pooling;
    const char *what = "pooling";
    char key[160];
    if (p->pooling == OXL_POOLING_UNSPECIFIED) {
        snprintf(key, sizeof key, "%s.pooling_type", m->arch->name);
        what = key;
        v = OXL_POOLING_NONE;
        if (oxl_gguf_get_int(m->gguf, key, &v, err) < 0) {
            return -1;
        }
    }
    if (v < OXL_POOLING_NONE || v > OXL_POOLING_RANK) {
        return oxl_err_set(err, "context: %s %lld is not none (0), mean (1), cls (2), last (3) or rank (4)", what,
                           (long long)v);
    }
    if (v == OXL_POOLING_RANK && !m->cls_head.cls.data && !m->cls_head.cls_out.data) {
        return oxl_err_set(err,
                           "context: %s 4 (rank) needs a classifier head (cls.weight or cls.output.weight); the "
                           "model has none",
                           what);
    }
    if (v == OXL_POOLING_RANK && m->cls_head.n_out > m->hp.n_embd) {
        return oxl_err_set(err, "context: rank pooling: %d classifier labels; the model's embeddings have %d values",
                           m->cls_head.n_out, m->hp.n_embd);
    }
    *out = (oxl_pooling)v;
    return 0;
}

void oxl_ctx_set_exact_batch(oxl_ctx *ctx, bool on) {
    if (ctx) {
        ctx->exact_batch = on;
    }
}

int oxl_ctx_share_threads(oxl_ctx *ctx, oxl_ctx *other, oxl_error *err) {
    if (!ctx || !other || ctx == other) {
        return oxl_err_set(err, "oxl_ctx_share_threads: two different contexts are needed");
    }
    if (oxl_pool_size(ctx->pool) != oxl_pool_size(other->pool)) {
        return oxl_err_set(err, "oxl_ctx_share_threads: %d threads, the other context's %d", oxl_pool_size(ctx->pool),
                           oxl_pool_size(other->pool));
    }
    if (ctx->pool != other->pool) {
        oxl_pool_free(ctx->pool);
        ctx->pool = oxl_pool_retain(other->pool);
    }
    return 0;
}

void oxl_ctx_free(oxl_ctx *ctx) {
    if (!ctx) {
        return;
    }
    if (ctx->gpu && ctx->gpu_free) {
        ctx->gpu_free(ctx->gpu);
    }
    oxl_memory_free(ctx->mem);
    oxl_adapters_free(ctx->adapters);
    free(ctx->work);
    free(ctx->logits);
    free(ctx->logit_row);
    free(ctx->out_ids);
    free(ctx->embd);
    free(ctx->embd_seq);
    free(ctx->embd_seq_ok);
    free(ctx->seq0_pos);
    for (int32_t s = 0; ctx->lag && s < ctx->n_seq_max; s++) {
        free(ctx->lag[s].row);
        free(ctx->lag[s].lag);
    }
    free(ctx->lag);
    free(ctx->mpos);
    free(ctx->pos_hi);
    free(ctx->n_past);
    oxl_pool_free(ctx->pool);
    free(ctx);
}

oxl_ctx *oxl_ctx_new(const oxl_model *model, const oxl_ctx_params *params, oxl_error *err) {
    oxl_ctx_params p = params ? *params : oxl_ctx_default_params();
    const oxl_hparams *hp = &model->hp;
    if (p.n_seq_max <= 0) {
        p.n_seq_max = 1;
    }
    if (p.n_ctx <= 0) {
        p.n_ctx = hp->n_ctx_train * p.n_seq_max;
    }
    if (p.n_threads <= 0) {
        p.n_threads = oxl_n_physical_cores();
    }
    const int32_t n_ctx_seq = p.n_ctx / p.n_seq_max;
    if (p.n_seq_max > 256 || n_ctx_seq < 1 || n_ctx_seq > (1 << 24) || p.n_threads > 512) {
        oxl_err_set(err, "context: n_ctx %d, n_seq_max %d or n_threads %d out of range", p.n_ctx, p.n_seq_max,
                    p.n_threads);
        return NULL;
    }
    if (check_kv_types(hp, &p, kv_type(p.type_k), kv_type(p.type_v), err) != 0) {
        return NULL;
    }
    oxl_pooling pooling;
    if (resolve_pooling(model, &p, &pooling, err) != 0) {
        return NULL;
    }
    if (p.n_batch <= 0) {
        p.n_batch = 512;
    }
    if (p.n_batch > p.n_ctx) {
        p.n_batch = p.n_ctx;
    }
    oxl_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        oxl_err_set(err, "context: out of memory");
        return NULL;
    }
    ctx->model = model;
    ctx->params = p;
    ctx->n_ctx = n_ctx_seq;
    ctx->n_seq_max = p.n_seq_max;
    ctx->pooling = pooling;
    ctx->pool = oxl_pool_new(p.n_threads, err);
    if (!ctx->pool) {
        free(ctx);
        return NULL;
    }
    ctx->n_past = calloc((size_t)p.n_seq_max, sizeof(int32_t));
    ctx->lag = calloc((size_t)p.n_seq_max, sizeof *ctx->lag);
    if (hp->mrope) {
        ctx->mpos = malloc(4 * sizeof(int32_t) * (size_t)p.n_batch);
    }
    ctx->out_ids = malloc(sizeof(int32_t) * (size_t)p.n_batch);
    ctx->work_size = model->arch->work_size(model, p.n_batch, n_ctx_seq, p.n_threads);
    ctx->work = malloc(ctx->work_size);
    ctx->logits_cap = p.n_batch;
    ctx->logits = malloc((size_t)hp->n_vocab * (size_t)ctx->logits_cap * sizeof(float));
    if (p.embeddings) {
        ctx->embd_seq = malloc((size_t)hp->n_embd * (size_t)p.n_seq_max * sizeof(float));
        ctx->embd_seq_ok = calloc((size_t)p.n_seq_max, sizeof(bool));
    }
    bool ok = ctx->n_past && ctx->lag && (!hp->mrope || ctx->mpos) && ctx->out_ids && ctx->work && ctx->logits &&
              (!p.embeddings || (ctx->embd_seq && ctx->embd_seq_ok));
    if (ok) {
        ctx->mem = oxl_memory_new(hp, kv_type(p.type_k), kv_type(p.type_v), n_ctx_seq, p.n_seq_max);
        ok = ctx->mem != NULL;
    }
    if (!ok) {
        oxl_ctx_free(ctx);
        oxl_err_set(err, "context: out of memory for a KV cache of %d x %d tokens", p.n_seq_max, n_ctx_seq);
        return NULL;
    }
    return ctx;
}

int32_t oxl_ctx_n_ctx(const oxl_ctx *ctx) { return ctx->n_ctx; }
int32_t oxl_ctx_n_seq_max(const oxl_ctx *ctx) { return ctx->n_seq_max; }

int32_t oxl_seq_n_past(const oxl_ctx *ctx, int32_t seq) {
    return seq >= 0 && seq < ctx->n_seq_max ? ctx->n_past[seq] : 0;
}

/* Rows of sequence seq that its images took beyond their positions, up to its last row. */
static int32_t seq_lag(const oxl_ctx *ctx, int32_t seq) {
    const oxl_seq_lag *l = &ctx->lag[seq];
    return l->n > 0 ? l->lag[l->n - 1] : 0;
}

int32_t oxl_seq_pos_next(const oxl_ctx *ctx, int32_t seq) {
    return seq >= 0 && seq < ctx->n_seq_max ? ctx->n_past[seq] - seq_lag(ctx, seq) : 0;
}

/* A recurrent state holds the whole history in one vector and cannot step back: as llama.cpp's
 * llama_memory_recurrent::seq_rm, only a full clear (n_past 0) is accepted on a recurrent model;
 * other truncations leave the sequence as it was (its next position stays oxl_seq_n_past). */
void oxl_seq_truncate(oxl_ctx *ctx, int32_t seq, int32_t n_past) {
    if (seq < 0 || seq >= ctx->n_seq_max || n_past < 0 || n_past >= ctx->n_past[seq]) {
        return;
    }
    if (oxl_memory_seq_rm(ctx->mem, seq, n_past)) {
        ctx->n_past[seq] = n_past;
        /* images that end past the new end are gone; one cut in its middle counts as text rows */
        oxl_seq_lag *l = &ctx->lag[seq];
        while (l->n > 0 && l->row[l->n - 1] > n_past) {
            l->n--;
        }
    }
}

/* The shift's RoPE per layer (rotate[il]: the keys are cached rotated), or -1 with err naming why
 * the context cannot shift (llama_memory_can_shift). rope and rotate may be NULL (check only). */
static int shift_plan(const oxl_ctx *ctx, oxl_rope *rope, bool *rotate, oxl_error *err) {
    const oxl_model *m = ctx->model;
    if (oxl_memory_has_recurrent(ctx->mem)) {
        return oxl_err_set(err,
                           "position shift: architecture %s keeps recurrent state per sequence, which cannot be "
                           "re-positioned (as llama.cpp's llama_memory_recurrent)",
                           m->arch->name);
    }
    if (!m->arch->k_rope) {
        return oxl_err_set(err, "position shift: not supported for architecture %s", m->arch->name);
    }
    for (int il = 0; il < m->hp.n_layer; il++) {
        oxl_rope r;
        const int k = m->arch->k_rope(ctx, il, &r, err);
        if (k < 0) {
            return -1;
        }
        if (rope) {
            rope[il] = r;
            rotate[il] = k > 0;
        }
    }
    return 0;
}

int oxl_ctx_can_shift(const oxl_ctx *ctx, oxl_error *err) {
    if (!ctx) {
        return oxl_err_set(err, "position shift: no context");
    }
    return shift_plan(ctx, NULL, NULL, err);
}

int oxl_seq_add(oxl_ctx *ctx, int32_t seq, int32_t p0, int32_t p1, int32_t delta, oxl_error *err) {
    if (!ctx) {
        return oxl_err_set(err, "position shift: no context");
    }
    if (seq < 0 || seq >= ctx->n_seq_max) {
        return oxl_err_set(err, "position shift: sequence %d outside 0..%d", seq, ctx->n_seq_max - 1);
    }
    const int32_t n_past = ctx->n_past[seq];
    if (p1 < 0) {
        p1 = n_past;
    }
    if (p1 != n_past) {
        return oxl_err_set(
            err, "position shift: p1 %d is not the sequence's n_past %d (the moved positions must be its tail)", p1,
            n_past);
    }
    if (p0 < 0 || p0 > p1) {
        return oxl_err_set(err, "position shift: p0 %d outside 0..%d", p0, p1);
    }
    if (ctx->model->gpu_layers > 0) {
        return oxl_err_set(err,
                           "position shift: the KV cache of %d layers is on the Vulkan device (-ngl), where shifting "
                           "it is not supported",
                           ctx->model->gpu_layers);
    }
    if (delta > 0) {
        return oxl_err_set(err, "position shift: delta %d > 0 would leave positions %d..%d empty", delta, p0,
                           p0 + delta - 1);
    }
    if (p0 + delta < 0) {
        return oxl_err_set(err, "position shift: delta %d moves position %d below 0", delta, p0);
    }
    const int32_t n_layer = ctx->model->hp.n_layer;
    oxl_rope *rope = malloc((size_t)n_layer * sizeof *rope);
    bool *rotate = malloc((size_t)n_layer * sizeof *rotate);
    int rc = rope && rotate ? shift_plan(ctx, rope, rotate, err) : oxl_err_set(err, "position shift: out of memory");
    if (rc == 0 && delta != 0) {
        const oxl_hparams *hp = &ctx->model->hp;
        if (!oxl_memory_seq_shift(ctx->mem, seq, p0, p1, delta, rope, rotate, hp->n_head_kv, hp->head_dim)) {
            rc = oxl_err_set(err, "position shift: out of memory");
        } else {
            ctx->n_past[seq] = p1 + delta;
        }
    }
    free(rope);
    free(rotate);
    return rc;
}

int32_t oxl_ctx_n_past(const oxl_ctx *ctx) { return ctx->n_past[0]; }
void oxl_ctx_truncate(oxl_ctx *ctx, int32_t n_past) { oxl_seq_truncate(ctx, 0, n_past); }

/* Grows an int32 or logits buffer to hold n entries of elem bytes. */
static bool grow(void **buf, int32_t *cap, int32_t n, size_t elem) {
    if (n <= *cap) {
        return true;
    }
    void *p = realloc(*buf, elem * (size_t)n);
    if (!p) {
        return false;
    }
    *buf = p;
    *cap = n;
    return true;
}

/* Checks every token before any work, so a bad batch changes nothing. */
static int check_batch(const oxl_ctx *ctx, const oxl_batch *b, oxl_error *err) {
    const int32_t n_vocab = ctx->model->hp.n_vocab;
    if (!b || b->n_tokens <= 0 || !b->pos || !b->seq_id) {
        return oxl_err_set(err, "decode: empty batch");
    }
    if (!b->token == !b->embd) {
        return oxl_err_set(err, "decode: the batch has %s: give token ids (token) or embeddings (embd), one of them",
                           b->token ? "both token ids and embeddings" : "neither token ids nor embeddings");
    }
    if (b->embd && !ctx->model->arch->embd_input) {
        return oxl_err_set(err, "decode: architecture %s takes token ids only, not embeddings (oxl_batch.embd)",
                           ctx->model->arch->name);
    }
    int32_t next[256];
    memcpy(next, ctx->n_past, sizeof(int32_t) * (size_t)ctx->n_seq_max);
    for (int32_t i = 0; i < b->n_tokens; i++) {
        const int32_t s = b->seq_id[i];
        if (b->token && (b->token[i] < 0 || b->token[i] >= n_vocab)) {
            return oxl_err_set(err, "decode: token %d at index %d is outside the vocabulary of %d", b->token[i], i,
                               n_vocab);
        }
        if (s < 0 || s >= ctx->n_seq_max) {
            return oxl_err_set(err, "decode: sequence %d at index %d; the context has %d (n_seq_max)", s, i,
                               ctx->n_seq_max);
        }
        if (b->pos[i] != next[s]) {
            return oxl_err_set(err, "decode: token %d of sequence %d is at position %d; the sequence's next is %d", i,
                               s, b->pos[i], next[s]);
        }
        if (next[s] >= ctx->n_ctx) {
            return oxl_err_set(err, "decode: sequence %d is full: its context holds %d tokens (-c / n_seq_max)", s,
                               ctx->n_ctx);
        }
        next[s]++;
    }
    return 0;
}

/* Rank pooling's classification head over the first token of each sequence (picked as cls
 * pooling picks it), as build_pooling's LLAMA_POOLING_TYPE_RANK (src/llama-graph.cpp) for the
 * models that are not modern-bert or qwen3: cur = tanh(cls · cur + cls_b) when the model has cls,
 * then cls_out · cur + cls_out_b when it has cls_out; the products over all the sequences of the
 * decode at once, as one ggml_mul_mat. A sequence's scores are the first n_cls_out values. When
 * memory is short the sequences are left unpooled (oxl_get_embeddings_seq gives NULL). */
static void rank_head(oxl_ctx *ctx) {
    const struct oxl_cls_head *h = &ctx->model->cls_head;
    const int64_t E = ctx->model->hp.n_embd;
    int32_t n = 0;
    for (int32_t s = 0; s < ctx->n_seq_max; s++) {
        n += ctx->embd_seq_ok[s];
    }
    if (n == 0 || (!h->cls.data && !h->cls_out.data)) {
        return;
    }
    size_t scratch = 0;
    const oxl_tensor *ws[] = {&h->cls, &h->cls_out};
    for (int k = 0; k < 2; k++) {
        if (ws[k]->data) {
            const size_t b = oxl_matmul_scratch_size(ws[k]->type, ws[k]->ne[0], n);
            scratch = b > scratch ? b : scratch;
        }
    }
    float *x = malloc(sizeof(float) * (size_t)(E * n));
    float *y = malloc(sizeof(float) * (size_t)(E * n));
    void *sc = malloc(scratch + 64);
    if (!x || !y || !sc) {
        memset(ctx->embd_seq_ok, 0, (size_t)ctx->n_seq_max * sizeof(bool));
        free(x);
        free(y);
        free(sc);
        return;
    }
    for (int32_t s = 0, j = 0; s < ctx->n_seq_max; s++) {
        if (ctx->embd_seq_ok[s]) {
            memcpy(x + (size_t)(j++) * E, ctx->embd_seq + (size_t)s * E, (size_t)E * sizeof(float));
        }
    }
    int64_t rows = E;
    if (h->cls.data) {
        oxl_matmul(ctx->pool, &h->cls, x, n, y, h->cls.ne[1], sc);
        rows = h->cls.ne[1];
        for (int32_t j = 0; j < n; j++) {
            for (int64_t r = 0; r < rows; r++) {
                float v = y[(size_t)j * rows + r];
                if (h->cls_b.data) {
                    v += ((const float *)h->cls_b.data)[r];
                }
                x[(size_t)j * rows + r] = tanhf(v);
            }
        }
    }
    if (h->cls_out.data) {
        oxl_matmul(ctx->pool, &h->cls_out, x, n, y, h->cls_out.ne[1], sc);
        rows = h->cls_out.ne[1];
        for (int32_t j = 0; j < n; j++) {
            for (int64_t r = 0; r < rows; r++) {
                x[(size_t)j * rows + r] =
                    y[(size_t)j * rows + r] + (h->cls_out_b.data ? ((const float *)h->cls_out_b.data)[r] : 0.0f);
            }
        }
    }
    for (int32_t s = 0, j = 0; s < ctx->n_seq_max; s++) {
        if (ctx->embd_seq_ok[s]) {
            memcpy(ctx->embd_seq + (size_t)s * E, x + (size_t)(j++) * rows, (size_t)rows * sizeof(float));
        }
    }
    free(x);
    free(y);
    free(sc);
}

/* Pools the token embeddings of the decode into one per sequence, as build_pooling
 * (src/llama-graph.cpp): mean is the matrix product with a column of 1/n_tokens (each token's row
 * times 1/n, summed in token order), cls / last pick the token at the lowest / highest position. */
static void pool_embeddings(oxl_ctx *ctx, const oxl_batch *b) {
    const int64_t E = ctx->model->hp.n_embd;
    memset(ctx->embd_seq_ok, 0, (size_t)ctx->n_seq_max * sizeof(bool));
    for (int32_t s = 0; s < ctx->n_seq_max; s++) {
        int32_t n_tok = 0, pick = -1;
        for (int32_t i = 0; i < b->n_tokens; i++) {
            if (b->seq_id[i] != s) {
                continue;
            }
            n_tok++;
            /* positions of a sequence ascend within a batch: its first token is the lowest */
            if (pick < 0 || ctx->pooling == OXL_POOLING_LAST) {
                pick = i;
            }
        }
        if (n_tok == 0) {
            continue;
        }
        float *out = ctx->embd_seq + (size_t)s * E;
        if (ctx->pooling == OXL_POOLING_MEAN) {
            const float w = 1.0f / (float)n_tok;
            memset(out, 0, (size_t)E * sizeof(float));
            for (int32_t i = 0; i < b->n_tokens; i++) {
                if (b->seq_id[i] == s) {
                    const float *row = ctx->embd + (size_t)i * E;
                    for (int64_t e = 0; e < E; e++) {
                        out[e] += row[e] * w;
                    }
                }
            }
        } else {
            memcpy(out, ctx->embd + (size_t)pick * E, (size_t)E * sizeof(float));
        }
        ctx->embd_seq_ok[s] = true;
    }
    if (ctx->pooling == OXL_POOLING_RANK) {
        rank_head(ctx);
    }
}

/* An image being decoded: its sequence, first row, rope position p0 and grid width, and whether its
 * passes attend non-causally (llama_set_causal_attn(false) around the image's llama_decode). */
typedef struct image_at {
    int32_t seq, row0, p0, grid_x;
    bool non_causal;
} image_at;

/* The last position each token of a non-causal pass sees: the highest position of its sequence in
 * the pass (llama.cpp's mask without causality keeps every cell of the sequence, the pass's own
 * included; set_input_kq_mask). */
static void pass_pos_hi(const oxl_ubatch *ub, int32_t *hi) {
    for (int32_t j = 0; j < ub->n; j++) {
        int32_t m = ub->pos[j];
        for (int32_t i = 0; i < ub->n; i++) {
            m = ub->seq[i] == ub->seq[j] && ub->pos[i] > m ? ub->pos[i] : m;
        }
        hi[j] = m;
    }
}

/* The (t, h, w, extra) rope positions of a pass's tokens on an M-RoPE model: an image's token k at
 * (p0, p0 + k / grid_x, p0 + k % grid_x, 0) (mtmd_image_tokens_get_decoder_pos), the others at
 * (p, p, p, 0) with p = row - lag (llm_graph_input_pos::set_input for token ids). A pass's rows are
 * past every image its sequence has ended, so the lag is the sequence's last. */
static void pass_mpos(const oxl_ctx *ctx, const oxl_ubatch *ub, const image_at *img, int32_t *mpos) {
    for (int32_t j = 0; j < ub->n; j++) {
        const int32_t s = ub->seq[j], r = ub->pos[j];
        int32_t *p = mpos + 4 * (size_t)j;
        if (img && s == img->seq && r >= img->row0) {
            const int32_t k = r - img->row0;
            p[0] = img->p0;
            p[1] = img->p0 + k / img->grid_x;
            p[2] = img->p0 + k % img->grid_x;
        } else {
            p[0] = p[1] = p[2] = r - seq_lag(ctx, s);
        }
        p[3] = 0;
    }
}

/* oxl_decode_batch with the image whose rows the batch holds, or none (img NULL). */
static int decode(oxl_ctx *ctx, const oxl_batch *b, const image_at *img, oxl_error *err) {
    if (check_batch(ctx, b, err) != 0) {
        return -1;
    }
    const oxl_model *m = ctx->model;
    const int32_t n_vocab = m->hp.n_vocab;
    const int32_t n = b->n_tokens;
    if (m->arch->encoder_only && n > ctx->params.n_batch) {
        /* each pass encodes its tokens afresh: a sequence split over two passes would be encoded as
         * two (llama.cpp's llama_encode refuses the same: n_ubatch >= n_tokens) */
        return oxl_err_set(err, "decode: %s is an encoder, so the %d tokens of a decode must fit one pass (n_batch %d)",
                           m->arch->name, n, ctx->params.n_batch);
    }
    int32_t n_keep = 0;
    for (int32_t i = 0; i < n; i++) {
        n_keep += b->logits ? b->logits[i] != 0 : i == n - 1;
    }
    if (!grow((void **)&ctx->logit_row, &ctx->last_cap, n, sizeof(int32_t)) ||
        !grow((void **)&ctx->logits, &ctx->logits_cap, n_keep, (size_t)n_vocab * sizeof(float))) {
        return oxl_err_set(err, "decode: out of memory for %d rows of logits", n_keep);
    }
    const int64_t E = m->hp.n_embd;
    if (img && img->non_causal && !ctx->pos_hi &&
        !(ctx->pos_hi = malloc(sizeof *ctx->pos_hi * (size_t)ctx->params.n_batch))) {
        return oxl_err_set(err, "decode: out of memory for a non-causal pass of %d tokens", ctx->params.n_batch);
    }
    if (ctx->params.embeddings && !grow((void **)&ctx->embd, &ctx->embd_cap, n, (size_t)E * sizeof(float))) {
        return oxl_err_set(err, "decode: out of memory for %d embeddings of %lld floats", n, (long long)E);
    }
    /* Passes of at most n_batch tokens; each writes its kept rows after the previous ones. */
    oxl_adapters_begin(ctx);
    oxl_matmul_set_exact(ctx->exact_batch);
    int32_t row = 0;
    for (int32_t done = 0; done < n;) {
        const int32_t nb = n - done < ctx->params.n_batch ? n - done : ctx->params.n_batch;
        oxl_ubatch ub = {.n = nb,
                         .token = b->token ? b->token + done : NULL,
                         .inp_embd = b->embd ? b->embd + (size_t)done * E : NULL,
                         .pos = b->pos + done,
                         .seq = b->seq_id + done,
                         .out_ids = ctx->out_ids,
                         .embd = ctx->embd ? ctx->embd + (size_t)done * E : NULL};
        if (ctx->params.seq_streams) {
            /* llama.cpp's split_equal passes hold as many tokens of each sequence */
            for (int32_t j = 0; j < nb; j++) {
                ub.n_stream += ub.seq[j] == ub.seq[0];
            }
        }
        for (int32_t j = 0; j < nb; j++) {
            const int32_t i = done + j;
            const bool keep = b->logits ? b->logits[i] != 0 : i == n - 1;
            ctx->logit_row[i] = keep ? row + ub.n_out : -1;
            if (keep) {
                ctx->out_ids[ub.n_out++] = j;
            }
        }
        if (ctx->mpos) {
            pass_mpos(ctx, &ub, img, ctx->mpos);
            ub.mpos = ctx->mpos;
        }
        if (img && img->non_causal) {
            pass_pos_hi(&ub, ctx->pos_hi);
            ub.pos_hi = ctx->pos_hi;
        }
        m->arch->forward(ctx, &ub, ctx->logits + (size_t)row * n_vocab);
        for (int32_t j = 0; j < nb; j++) {
            ctx->n_past[ub.seq[j]]++;
        }
        row += ub.n_out;
        done += nb;
    }
    oxl_matmul_set_exact(false);
    oxl_adapters_end(ctx);
    ctx->last_n = n;
    if (ctx->pooling != OXL_POOLING_NONE) {
        pool_embeddings(ctx, b);
    }
    return 0;
}

int oxl_decode_batch(oxl_ctx *ctx, const oxl_batch *b, oxl_error *err) { return decode(ctx, b, NULL, err); }

/* Grows a sequence's breakpoint list to hold n. */
static bool grow_lag(oxl_seq_lag *l, int32_t n) {
    if (n <= l->cap) {
        return true;
    }
    const int32_t cap = n < 8 ? 8 : 2 * n;
    int32_t *row = realloc(l->row, sizeof(int32_t) * (size_t)cap);
    if (!row) {
        return false;
    }
    l->row = row;
    int32_t *lag = realloc(l->lag, sizeof(int32_t) * (size_t)cap);
    if (!lag) {
        return false;
    }
    l->lag = lag;
    l->cap = cap;
    return true;
}

int oxl_decode_image_embd(oxl_ctx *ctx, int32_t seq, const float *embd, int32_t n_tokens, int32_t grid_x,
                          int32_t grid_y, bool all_logits, oxl_error *err) {
    return oxl_decode_image_embd_attn(ctx, seq, embd, n_tokens, grid_x, grid_y, all_logits,
                                      ctx && ctx->model->hp.image_non_causal, err);
}

int oxl_decode_image_embd_attn(oxl_ctx *ctx, int32_t seq, const float *embd, int32_t n_tokens, int32_t grid_x,
                               int32_t grid_y, bool all_logits, bool non_causal, oxl_error *err) {
    if (!ctx) {
        return oxl_err_set(err, "decode image: no context");
    }
    if (seq < 0 || seq >= ctx->n_seq_max) {
        return oxl_err_set(err, "decode image: sequence %d; the context has %d (n_seq_max)", seq, ctx->n_seq_max);
    }
    if (n_tokens <= 0 || !embd) {
        return oxl_err_set(err, "decode image: %d embeddings at %p; an image needs at least one", n_tokens,
                           (const void *)embd);
    }
    const bool mrope = ctx->model->hp.mrope;
    if (mrope && (grid_x <= 0 || grid_y <= 0 || (int64_t)grid_x * grid_y != n_tokens)) {
        return oxl_err_set(err,
                           "decode image: grid %d x %d holds %lld tokens, not the %d embeddings given (an M-RoPE "
                           "model places them on that grid)",
                           grid_x, grid_y, (long long)grid_x * grid_y, n_tokens);
    }
    const int32_t row0 = ctx->n_past[seq];
    if (n_tokens > ctx->n_ctx - row0) {
        return oxl_err_set(err,
                           "decode image: %d embeddings do not fit sequence %d: it holds %d of its %d rows (n_ctx "
                           "per sequence)",
                           n_tokens, seq, row0, ctx->n_ctx);
    }
    oxl_seq_lag *l = &ctx->lag[seq];
    if (!grow((void **)&ctx->seq0_pos, &ctx->seq0_cap, n_tokens, sizeof(int32_t) + sizeof(int32_t) + 1) ||
        (mrope && !grow_lag(l, l->n + 1))) {
        return oxl_err_set(err, "decode image: out of memory");
    }
    int32_t *pos = ctx->seq0_pos;
    int32_t *seqs = pos + ctx->seq0_cap;
    int8_t *keep = (int8_t *)(seqs + ctx->seq0_cap);
    for (int32_t i = 0; i < n_tokens; i++) {
        pos[i] = row0 + i;
        seqs[i] = seq;
        keep[i] = all_logits || i == n_tokens - 1;
    }
    const oxl_batch b = {.n_tokens = n_tokens, .pos = pos, .seq_id = seqs, .logits = keep, .embd = embd};
    const image_at img = {
        .seq = seq, .row0 = row0, .p0 = oxl_seq_pos_next(ctx, seq), .grid_x = grid_x, .non_causal = non_causal};
    if (decode(ctx, &b, &img, err) != 0) {
        return -1;
    }
    /* the image advances the rope position by max(grid_x, grid_y) (mtmd's n_pos) over n_tokens rows */
    const int32_t advance = grid_x > grid_y ? grid_x : grid_y;
    if (mrope && n_tokens != advance) {
        l->row[l->n] = row0 + n_tokens;
        l->lag[l->n] = seq_lag(ctx, seq) + n_tokens - advance;
        l->n++;
    }
    return 0;
}

int oxl_decode(oxl_ctx *ctx, const oxl_token *tokens, int32_t n, bool all_logits, oxl_error *err) {
    if (n <= 0) {
        return oxl_err_set(err, "decode: empty batch");
    }
    /* the batch arrays live in ctx, grown once: no allocation per generated token */
    if (!grow((void **)&ctx->seq0_pos, &ctx->seq0_cap, n, sizeof(int32_t) + sizeof(int32_t) + 1)) {
        return oxl_err_set(err, "decode: out of memory");
    }
    int32_t *pos = ctx->seq0_pos;
    int32_t *seq = pos + ctx->seq0_cap;
    int8_t *keep = (int8_t *)(seq + ctx->seq0_cap);
    for (int32_t i = 0; i < n; i++) {
        pos[i] = ctx->n_past[0] + i;
        seq[i] = 0;
        keep[i] = all_logits || i == n - 1;
    }
    oxl_batch b = {.n_tokens = n, .token = tokens, .pos = pos, .seq_id = seq, .logits = keep};
    return oxl_decode_batch(ctx, &b, err);
}

const float *oxl_get_logits(const oxl_ctx *ctx, int32_t i) {
    if (i < 0) {
        for (i = ctx->last_n - 1; i >= 0 && ctx->logit_row[i] < 0; i--) {
        }
    }
    if (i < 0 || i >= ctx->last_n || ctx->logit_row[i] < 0) {
        return NULL;
    }
    return ctx->logits + (size_t)ctx->logit_row[i] * ctx->model->hp.n_vocab;
}

oxl_pooling oxl_ctx_pooling(const oxl_ctx *ctx) { return ctx->pooling; }

const float *oxl_get_embeddings_ith(const oxl_ctx *ctx, int32_t i) {
    if (!ctx->params.embeddings || ctx->pooling != OXL_POOLING_NONE) {
        return NULL;
    }
    if (i < 0) {
        i = ctx->last_n - 1;
    }
    if (i < 0 || i >= ctx->last_n) {
        return NULL;
    }
    return ctx->embd + (size_t)i * ctx->model->hp.n_embd;
}

const float *oxl_get_embeddings_seq(const oxl_ctx *ctx, int32_t seq) {
    if (ctx->pooling == OXL_POOLING_NONE || seq < 0 || seq >= ctx->n_seq_max || !ctx->embd_seq_ok[seq]) {
        return NULL;
    }
    return ctx->embd_seq + (size_t)seq * ctx->model->hp.n_embd;
}
