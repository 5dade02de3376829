/* The decoder's device path (decoder_gpu.h): the same graph as oxl_decoder_forward's layer loop and
 * head, recorded as one Vulkan command stream per pass. */
#include "decoder_gpu.h"

#include "context.h"
#include "errors.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

#ifndef OXL_VULKAN

int oxl_decoder_offload(oxl_model *m, int32_t n_gpu_layers, int32_t device, oxl_error *err) {
    return oxl_err_set(err, "this build has no Vulkan backend (configured with OXL_VULKAN=OFF or without "
                            "libvulkan-dev and glslc)");
}

void oxl_decoder_gpu_free(struct oxl_decoder_gpu *dg) {}

int oxl_decoder_gpu_first_layer(oxl_ctx *ctx) { return ctx->model->hp.n_layer; }

int oxl_decoder_gpu_forward(oxl_ctx *ctx, const oxl_ubatch *ub, int il0, float *x, float *logits) { return 0; }

#else

#include "gpu_ops.h"
#include "gpu_quant.h"
#include "moe_gpu.h"

#include <pthread.h>

/* ---- weights ------------------------------------------------------------------------------- */

/* One tensor on the device: its buffer (NULL: unbound) and what the products need. */
typedef struct dtensor {
    oxl_gpu_buf *buf;
    oxl_type type;
    int64_t ne[2];
    size_t row_size;
} dtensor;

typedef struct dlayer {
    dtensor attn_norm, attn_norm_b, attn_norm_2, attn_norm_2_b, wqkv, bqkv, wq, bq, wk, bk, wv, bv, q_norm, k_norm, wo,
        bo, attn_post_norm, ffn_norm, ffn_norm_b, ffn_gate, ffn_gate_b, ffn_up, ffn_up_b, ffn_down, ffn_down_b,
        ffn_post_norm;
    oxl_gpu_buf *aux;      /* (2 n_head) floats: ALiBi slopes, then the attention sinks */
    oxl_moe_gpu_layer moe; /* router and experts (moe_gpu.h); moe.host NULL on dense layers */
    bool has_sinks;
} dlayer;

struct oxl_decoder_gpu {
    oxl_gpu *g;
    pthread_mutex_t lock; /* one command stream at a time: contexts of the model may decode concurrently */
    int il0;              /* first offloaded layer */
    int n_layers;         /* layers offloaded */
    bool head;            /* the output norm and head are on the device */
    dlayer *layers;       /* [n_layers] */
    dtensor output_norm, output_norm_b, output, output_b;
};

/* Every tensor of a layer, in struct order. */
#define LAYER_TENSORS(l)                                                                                               \
    {                                                                                                                  \
        &(l)->attn_norm, &(l)->attn_norm_b, &(l)->attn_norm_2, &(l)->attn_norm_2_b, &(l)->wqkv, &(l)->bqkv, &(l)->wq,  \
            &(l)->bq, &(l)->wk, &(l)->bk, &(l)->wv, &(l)->bv, &(l)->q_norm, &(l)->k_norm, &(l)->wo, &(l)->bo,          \
            &(l)->attn_post_norm, &(l)->ffn_norm, &(l)->ffn_norm_b, &(l)->ffn_gate, &(l)->ffn_gate_b, &(l)->ffn_up,    \
            &(l)->ffn_up_b, &(l)->ffn_down, &(l)->ffn_down_b, &(l)->ffn_post_norm                                      \
    }

void oxl_decoder_gpu_free(struct oxl_decoder_gpu *dg) {
    if (!dg) {
        return;
    }
    for (int i = 0; dg->layers && i < dg->n_layers; i++) {
        dlayer *l = &dg->layers[i];
        dtensor *ts[] = LAYER_TENSORS(l);
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
            oxl_gpu_free(dg->g, ts[k]->buf);
        }
        oxl_gpu_free(dg->g, l->aux);
        oxl_moe_gpu_layer_free(dg->g, &l->moe);
    }
    dtensor *head[] = {&dg->output_norm, &dg->output_norm_b, &dg->output, &dg->output_b};
    for (size_t k = 0; k < 4; k++) {
        oxl_gpu_free(dg->g, head[k]->buf);
    }
    free(dg->layers);
    oxl_gpu_close(dg->g);
    pthread_mutex_destroy(&dg->lock);
    free(dg);
}

/* Whether the device multiplies weights of type t: its mul_mat shader and, for a non-f32 partner,
 * the activations' conversion (quantize_f16 / _bf16 / _q8_0 / _q8_1 / _q8_K; gpu_quant.h). */
static bool mm_supported(oxl_type t) { return oxl_gpu_mul_mat_supported(t); }

static int upload(oxl_gpu *g, const oxl_tensor *t, dtensor *out, oxl_error *err) {
    memset(out, 0, sizeof *out);
    if (!t->data) {
        return 0;
    }
    const size_t bytes = t->row_size * (size_t)(t->ne[1] > 0 ? t->ne[1] : 1);
    if (bytes > oxl_gpu_max_bind(g)) {
        return oxl_err_set(err, "%s: %zu bytes, more than one binding of the device reaches (%zu)",
                           t->name ? t->name : "a tensor", bytes, oxl_gpu_max_bind(g));
    }
    out->buf = oxl_gpu_alloc(g, bytes, err);
    if (!out->buf || oxl_gpu_write(g, out->buf, 0, t->data, bytes, err) != 0) {
        return oxl_err_prefix(err, "uploading %s", t->name ? t->name : "a tensor");
    }
    out->type = t->type;
    out->ne[0] = t->ne[0];
    out->ne[1] = t->ne[1];
    out->row_size = t->row_size;
    return 0;
}

/* What the device path does not run in layer l (NULL: it runs it). */
static const char *layer_unsupported(const oxl_model *m, const oxl_decoder *d, const oxl_decoder_layer *l, char *buf,
                                     size_t size) {
    const oxl_decoder_opts *o = &d->o;
    if (l->recurrent) {
        return "recurrent (Mamba) layers";
    }
    if (l->mla.wkv_a.data) {
        return "latent attention (MLA)";
    }
    const char *moe = l->moe.gate_inp.data ? oxl_moe_gpu_unsupported(NULL, &o->moe, &l->moe) : NULL;
    if (moe) {
        snprintf(buf, size, "these experts (%s)", moe);
        return buf;
    }
    if (o->ffn == OXL_FFN_XIELU) {
        return "the xIELU activation";
    }
    if (o->clamp_kqv > 0.0f) {
        return "clamped q/k/v";
    }
    if (o->attn_temp.scale != 0.0f) {
        return "the attention temperature";
    }
    if (m->hp.kv_src) {
        return "layers sharing another layer's KV cache";
    }
    if (m->hp.head_dim > OXL_GPU_FLASH_MAX_HEAD_DIM || m->hp.head_dim % 2) {
        return "this head size";
    }
    const oxl_tensor *mm[] = {&l->wqkv, &l->wq, &l->wk, &l->wv, &l->wo, &l->ffn_gate, &l->ffn_up, &l->ffn_down};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
        if (mm[i]->data && !mm_supported(mm[i]->type)) {
            snprintf(buf, size, "%s weights (%s; generated/gpu has no mul_mat shader for them)",
                     oxl_type_traits_get((uint32_t)mm[i]->type)->name, mm[i]->name ? mm[i]->name : "a projection");
            return buf;
        }
    }
    const oxl_tensor *fl[] = {
        &l->attn_norm, &l->attn_norm_b, &l->attn_norm_2, &l->attn_norm_2_b, &l->bqkv,       &l->bq,
        &l->bk,        &l->bv,          &l->q_norm,      &l->k_norm,        &l->bo,         &l->attn_post_norm,
        &l->ffn_norm,  &l->ffn_norm_b,  &l->ffn_gate_b,  &l->ffn_up_b,      &l->ffn_down_b, &l->ffn_post_norm,
        &l->attn_sinks};
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
        if (fl[i]->data && fl[i]->type != OXL_TYPE_F32) {
            snprintf(buf, size, "a %s vector (%s)", oxl_type_traits_get((uint32_t)fl[i]->type)->name,
                     fl[i]->name ? fl[i]->name : "?");
            return buf;
        }
    }
    return NULL;
}

int oxl_decoder_offload(oxl_model *m, int32_t n_gpu_layers, int32_t device, oxl_error *err) {
    oxl_decoder *d = m->weights;
    const oxl_hparams *hp = &m->hp;
    const int n_layer = hp->n_layer;
    const int nl = n_gpu_layers < 0 || n_gpu_layers > n_layer ? n_layer : n_gpu_layers;
    bool head = n_gpu_layers < 0 || n_gpu_layers > n_layer;
    const int il0 = n_layer - nl;
    char buf[160];
    for (int il = il0; il < n_layer; il++) {
        const char *why = layer_unsupported(m, d, &d->layers[il], buf, sizeof buf);
        if (why) {
            return oxl_err_set(err, "the Vulkan backend does not run %s (layer %d of architecture %s)", why, il,
                               m->arch->name);
        }
    }
    /* the head stays on the CPU when the device does not cover it */
    if (head && (!mm_supported(d->output.type) || (d->output_norm.data && d->output_norm.type != OXL_TYPE_F32) ||
                 (d->output_b.data && d->output_b.type != OXL_TYPE_F32))) {
        head = false;
    }
    oxl_gpu *g = oxl_gpu_open(device, err);
    if (!g) {
        return -1;
    }
    struct oxl_decoder_gpu *dg = calloc(1, sizeof *dg);
    if (!dg || !(dg->layers = calloc((size_t)(nl > 0 ? nl : 1), sizeof *dg->layers))) {
        free(dg);
        oxl_gpu_close(g);
        return oxl_err_set(err, "out of memory");
    }
    dg->g = g;
    pthread_mutex_init(&dg->lock, NULL);
    dg->il0 = il0;
    dg->n_layers = nl;
    dg->head = head;
    for (int il = il0; il < n_layer; il++) {
        const oxl_decoder_layer *l = &d->layers[il];
        dlayer *dl = &dg->layers[il - il0];
        const oxl_tensor *ts[] = LAYER_TENSORS(l);
        dtensor *dts[] = LAYER_TENSORS(dl);
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
            if (upload(g, ts[i], dts[i], err) != 0) {
                oxl_decoder_gpu_free(dg);
                return -1;
            }
        }
        /* ALiBi slopes and sinks of the layer's heads */
        const oxl_attn_params ap = {.n_head = hp->n_head, .max_bias = d->o.max_alibi_bias};
        float *aux = calloc(2 * (size_t)hp->n_head, sizeof(float));
        if (!aux) {
            oxl_decoder_gpu_free(dg);
            return oxl_err_set(err, "out of memory");
        }
        for (int h = 0; h < hp->n_head; h++) {
            aux[h] = oxl_attention_slope(&ap, h);
            aux[hp->n_head + h] = l->attn_sinks.data ? ((const float *)l->attn_sinks.data)[h] : 0.0f;
        }
        dl->has_sinks = l->attn_sinks.data != NULL;
        if (l->moe.gate_inp.data && oxl_moe_gpu_upload(g, &l->moe, &dl->moe, err) != 0) {
            oxl_decoder_gpu_free(dg);
            return oxl_err_prefix(err, "the experts of layer %d", il);
        }
        dl->aux = oxl_gpu_alloc(g, 2 * (size_t)hp->n_head * sizeof(float), err);
        const int rc = dl->aux ? oxl_gpu_write(g, dl->aux, 0, aux, 2 * (size_t)hp->n_head * sizeof(float), err) : -1;
        free(aux);
        if (rc != 0) {
            oxl_decoder_gpu_free(dg);
            return -1;
        }
    }
    if (head && (upload(g, &d->output_norm, &dg->output_norm, err) != 0 ||
                 upload(g, &d->output_norm_b, &dg->output_norm_b, err) != 0 ||
                 upload(g, &d->output, &dg->output, err) != 0 || upload(g, &d->output_b, &dg->output_b, err) != 0)) {
        oxl_decoder_gpu_free(dg);
        return -1;
    }
    d->gpu = dg;
    m->gpu_layers = nl;
    oxl_log_msg(OXL_LOG_LEVEL_INFO, "offloading %d of %d repeating layers%s to Vulkan device %d (%s)\n", nl, n_layer,
                head ? " and the output layer" : "", oxl_gpu_index(g), oxl_gpu_name(g));
    return 0;
}

/* ---- a context's device state ---------------------------------------------------------------- */

typedef struct dctx {
    bool disabled;        /* the context's settings are not covered: the CPU runs every layer */
    bool f32;             /* an f32 KV cache (else f16) */
    oxl_gpu_buf **k, **v; /* [n_layer - il0] f16 caches: n_seq_max * n_ctx rows of n_head_kv * head_dim */
    int n_dev;
    int32_t cap; /* tokens the activation buffers hold */
    int32_t cap_out;
    oxl_gpu_buf *x, *xb, *xb2, *qkv, *q, *kk, *vv, *att, *ao, *fo, *gate, *up, *xh;
    oxl_gpu_buf *fo2, *moe; /* MoE layers: the experts' output beside a dense FFN's (grok); the block's scratch */
    oxl_gpu_buf *cs[2], *tok[2], *rows;
    oxl_gpu_buf *xout, *logits;
    /* host staging of the pass's tables */
    float *h_cs;
    int32_t *h_tok;
    uint32_t *h_rows;
    oxl_gpu *g;
    struct oxl_decoder_gpu *dg; /* the model's device side (its lock) */
} dctx;

static void free_acts(dctx *c) {
    oxl_gpu_buf **b[] = {&c->x,     &c->xb,     &c->xb2,    &c->qkv,  &c->q,   &c->kk, &c->vv,
                         &c->att,   &c->ao,     &c->fo,     &c->gate, &c->up,  &c->xh, &c->cs[0],
                         &c->cs[1], &c->tok[0], &c->tok[1], &c->rows, &c->fo2, &c->moe};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        oxl_gpu_free(c->g, *b[i]);
        *b[i] = NULL;
    }
    free(c->h_cs);
    free(c->h_tok);
    free(c->h_rows);
    c->h_cs = NULL;
    c->h_tok = NULL;
    c->h_rows = NULL;
    c->cap = 0;
}

static void dctx_free(void *p) {
    dctx *c = p;
    if (!c) {
        return;
    }
    if (c->g) {
        pthread_mutex_lock(&c->dg->lock);
        free_acts(c);
        for (int i = 0; i < c->n_dev; i++) {
            oxl_gpu_free(c->g, c->k ? c->k[i] : NULL);
            oxl_gpu_free(c->g, c->v ? c->v[i] : NULL);
        }
        oxl_gpu_free(c->g, c->xout);
        oxl_gpu_free(c->g, c->logits);
        pthread_mutex_unlock(&c->dg->lock);
    }
    free(c->k);
    free(c->v);
    free(c);
}

int oxl_decoder_gpu_first_layer(oxl_ctx *ctx) {
    const oxl_model *m = ctx->model;
    const oxl_decoder *d = m->weights;
    if (!d->gpu) {
        return m->hp.n_layer;
    }
    dctx *c = ctx->gpu;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) {
            return m->hp.n_layer;
        }
        ctx->gpu = c;
        ctx->gpu_free = dctx_free;
        c->dg = d->gpu;
        const char *why = NULL;
        if (ctx->params.type_k != ctx->params.type_v ||
            (ctx->params.type_k != OXL_KV_F16 && ctx->params.type_k != OXL_KV_F32)) {
            why = "a KV cache type other than f16 or f32 for both K and V (-ctk/-ctv)";
        } else if (ctx->adapters) {
            why = "LoRA adapters and control vectors";
        } else if ((size_t)ctx->n_seq_max * (size_t)ctx->n_ctx * (size_t)m->hp.n_head_kv * (size_t)m->hp.head_dim *
                       (ctx->params.type_k == OXL_KV_F32 ? 4 : 2) >
                   oxl_gpu_max_bind(d->gpu->g)) {
            why = "a layer's KV cache larger than one binding of the device reaches (a smaller -c or -np)";
        }
        if (why) {
            oxl_log_msg(OXL_LOG_LEVEL_WARN, "-ngl: the Vulkan backend does not run %s: this context runs on the CPU\n",
                        why);
            c->disabled = true;
        }
    }
    return c->disabled ? m->hp.n_layer : d->gpu->il0;
}

/* A device buffer of n bytes in *b (kept when big enough). */
static int ensure(oxl_gpu *g, oxl_gpu_buf **b, size_t n, oxl_error *err) {
    if (*b && oxl_gpu_buf_size(*b) >= n) {
        return 0;
    }
    if (n > oxl_gpu_max_bind(g)) {
        return oxl_err_set(err, "a pass's activations of %zu bytes pass one binding of the device (%zu): a smaller -b",
                           n, oxl_gpu_max_bind(g));
    }
    oxl_gpu_free(g, *b);
    *b = oxl_gpu_alloc(g, n ? n : 4, err);
    return *b ? 0 : -1;
}

static int dctx_prepare(oxl_ctx *ctx, dctx *c, int32_t n, int32_t n_out, oxl_error *err) {
    const oxl_model *m = ctx->model;
    const oxl_decoder *d = m->weights;
    const oxl_hparams *hp = &m->hp;
    oxl_gpu *g = d->gpu->g;
    c->g = g;
    const size_t E = hp->n_embd, D = hp->head_dim, Q = (size_t)hp->n_head * D, KV = (size_t)hp->n_head_kv * D;
    const size_t F = hp->n_ff, QKV = Q + 2 * KV;
    if (!c->k) {
        c->n_dev = hp->n_layer - d->gpu->il0;
        c->k = calloc((size_t)c->n_dev, sizeof *c->k);
        c->v = calloc((size_t)c->n_dev, sizeof *c->v);
        if (!c->k || !c->v) {
            return oxl_err_set(err, "out of memory");
        }
        c->f32 = ctx->params.type_k == OXL_KV_F32;
        const size_t bytes = (size_t)ctx->n_seq_max * (size_t)ctx->n_ctx * KV * (c->f32 ? 4 : 2);
        for (int i = 0; i < c->n_dev; i++) {
            if (!(c->k[i] = oxl_gpu_alloc(g, bytes, err)) || !(c->v[i] = oxl_gpu_alloc(g, bytes, err)) ||
                oxl_gpu_fill(g, c->k[i], 0, (bytes + 3) & ~(size_t)3, 0, err) != 0 ||
                oxl_gpu_fill(g, c->v[i], 0, (bytes + 3) & ~(size_t)3, 0, err) != 0) {
                return oxl_err_prefix(err, "the KV cache of layer %d", d->gpu->il0 + i);
            }
        }
    }
    if (n > c->cap) {
        free_acts(c);
        const size_t nn = (size_t)n, f = sizeof(float);
        size_t widest = E > 2 * F ? E : 2 * F;
        widest = widest > QKV ? widest : QKV;
        const int n_rot = d->o.rope.n_rot > d->o.rope_swa.n_rot ? d->o.rope.n_rot : d->o.rope_swa.n_rot;
        const size_t rot = (size_t)(n_rot > 0 ? n_rot : 2);
        if (ensure(g, &c->x, E * nn * f, err) || ensure(g, &c->xb, E * nn * f, err) ||
            ensure(g, &c->xb2, E * nn * f, err) || ensure(g, &c->qkv, QKV * nn * f, err) ||
            ensure(g, &c->q, Q * nn * f, err) || ensure(g, &c->kk, KV * nn * f, err) ||
            ensure(g, &c->vv, KV * nn * f, err) || ensure(g, &c->att, Q * nn * f, err) ||
            ensure(g, &c->ao, E * nn * f, err) || ensure(g, &c->fo, E * nn * f, err) ||
            (d->o.moe.n_expert > 0 && (ensure(g, &c->fo2, E * nn * f, err) ||
                                       ensure(g, &c->moe, oxl_moe_gpu_work_size(&d->o.moe, hp->n_embd, n), err))) ||
            ensure(g, &c->gate, 2 * F * nn * f, err) || ensure(g, &c->up, F * nn * f, err) ||
            /* xh: the activations in the weights' partner format, at most 2 bytes per element (f16,
             * bf16; q8_0, q8_1 and q8_K blocks take less) */
            ensure(g, &c->xh, widest * nn * 2 + 4, err) || ensure(g, &c->cs[0], rot * nn * f, err) ||
            ensure(g, &c->cs[1], rot * nn * f, err) || ensure(g, &c->tok[0], 4 * nn * 4, err) ||
            ensure(g, &c->tok[1], 4 * nn * 4, err) || ensure(g, &c->rows, nn * 4, err)) {
            return -1;
        }
        c->h_cs = malloc(2 * rot * nn * f);
        c->h_tok = malloc(8 * nn * 4);
        c->h_rows = malloc(nn * 4);
        if (!c->h_cs || !c->h_tok || !c->h_rows) {
            return oxl_err_set(err, "out of memory");
        }
        c->cap = n;
    }
    if (d->gpu->head && n_out > c->cap_out) {
        if (ensure(g, &c->xout, E * (size_t)n_out * sizeof(float), err) ||
            ensure(g, &c->logits, (size_t)hp->n_vocab * (size_t)n_out * sizeof(float), err)) {
            return -1;
        }
        c->cap_out = n_out;
    }
    return 0;
}

/* ---- recording the pass ---------------------------------------------------------------------- */

typedef struct pass {
    oxl_ctx *ctx;
    const oxl_decoder *d;
    dctx *c;
    oxl_gpu *g;
    int32_t n;
    oxl_error *err;
} pass;

/* y (rows of w, n) = w . x (+ b), x being n columns of w->ne[0] floats. */
static int linear(pass *ps, const dtensor *w, const dtensor *b, oxl_gpu_buf *x, int32_t n, oxl_gpu_buf *y) {
    const uint32_t K = (uint32_t)w->ne[0], rows = (uint32_t)w->ne[1];
    /* x converted into the weights' partner format in xh, then mul_mat_<type> */
    if (oxl_gpu_mul_mat_f32(ps->g, w->type, w->buf, 0, (uint32_t)w->row_size, x, 0, K, ps->c->xh, y, 0, rows, rows,
                            (uint32_t)n, K, ps->err) != 0) {
        return -1;
    }
    if (b->buf) {
        return oxl_gpu_binary(ps->g, "add", y, 0, b->buf, 0, rows, y, 0, rows * (uint32_t)n, 0.0f, ps->err);
    }
    return 0;
}

static int norm(pass *ps, const dtensor *w, const dtensor *b, oxl_gpu_buf *x, oxl_gpu_buf *y, uint32_t dim,
                uint32_t cols) {
    const oxl_decoder_opts *o = &ps->d->o;
    const uint32_t w_rows = w && w->buf && w->ne[1] > 1 ? (uint32_t)w->ne[1] : 1;
    return oxl_gpu_norm(ps->g, o->norm == OXL_NORM_RMS, x, 0, w ? w->buf : NULL, 0, w_rows, b ? b->buf : NULL, 0, y, 0,
                        dim, cols, o->norm_eps, ps->err);
}

static int add(pass *ps, oxl_gpu_buf *x, oxl_gpu_buf *y, uint32_t n) {
    return oxl_gpu_binary(ps->g, "add", x, 0, y, 0, n, x, 0, n, 0.0f, ps->err);
}

static int scale(pass *ps, oxl_gpu_buf *x, uint32_t n, float s) {
    return oxl_gpu_binary(ps->g, "scale", x, 0, x, 0, 1, x, 0, n, s, ps->err);
}

static const char *rope_shader(oxl_rope_mode mode) {
    return mode == OXL_ROPE_NORM ? "rope_norm" : mode == OXL_ROPE_NEOX ? "rope_neox" : "rope_multi";
}

static int rope(pass *ps, const oxl_rope *r, int swa, oxl_gpu_buf *x, uint32_t n_head) {
    const oxl_hparams *hp = &ps->ctx->model->hp;
    return oxl_gpu_rope(ps->g, rope_shader(r->mode), x, 0, n_head * (uint32_t)hp->head_dim, ps->c->cs[swa], 0,
                        (uint32_t)r->n_rot, (uint32_t)hp->head_dim, n_head, (uint32_t)ps->n, r->fused, ps->err);
}

/* The dense FFN on f_in into c->fo. */
static int dense_ffn(pass *ps, const dlayer *l, oxl_gpu_buf *f_in) {
    dctx *c = ps->c;
    const oxl_hparams *hp = &ps->ctx->model->hp;
    const uint32_t F = (uint32_t)hp->n_ff, n = (uint32_t)ps->n;
    oxl_gpu_buf *h = c->gate;
    oxl_gpu_glu_push gp = {F, n, 0, F, 0, F, 0, F};
    switch (ps->d->o.ffn) {
    case OXL_FFN_SWIGLU:
    case OXL_FFN_GEGLU:
        if (linear(ps, &l->ffn_gate, &l->ffn_gate_b, f_in, ps->n, c->gate) ||
            linear(ps, &l->ffn_up, &l->ffn_up_b, f_in, ps->n, c->up) ||
            oxl_gpu_glu(ps->g, ps->d->o.ffn == OXL_FFN_SWIGLU ? "glu_swiglu" : "glu_geglu", c->gate, c->up, c->gate,
                        &gp, ps->err)) {
            return -1;
        }
        break;
    case OXL_FFN_GELU:
        if (linear(ps, &l->ffn_up, &l->ffn_up_b, f_in, ps->n, c->gate) ||
            oxl_gpu_glu(ps->g, "gelu", c->gate, NULL, c->gate, &gp, ps->err)) {
            return -1;
        }
        break;
    case OXL_FFN_SWIGLU_FUSED: {
        const dtensor none = {0};
        gp = (oxl_gpu_glu_push){F, n, 0, 2 * F, F, 2 * F, 0, F};
        if (linear(ps, &l->ffn_up, &none, f_in, ps->n, c->gate) ||
            oxl_gpu_glu(ps->g, "glu_swiglu", c->gate, c->gate, c->up, &gp, ps->err)) {
            return -1;
        }
        h = c->up;
        break;
    }
    case OXL_FFN_XIELU: return oxl_err_set(ps->err, "the xIELU activation is not on the device");
    }
    return linear(ps, &l->ffn_down, &l->ffn_down_b, h, ps->n, c->fo);
}

/* The layer's FFN on f_in into c->fo, as decoder.c's ffn: the dense FFN, the experts (moe_gpu.h),
 * or both summed and scaled by moe_dense_scale (grok); then the post-FFN norm. */
static int ffn(pass *ps, const dlayer *l, oxl_gpu_buf *f_in) {
    dctx *c = ps->c;
    const oxl_decoder_opts *o = &ps->d->o;
    const uint32_t E = (uint32_t)ps->ctx->model->hp.n_embd, n = (uint32_t)ps->n;
    if (!l->moe.host) {
        if (dense_ffn(ps, l, f_in)) {
            return -1;
        }
    } else {
        const bool dense = l->ffn_up.buf != NULL;
        if (oxl_moe_gpu_forward(ps->g, &o->moe, &l->moe, E, (oxl_gpu_bind){.buf = f_in}, ps->n,
                                (oxl_gpu_bind){.buf = dense ? c->fo2 : c->fo}, (oxl_gpu_bind){.buf = c->moe},
                                ps->err) ||
            (dense && (dense_ffn(ps, l, f_in) || add(ps, c->fo, c->fo2, E * n) ||
                       scale(ps, c->fo, E * n, o->moe_dense_scale)))) {
            return -1;
        }
    }
    if (l->ffn_post_norm.buf) {
        return norm(ps, &l->ffn_post_norm, NULL, c->fo, c->fo, E, n);
    }
    return 0;
}

static int layer(pass *ps, int il, const oxl_rope *ropes) {
    const oxl_model *m = ps->ctx->model;
    const oxl_hparams *hp = &m->hp;
    const oxl_decoder *d = ps->d;
    const oxl_decoder_opts *o = &d->o;
    const oxl_decoder_layer *hl = &d->layers[il];
    const int li = il - d->gpu->il0;
    const dlayer *l = &d->gpu->layers[li];
    dctx *c = ps->c;
    const uint32_t n = (uint32_t)ps->n, E = (uint32_t)hp->n_embd, D = (uint32_t)hp->head_dim;
    const uint32_t Q = (uint32_t)hp->n_head * D, KV = (uint32_t)hp->n_head_kv * D;
    const int swa = oxl_decoder_is_swa(o, il) ? 1 : 0;
    const oxl_rope *r = &ropes[swa];
    oxl_gpu_buf *a = c->x;
    if (l->attn_norm.buf) {
        if (norm(ps, &l->attn_norm, &l->attn_norm_b, c->x, c->xb, E, n)) {
            return -1;
        }
        a = c->xb;
    }
    if (l->attn_norm_2.buf) {
        if (norm(ps, &l->attn_norm_2, &l->attn_norm_2_b, c->x, c->xb2, E, n)) {
            return -1;
        }
        a = c->xb2;
    }
    /* q, k, v */
    if (l->wqkv.buf) {
        if (linear(ps, &l->wqkv, &l->bqkv, a, ps->n, c->qkv)) {
            return -1;
        }
        const size_t f = sizeof(float), row = (size_t)(Q + 2 * KV) * f;
        for (uint32_t j = 0; j < n; j++) {
            if (oxl_gpu_rec_copy(ps->g, c->qkv, j * row, c->q, (size_t)j * Q * f, Q * f, ps->err) ||
                oxl_gpu_rec_copy(ps->g, c->qkv, j * row + Q * f, c->kk, (size_t)j * KV * f, KV * f, ps->err) ||
                oxl_gpu_rec_copy(ps->g, c->qkv, j * row + (Q + KV) * f, c->vv, (size_t)j * KV * f, KV * f, ps->err)) {
                return -1;
            }
        }
    } else if (linear(ps, &l->wq, &l->bq, a, ps->n, c->q) || linear(ps, &l->wk, &l->bk, a, ps->n, c->kk) ||
               linear(ps, &l->wv, &l->bv, a, ps->n, c->vv)) {
        return -1;
    }
    const uint32_t d_q = o->qk_norm_full ? Q : D, d_k = o->qk_norm_full ? KV : D;
    if (l->q_norm.buf && !o->qk_norm_after_rope && norm(ps, &l->q_norm, NULL, c->q, c->q, d_q, n * (Q / d_q))) {
        return -1;
    }
    if (l->k_norm.buf && !o->qk_norm_after_rope && norm(ps, &l->k_norm, NULL, c->kk, c->kk, d_k, n * (KV / d_k))) {
        return -1;
    }
    const bool roped = r->mode != OXL_ROPE_NONE && !hl->no_rope;
    if (roped && (rope(ps, r, swa, c->q, (uint32_t)hp->n_head) || rope(ps, r, swa, c->kk, (uint32_t)hp->n_head_kv))) {
        return -1;
    }
    if (o->qk_rms_after_rope && roped &&
        (oxl_gpu_norm(ps->g, true, c->q, 0, NULL, 0, 0, NULL, 0, c->q, 0, D, n * (uint32_t)hp->n_head, o->norm_eps,
                      ps->err) ||
         oxl_gpu_norm(ps->g, true, c->kk, 0, NULL, 0, 0, NULL, 0, c->kk, 0, D, n * (uint32_t)hp->n_head_kv, o->norm_eps,
                      ps->err))) {
        return -1;
    }
    if (o->qk_norm_after_rope) {
        if (l->k_norm.buf && norm(ps, &l->k_norm, NULL, c->kk, c->kk, d_k, n * (KV / d_k))) {
            return -1;
        }
        if (l->q_norm.buf && norm(ps, &l->q_norm, NULL, c->q, c->q, d_q, n * (Q / d_q))) {
            return -1;
        }
    }
    if (o->q_scale != 0.0f && scale(ps, c->q, Q * n, o->q_scale)) {
        return -1;
    }
    /* the cache rows, then attention over them */
    if (oxl_gpu_set_rows(ps->g, c->f32, c->kk, 0, KV, c->rows, 0, c->k[li], 0, KV, KV, n, ps->err) ||
        oxl_gpu_set_rows(ps->g, c->f32, c->vv, 0, KV, c->rows, 0, c->v[li], 0, KV, KV, n, ps->err)) {
        return -1;
    }
    const float cap = o->attn_softcap;
    const oxl_gpu_flash_push fp = {
        .head_dim = D,
        .n_head = (uint32_t)hp->n_head,
        .n_head_kv = (uint32_t)hp->n_head_kv,
        .n_tok = n,
        .q_tok = Q,
        .k_row = KV,
        .v_row = KV,
        .o_tok = Q,
        .flags = (cap != 0.0f ? 1u : 0u) | (o->max_alibi_bias > 0.0f ? 2u : 0u) | (l->has_sinks ? 4u : 0u),
        .scale = cap != 0.0f ? o->kq_scale / cap : o->kq_scale,
        .softcap = cap,
    };
    if (oxl_gpu_flash_attn(ps->g, c->f32, c->q, c->k[li], c->v[li], c->att, l->aux, c->tok[swa], &fp, ps->err) ||
        linear(ps, &l->wo, &l->bo, c->att, ps->n, c->ao)) {
        return -1;
    }
    if (l->attn_post_norm.buf && norm(ps, &l->attn_post_norm, NULL, c->ao, c->ao, E, n)) {
        return -1;
    }
    if (o->residual_scale != 0.0f && scale(ps, c->ao, E * n, o->residual_scale)) {
        return -1;
    }
    /* feed-forward */
    if (o->parallel || (o->parallel_if_no_ffn_norm && !l->ffn_norm.buf)) {
        oxl_gpu_buf *f_in = c->xb;
        if (l->ffn_norm.buf) {
            if (norm(ps, &l->ffn_norm, &l->ffn_norm_b, c->x, c->xb2, E, n)) {
                return -1;
            }
            f_in = c->xb2;
        }
        if (ffn(ps, l, f_in) || add(ps, c->x, c->ao, E * n)) {
            return -1;
        }
    } else if (!l->ffn_down.buf && !l->moe.host) {
        return add(ps, c->x, c->ao, E * n);
    } else {
        if (add(ps, c->x, c->ao, E * n)) {
            return -1;
        }
        oxl_gpu_buf *f_in = c->x;
        if (l->ffn_norm.buf) {
            if (norm(ps, &l->ffn_norm, &l->ffn_norm_b, c->x, c->xb2, E, n)) {
                return -1;
            }
            f_in = c->xb2;
        }
        if (ffn(ps, l, f_in)) {
            return -1;
        }
    }
    if (o->residual_scale != 0.0f && scale(ps, c->fo, E * n, o->residual_scale)) {
        return -1;
    }
    return add(ps, c->x, c->fo, E * n);
}

/* The rope factors of the context, as decoder.c's rope_factors. */
static const float *rope_factors(const oxl_ctx *ctx, const oxl_decoder *d) {
    if (d->rope_freqs.data) {
        return d->rope_freqs.data;
    }
    const int64_t n_ctx_seq = ((int64_t)ctx->n_ctx + 255) / 256 * 256;
    return n_ctx_seq > d->o.n_ctx_orig ? d->rope_long.data : d->rope_short.data;
}

static int run(oxl_ctx *ctx, const oxl_ubatch *ub, int il0, float *x, float *logits, oxl_error *err) {
    const oxl_model *m = ctx->model;
    const oxl_hparams *hp = &m->hp;
    const oxl_decoder *d = m->weights;
    dctx *c = ctx->gpu;
    const int32_t n = ub->n;
    const bool head = d->gpu->head && !ub->embd && ub->n_out > 0;
    const size_t per_out = (size_t)hp->n_vocab * sizeof(float);
    const int32_t out_chunk =
        (int32_t)(oxl_gpu_max_bind(d->gpu->g) / per_out < (size_t)ub->n_out ? oxl_gpu_max_bind(d->gpu->g) / per_out
                                                                            : (size_t)ub->n_out);
    if (head && out_chunk < 1) {
        return oxl_err_set(err, "one token's logits (%zu bytes) pass one binding of the device", per_out);
    }
    if (dctx_prepare(ctx, c, n, head ? out_chunk : 0, err) != 0) {
        return -1;
    }
    oxl_gpu *g = d->gpu->g;
    pass ps = {.ctx = ctx, .d = d, .c = c, .g = g, .n = n, .err = err};
    /* the pass's tables: cache rows, visible ranges (full and sliding-window layers), cos/sin */
    oxl_rope ropes[2] = {d->o.rope, d->o.rope_swa};
    ropes[0].factors = ropes[1].factors = rope_factors(ctx, d);
    const int n_rot = ropes[0].n_rot > ropes[1].n_rot ? ropes[0].n_rot : ropes[1].n_rot;
    const size_t rot = (size_t)(n_rot > 0 ? n_rot : 2);
    const oxl_kv_view kv = oxl_memory_kv_view(ctx->mem, il0, ub);
    for (int swa = 0; swa < 2; swa++) {
        const oxl_attn_params ap = {.n_head = hp->n_head,
                                    .n_head_kv = hp->n_head_kv,
                                    .head_dim = hp->head_dim,
                                    .n_swa = swa && !d->o.swa_chunked ? d->o.n_swa : 0,
                                    .n_chunk = swa && d->o.swa_chunked ? d->o.n_swa : 0};
        int32_t *t = c->h_tok + (size_t)swa * 4 * n;
        float *cs = c->h_cs + (size_t)swa * rot * n;
        for (int32_t j = 0; j < n; j++) {
            int32_t lo, n_kv;
            oxl_attention_range(&kv, &ap, j, &lo, &n_kv);
            t[4 * j] = ub->seq[j] * kv.n_ctx;
            t[4 * j + 1] = lo;
            t[4 * j + 2] = n_kv;
            t[4 * j + 3] = ub->pos[j];
            if (ropes[swa].mode != OXL_ROPE_NONE && ropes[swa].n_rot > 0) {
                const int32_t p4[4] = {ub->pos[j], ub->pos[j], ub->pos[j], 0};
                oxl_rope_cos_sin(ub->mpos ? ub->mpos + 4 * (size_t)j : p4, &ropes[swa],
                                 cs + (size_t)j * ropes[swa].n_rot);
            }
        }
    }
    for (int32_t j = 0; j < n; j++) {
        c->h_rows[j] = (uint32_t)(ub->seq[j] * kv.n_ctx + ub->pos[j]);
    }
    const size_t E = (size_t)hp->n_embd, f = sizeof(float);
    if (oxl_gpu_begin(g, err) != 0) {
        return -1;
    }
    int rc = oxl_gpu_rec_write(g, c->x, 0, x, E * (size_t)n * f, err);
    rc = rc ? rc : oxl_gpu_rec_write(g, c->rows, 0, c->h_rows, (size_t)n * 4, err);
    for (int swa = 0; swa < 2 && !rc; swa++) {
        rc = oxl_gpu_rec_write(g, c->tok[swa], 0, c->h_tok + (size_t)swa * 4 * n, (size_t)n * 16, err);
        if (!rc && ropes[swa].mode != OXL_ROPE_NONE && ropes[swa].n_rot > 0) {
            rc = oxl_gpu_rec_write(g, c->cs[swa], 0, c->h_cs + (size_t)swa * rot * n,
                                   (size_t)n * (size_t)ropes[swa].n_rot * f, err);
        }
    }
    for (int il = il0; il < hp->n_layer && !rc; il++) {
        rc = layer(&ps, il, ropes);
    }
    if (!rc && head) {
        /* the output tokens in chunks whose logits one binding holds */
        const uint32_t V = (uint32_t)hp->n_vocab;
        const dtensor none = {0};
        for (int32_t j0 = 0; j0 < ub->n_out && !rc; j0 += out_chunk) {
            const int32_t nc = ub->n_out - j0 < out_chunk ? ub->n_out - j0 : out_chunk;
            for (int32_t j = 0; j < nc && !rc; j++) {
                rc = oxl_gpu_rec_copy(g, c->x, (size_t)ub->out_ids[j0 + j] * E * f, c->xout, (size_t)j * E * f, E * f,
                                      err);
            }
            rc =
                rc ? rc
                   : norm(&ps, &d->gpu->output_norm, &d->gpu->output_norm_b, c->xout, c->xb, (uint32_t)E, (uint32_t)nc);
            rc = rc ? rc : linear(&ps, &d->gpu->output, &none, c->xb, nc, c->logits);
            if (!rc && d->gpu->output_b.buf) {
                rc = oxl_gpu_binary(g, "add", c->logits, 0, d->gpu->output_b.buf, 0, V, c->logits, 0, V * (uint32_t)nc,
                                    0.0f, err);
            }
            if (!rc && d->o.logit_scale != 0.0f) {
                rc = scale(&ps, c->logits, V * (uint32_t)nc, d->o.logit_scale);
            }
            if (!rc && d->o.final_softcap != 0.0f) {
                rc = oxl_gpu_binary(g, "softcap", c->logits, 0, c->logits, 0, 1, c->logits, 0, V * (uint32_t)nc,
                                    d->o.final_softcap, err);
            }
            rc = rc ? rc : oxl_gpu_rec_read(g, c->logits, 0, logits + (size_t)j0 * V, (size_t)V * (size_t)nc * f, err);
        }
    } else if (!rc) {
        rc = oxl_gpu_rec_read(g, c->x, 0, x, E * (size_t)n * f, err);
    }
    if (rc) {
        oxl_gpu_submit(g, NULL);
        return -1;
    }
    if (oxl_gpu_submit(g, err) != 0) {
        return -1;
    }
    return head ? 1 : 0;
}

int oxl_decoder_gpu_forward(oxl_ctx *ctx, const oxl_ubatch *ub, int il0, float *x, float *logits) {
    oxl_error err = {0};
    struct oxl_decoder_gpu *dg = ((const oxl_decoder *)ctx->model->weights)->gpu;
    pthread_mutex_lock(&dg->lock);
    const int r = run(ctx, ub, il0, x, logits, &err);
    pthread_mutex_unlock(&dg->lock);
    if (r >= 0) {
        return r;
    }
    oxl_log_msg(OXL_LOG_LEVEL_ERROR, "Vulkan: the pass failed: %s\n", err.msg);
    if (ub->n_out > 0 && logits) {
        memset(logits, 0, (size_t)ctx->model->hp.n_vocab * (size_t)ub->n_out * sizeof(float));
    }
    return 1;
}

#endif
