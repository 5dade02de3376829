/* BERT ("bert") and Nomic-BERT ("nomic-bert") encoders, as llama.cpp's src/models/bert.cpp builds
 * them (llama_model_bert::graph, shared by both): embedding models without an output head, run
 * through llama_encode with non-causal attention (attention.causal has no effect there).
 *
 *   x = LN(token_embd[tokens] + token_types[0] (+ position_embd[positions]  bert))
 *   per layer:  q,k,v = W·x + b                  (attn_q/k/v or fused attn_qkv; biases optional)
 *               q,k = rope_neox(q,k)              (nomic-bert)
 *               h = LN(x + Wo · attention(q, k, v) + bo, attn_output_norm)   (post-norm)
 *               x = LN(h + ffn(h), layer_output_norm)
 *               ffn = down · gelu(up·h + b) + b   (bert)
 *                   = down · (silu(gate·h) * up·h) (nomic-bert)
 *   embedding of a token = x after the last layer (llama.cpp's t_embd; no final norm)
 *
 * Each pass encodes its sequences afresh, as llama_encode does on a model without memory: a
 * token's position is its index among its sequence's tokens in the pass (a context that decodes a
 * sequence again without truncating it gives the same embeddings), and it attends to every token of
 * its sequence in the pass, so the whole sequence must be in one decode of at most n_batch tokens,
 * as llama_encode requires. Attention runs in the unfused f32 ops of
 * llama.cpp's graph without flash attention: kq = K·q (ggml's f32 vec_dot), softmax(kq/sqrt(d) +
 * mask) with the sum in double, then each output element the vec_dot of V's transposed row with
 * kq. The model has no vocabulary logits: the rows of logits a decode asks for are zeros. */
#include "decoder.h"
#include "errors.h"
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct bert_layer {
    oxl_tensor wqkv, bqkv, wq, bq, wk, bk, wv, bv;
    oxl_tensor wo, bo;
    oxl_tensor attn_out_norm, attn_out_norm_b;
    oxl_tensor ffn_up, ffn_up_b, ffn_gate, ffn_down, ffn_down_b;
    oxl_tensor layer_out_norm, layer_out_norm_b;
} bert_layer;

typedef struct bert_weights {
    bool nomic;
    float norm_eps;
    oxl_rope rope; /* nomic-bert: NeoX; bert: none */
    oxl_tensor token_embd, type_embd, pos_embd, tok_norm, tok_norm_b;
    bert_layer *layers;
} bert_weights;

static void bert_free(void *weights) {
    bert_weights *w = weights;
    if (w) {
        free(w->layers);
        free(w);
    }
}

static int bert_load_common(oxl_model *m, bool nomic, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER};
    if (oxl_decoder_hparams(m, &o, nomic ? OXL_ROPE_NEOX : OXL_ROPE_NONE, err)) {
        return -1;
    }
    oxl_hparams *hp = &m->hp;
    if (hp->n_head_kv != hp->n_head || hp->head_dim * hp->n_head != hp->n_embd) {
        return oxl_err_set(err, "%s: %s needs head_count_kv = head_count and head_dim * head_count = n_embd", path,
                           m->arch->name);
    }
    int64_t n_types = 0;
    if (oxl_gguf_get_int(m->gguf, "tokenizer.ggml.token_type_count", &n_types, err) != 1 || n_types <= 0) {
        return oxl_err_set(err, "%s: %s model needs to define token type count (tokenizer.ggml.token_type_count)", path,
                           m->arch->name);
    }
    bert_weights *w = calloc(1, sizeof *w);
    if (!w) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    m->weights = w;
    w->nomic = nomic;
    w->norm_eps = o.norm_eps;
    w->rope = o.rope;
    w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
    if (!w->layers) {
        return oxl_err_set(err, "%s: out of memory for %d layers", path, hp->n_layer);
    }
    const int64_t E = hp->n_embd, F = hp->n_ff;
    if (oxl_bind_tensor(m, &w->token_embd, "token_embd.weight", -1, E, hp->n_vocab, true, err) ||
        oxl_bind_tensor(m, &w->type_embd, "token_types.weight", -1, E, n_types, false, err) ||
        (!nomic && oxl_bind_tensor(m, &w->pos_embd, "position_embd.weight", -1, E, hp->n_ctx_train, true, err)) ||
        oxl_bind_tensor(m, &w->tok_norm, "token_embd_norm.weight", -1, E, 0, true, err) ||
        oxl_bind_tensor(m, &w->tok_norm_b, "token_embd_norm.bias", -1, E, 0, true, err)) {
        return -1;
    }
    if (w->pos_embd.data) {
        hp->n_pos_max = (int32_t)w->pos_embd.ne[1];
    }
    /* a reranker's classification head (bert only, as llama.cpp's llama_model_bert), for rank pooling */
    struct oxl_cls_head *ch = &m->cls_head;
    ch->n_out = oxl_model_n_cls_out(m);
    if (!nomic && (oxl_bind_tensor(m, &ch->cls, "cls.weight", -1, E, E, false, err) ||
                   oxl_bind_tensor(m, &ch->cls_b, "cls.bias", -1, E, 0, false, err) ||
                   oxl_bind_tensor(m, &ch->cls_out, "cls.output.weight", -1, E, ch->n_out, false, err) ||
                   oxl_bind_tensor(m, &ch->cls_out_b, "cls.output.bias", -1, ch->n_out, 0, false, err))) {
        return -1;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        bert_layer *l = &w->layers[il];
        if (oxl_bind_tensor(m, &l->wqkv, "blk.%d.attn_qkv.weight", il, E, 3 * E, false, err)) {
            return -1;
        }
        int r = 0;
        if (l->wqkv.data) {
            r = oxl_bind_tensor(m, &l->bqkv, "blk.%d.attn_qkv.bias", il, 3 * E, 0, false, err);
        } else {
            r = oxl_bind_tensor(m, &l->wq, "blk.%d.attn_q.weight", il, E, E, true, err) ||
                oxl_bind_tensor(m, &l->bq, "blk.%d.attn_q.bias", il, E, 0, false, err) ||
                oxl_bind_tensor(m, &l->wk, "blk.%d.attn_k.weight", il, E, E, true, err) ||
                oxl_bind_tensor(m, &l->bk, "blk.%d.attn_k.bias", il, E, 0, false, err) ||
                oxl_bind_tensor(m, &l->wv, "blk.%d.attn_v.weight", il, E, E, true, err) ||
                oxl_bind_tensor(m, &l->bv, "blk.%d.attn_v.bias", il, E, 0, false, err);
        }
        r = r || oxl_bind_tensor(m, &l->wo, "blk.%d.attn_output.weight", il, E, E, true, err) ||
            oxl_bind_tensor(m, &l->bo, "blk.%d.attn_output.bias", il, E, 0, false, err) ||
            oxl_bind_tensor(m, &l->attn_out_norm, "blk.%d.attn_output_norm.weight", il, E, 0, true, err) ||
            oxl_bind_tensor(m, &l->attn_out_norm_b, "blk.%d.attn_output_norm.bias", il, E, 0, true, err) ||
            oxl_bind_tensor(m, &l->ffn_up, "blk.%d.ffn_up.weight", il, E, F, true, err) ||
            oxl_bind_tensor(m, &l->ffn_up_b, "blk.%d.ffn_up.bias", il, F, 0, false, err) ||
            (nomic && oxl_bind_tensor(m, &l->ffn_gate, "blk.%d.ffn_gate.weight", il, E, F, true, err)) ||
            oxl_bind_tensor(m, &l->ffn_down, "blk.%d.ffn_down.weight", il, F, E, true, err) ||
            oxl_bind_tensor(m, &l->ffn_down_b, "blk.%d.ffn_down.bias", il, E, 0, false, err) ||
            oxl_bind_tensor(m, &l->layer_out_norm, "blk.%d.layer_output_norm.weight", il, E, 0, true, err) ||
            oxl_bind_tensor(m, &l->layer_out_norm_b, "blk.%d.layer_output_norm.bias", il, E, 0, true, err);
        if (r) {
            return -1;
        }
    }
    return 0;
}

static int bert_load(oxl_model *m, oxl_error *err) { return bert_load_common(m, false, err); }
static int nomic_bert_load(oxl_model *m, oxl_error *err) { return bert_load_common(m, true, err); }

/* ---- forward ----------------------------------------------------------------------------- */

typedef struct bert_acts {
    float *x;         /* (E, n) layer input */
    float *h;         /* (E, n) after the attention block */
    float *qkv;       /* (3E, n) */
    float *q, *k, *v; /* (E, n) each */
    float *vt;        /* (n, E): V transposed, row (head, d) over the pass's tokens */
    float *att;       /* (E, n) */
    float *ao;        /* (E, n) */
    float *gate;      /* (F, n) */
    float *up;        /* (F, n) */
    float *scores;    /* n per thread */
    int32_t *pos;     /* (n) each token's position within its sequence in the pass */
    float *scratch;   /* matmul scratch */
} bert_acts;

static size_t bert_layout(const oxl_model *m, int32_t n, int n_threads, void *base, bert_acts *a) {
    const size_t E = (size_t)m->hp.n_embd, F = (size_t)m->hp.n_ff;
    const size_t widest = F > 3 * E ? F : 3 * E;
    size_t scratch = oxl_matmul_scratch_size(OXL_TYPE_F32, (int64_t)widest, n);
    const bert_weights *w = m->weights;
    for (int il = 0; w && il < m->hp.n_layer; il++) {
        const bert_layer *l = &w->layers[il];
        const oxl_tensor *ts[] = {&l->wqkv, &l->wq, &l->wk, &l->wv, &l->wo, &l->ffn_up, &l->ffn_gate, &l->ffn_down};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
            if (ts[i]->data) {
                const size_t s = oxl_matmul_scratch_size(ts[i]->type, ts[i]->ne[0], n);
                scratch = s > scratch ? s : scratch;
            }
        }
    }
    const size_t sizes[] = {E * n,     E * n,
                            3 * E * n, E * n,
                            E * n,     E * n,
                            E * n,     E * n,
                            E * n,     F * n,
                            F * n,     (size_t)n * (size_t)n_threads,
                            (size_t)n, scratch / sizeof(float) + 16};
    float **slots[] = {&a->x,  &a->h,      &a->qkv,           &a->q,      &a->k,
                       &a->v,  &a->vt,     &a->att,           &a->ao,     &a->gate,
                       &a->up, &a->scores, (float **)&a->pos, &a->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

static size_t bert_work_size(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads) {
    (void)n_ctx;
    bert_acts a;
    return bert_layout(m, n_batch, n_threads, NULL, &a);
}

static void linear(oxl_pool *pool, const oxl_tensor *w, const oxl_tensor *b, const float *x, int32_t n, float *y,
                   void *scratch) {
    oxl_matmul(pool, w, x, n, y, w->ne[1], scratch);
    oxl_add_bias(y, b, w->ne[1], n);
}

typedef struct bert_attn_task {
    const oxl_ubatch *ub;
    const bert_acts *a;
    int n_head, head_dim;
    float scale;
    oxl_vec_dot_fn dot;
    oxl_softmax_fn softmax;
} bert_attn_task;

/* One item per (token, head): the scores over every token of the pass (other sequences masked to
 * -inf, so they weigh exactly 0 as in ggml's masked softmax), then the weighted values. */
static void bert_attn(void *arg, int ith, int nth) {
    const bert_attn_task *t = arg;
    const int32_t n = t->ub->n;
    const int D = t->head_dim, E = t->n_head * t->head_dim;
    float *sc = t->a->scores + (size_t)ith * (size_t)n;
    const int64_t n_items = (int64_t)n * t->n_head;
    for (int64_t item = ith; item < n_items; item += nth) {
        const int32_t j = (int32_t)(item / t->n_head);
        const int h = (int)(item % t->n_head);
        const float *q = t->a->q + (size_t)j * E + (size_t)h * D;
        float max = -INFINITY;
        for (int32_t p = 0; p < n; p++) {
            if (t->ub->seq[p] != t->ub->seq[j]) {
                sc[p] = -INFINITY;
                continue;
            }
            float s;
            t->dot(D, &s, t->a->k + (size_t)p * E + (size_t)h * D, q);
            sc[p] = s * t->scale;
            max = sc[p] > max ? sc[p] : max;
        }
        const double sum = t->softmax(n, sc, sc, max);
        const float inv = (float)(1.0 / sum);
        for (int32_t p = 0; p < n; p++) {
            sc[p] *= inv;
        }
        float *out = t->a->att + (size_t)j * E + (size_t)h * D;
        for (int d = 0; d < D; d++) {
            t->dot(n, &out[d], t->a->vt + ((size_t)h * D + d) * (size_t)n, sc);
        }
    }
}

static void bert_forward(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits) {
    const oxl_model *m = ctx->model;
    const oxl_hparams *hp = &m->hp;
    const bert_weights *w = m->weights;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    bert_acts a;
    bert_layout(m, n, oxl_pool_size(pool), ctx->work, &a);
    /* positions from 0 within each sequence of the pass (contexts hold at most 256 sequences) */
    int32_t *pos = a.pos, seen[256] = {0};
    for (int32_t j = 0; j < n; j++) {
        pos[j] = seen[ub->seq[j] & 255]++;
    }

    /* embeddings: token + token type 0 (+ learned position), then LayerNorm */
    for (int32_t j = 0; j < n; j++) {
        float *xj = a.x + (size_t)j * E;
        oxl_tensor_get_row(&w->token_embd, ub->token[j], xj);
        if (w->type_embd.data) {
            oxl_tensor_get_row(&w->type_embd, 0, a.h);
            oxl_add(xj, a.h, E);
        }
        if (w->pos_embd.data) {
            const int64_t p = pos[j] < w->pos_embd.ne[1] ? pos[j] : w->pos_embd.ne[1] - 1;
            oxl_tensor_get_row(&w->pos_embd, p, a.h);
            /* ggml_add(get_rows(pos_embd), inpL): position row first */
            for (int64_t e = 0; e < E; e++) {
                xj[e] = a.h[e] + xj[e];
            }
        }
    }
    oxl_norm(OXL_NORM_LAYER, a.x, &w->tok_norm, &w->tok_norm_b, a.x, E, n, w->norm_eps);

    const oxl_kernels *kern = oxl_kernels_get();
    bert_attn_task t = {.ub = ub,
                        .a = &a,
                        .n_head = hp->n_head,
                        .head_dim = hp->head_dim,
                        .scale = 1.0f / sqrtf((float)hp->head_dim),
                        .dot = kern->vec_dot[OXL_TYPE_F32],
                        .softmax = kern->softmax[OXL_TYPE_F32]};
    for (int il = 0; il < hp->n_layer; il++) {
        const bert_layer *l = &w->layers[il];
        if (l->wqkv.data) {
            linear(pool, &l->wqkv, &l->bqkv, a.x, n, a.qkv, a.scratch);
            for (int32_t j = 0; j < n; j++) {
                const float *src = a.qkv + (size_t)j * 3 * E;
                memcpy(a.q + (size_t)j * E, src, (size_t)E * sizeof(float));
                memcpy(a.k + (size_t)j * E, src + E, (size_t)E * sizeof(float));
                memcpy(a.v + (size_t)j * E, src + 2 * E, (size_t)E * sizeof(float));
            }
        } else {
            linear(pool, &l->wq, &l->bq, a.x, n, a.q, a.scratch);
            linear(pool, &l->wk, &l->bk, a.x, n, a.k, a.scratch);
            linear(pool, &l->wv, &l->bv, a.x, n, a.v, a.scratch);
        }
        if (w->rope.mode != OXL_ROPE_NONE) {
            for (int32_t j = 0; j < n; j++) {
                oxl_rope_apply(a.q + (size_t)j * E, hp->n_head, hp->head_dim, pos[j], &w->rope);
                oxl_rope_apply(a.k + (size_t)j * E, hp->n_head, hp->head_dim, pos[j], &w->rope);
            }
        }
        for (int32_t j = 0; j < n; j++) {
            for (int64_t e = 0; e < E; e++) {
                a.vt[(size_t)e * n + j] = a.v[(size_t)j * E + e];
            }
        }
        oxl_pool_run(pool, bert_attn, &t);
        linear(pool, &l->wo, &l->bo, a.att, n, a.ao, a.scratch);
        /* h = LN(attention + x) */
        for (int64_t e = 0; e < E * n; e++) {
            a.h[e] = a.ao[e] + a.x[e];
        }
        oxl_norm(OXL_NORM_LAYER, a.h, &l->attn_out_norm, &l->attn_out_norm_b, a.h, E, n, w->norm_eps);
        /* x = LN(ffn(h) + h) */
        if (w->nomic) {
            linear(pool, &l->ffn_up, &l->ffn_up_b, a.h, n, a.up, a.scratch);
            linear(pool, &l->ffn_gate, NULL, a.h, n, a.gate, a.scratch);
            oxl_swiglu(a.gate, a.up, F, n);
        } else {
            linear(pool, &l->ffn_up, &l->ffn_up_b, a.h, n, a.gate, a.scratch);
            oxl_gelu(a.gate, F * n);
        }
        linear(pool, &l->ffn_down, &l->ffn_down_b, a.gate, n, a.x, a.scratch);
        oxl_add(a.x, a.h, E * n);
        oxl_norm(OXL_NORM_LAYER, a.x, &l->layer_out_norm, &l->layer_out_norm_b, a.x, E, n, w->norm_eps);
    }
    if (ub->embd) {
        memcpy(ub->embd, a.x, (size_t)(E * n) * sizeof(float));
    }
    memset(logits, 0, (size_t)ub->n_out * (size_t)hp->n_vocab * sizeof(float));
}

static void bert_describe(const oxl_model *m, FILE *out) {
    const bert_weights *w = m->weights;
    const oxl_hparams *hp = &m->hp;
    fprintf(out, "  %-16s encoder, non-causal attention, post-LayerNorm (eps %g), no output head\n", "graph",
            (double)w->norm_eps);
    fprintf(out, "  %-16s %d heads of %d\n", "attention", hp->n_head, hp->head_dim);
    if (w->nomic) {
        fprintf(out, "  %-16s neox, n_rot %d, base %g\n", "rope", w->rope.n_rot, (double)w->rope.freq_base);
        fprintf(out, "  %-16s swiglu, n_ff %d\n", "ffn", hp->n_ff);
    } else {
        fprintf(out, "  %-16s learned, %d positions\n", "positions", hp->n_pos_max);
        fprintf(out, "  %-16s gelu, n_ff %d\n", "ffn", hp->n_ff);
    }
}

const oxl_arch oxl_arch_bert = {.name = "bert",
                                .load = bert_load,
                                .free_weights = bert_free,
                                .work_size = bert_work_size,
                                .forward = bert_forward,
                                .describe = bert_describe,
                                .encoder_only = true};
const oxl_arch oxl_arch_nomic_bert = {.name = "nomic-bert",
                                      .load = nomic_bert_load,
                                      .free_weights = bert_free,
                                      .work_size = bert_work_size,
                                      .forward = bert_forward,
                                      .describe = bert_describe,
                                      .encoder_only = true};
