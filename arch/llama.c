/* LLaMA (general.architecture = "llama"), as llama.cpp's src/models/llama.cpp builds it:
 *
 *   x = token_embd[tokens]
 *   per layer:  h = x + Wo · attention(rope(Wq·rms(x)), rope(Wk·rms(x)), Wv·rms(x))
 *               x = h + Wdown · (silu(Wgate·rms(h)) * Wup·rms(h))
 *   logits = output · rms(x)            (output falls back to token_embd when absent: tied weights)
 *
 * RoPE in ggml's normal mode, grouped-query attention, RMSNorm with learned scales.
 */
#include "blocks.h"
#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct llama_layer {
    oxl_tensor attn_norm; /* (n_embd) */
    oxl_tensor wq;        /* (n_embd, n_head*head_dim) query projection */
    oxl_tensor wk;        /* (n_embd, n_head_kv*head_dim) key projection */
    oxl_tensor wv;        /* (n_embd, n_head_kv*head_dim) value projection */
    oxl_tensor wo;        /* (n_head*head_dim, n_embd) attention output */
    oxl_tensor ffn_norm;  /* (n_embd) */
    oxl_tensor ffn_gate;  /* (n_embd, n_ff) */
    oxl_tensor ffn_up;    /* (n_embd, n_ff) */
    oxl_tensor ffn_down;  /* (n_ff, n_embd) */
} llama_layer;

typedef struct llama_weights {
    oxl_tensor token_embd;  /* (n_embd, n_vocab) */
    oxl_tensor output_norm; /* (n_embd) */
    oxl_tensor output;      /* (n_embd, n_vocab); token_embd when the model ties them */
    llama_layer *layers;    /* [n_layer] */
} llama_weights;

static int llama_load(oxl_model *m, oxl_error *err) {
    oxl_hparams *hp = &m->hp;
    if (oxl_hp_int(m, "context_length", &hp->n_ctx_train, true, err) ||
        oxl_hp_int(m, "embedding_length", &hp->n_embd, true, err) ||
        oxl_hp_int(m, "block_count", &hp->n_layer, true, err) ||
        oxl_hp_int(m, "feed_forward_length", &hp->n_ff, true, err) ||
        oxl_hp_int(m, "attention.head_count", &hp->n_head, true, err)) {
        return -1;
    }
    hp->n_head_kv = hp->n_head;
    hp->head_dim = hp->n_embd / hp->n_head;
    hp->rope_freq_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    float rope_scale = 0.0f;
    if (oxl_hp_int(m, "attention.head_count_kv", &hp->n_head_kv, false, err) ||
        oxl_hp_int(m, "attention.key_length", &hp->head_dim, false, err) ||
        oxl_hp_float(m, "attention.layer_norm_rms_epsilon", &hp->norm_eps, true, err) ||
        oxl_hp_float(m, "rope.freq_base", &hp->rope_freq_base, false, err) ||
        oxl_hp_float(m, "rope.scaling.factor", &rope_scale, false, err)) {
        return -1;
    }
    hp->n_rot = hp->head_dim;
    if (oxl_hp_int(m, "rope.dimension_count", &hp->n_rot, false, err)) {
        return -1;
    }
    if (rope_scale > 0.0f) {
        hp->rope_freq_scale = 1.0f / rope_scale;
    }
    const char *path = oxl_gguf_path(m->gguf);
    if (hp->n_head % hp->n_head_kv != 0) {
        return oxl_err_set(err, "%s: llama.attention.head_count = %d is not a multiple of head_count_kv = %d", path,
                           hp->n_head, hp->n_head_kv);
    }
    if (hp->head_dim > 1024 || hp->n_rot > hp->head_dim || hp->n_rot % 2) {
        return oxl_err_set(err, "%s: unsupported head size %d / rope.dimension_count %d (head size <= 1024, even rotary dims <= head size)",
                           path, hp->head_dim, hp->n_rot);
    }

    /* each layer binds 9 tensors: refuse a block count the file cannot back before allocating per layer */
    if (hp->n_layer > oxl_gguf_n_tensors(m->gguf) / 9) {
        return oxl_err_set(err, "%s: llama.block_count = %d needs %lld tensors; the file has %lld", path, hp->n_layer,
                           (long long)hp->n_layer * 9, (long long)oxl_gguf_n_tensors(m->gguf));
    }
    llama_weights *w = calloc(1, sizeof *w);
    if (!w) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    m->weights = w;
    w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
    if (!w->layers) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    const int64_t E = hp->n_embd, V = hp->n_vocab, F = hp->n_ff;
    const int64_t Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
    if (oxl_bind_tensor(m, &w->token_embd, "token_embd.weight", -1, E, V, true, err) ||
        oxl_bind_tensor(m, &w->output_norm, "output_norm.weight", -1, E, 0, true, err) ||
        oxl_bind_tensor(m, &w->output, "output.weight", -1, E, V, false, err)) {
        return -1;
    }
    if (!w->output.data) {
        w->output = w->token_embd;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        llama_layer *l = &w->layers[il];
        if (oxl_bind_tensor(m, &l->attn_norm, "blk.%d.attn_norm.weight", il, E, 0, true, err) ||
            oxl_bind_tensor(m, &l->wq, "blk.%d.attn_q.weight", il, E, Q, true, err) ||
            oxl_bind_tensor(m, &l->wk, "blk.%d.attn_k.weight", il, E, KV, true, err) ||
            oxl_bind_tensor(m, &l->wv, "blk.%d.attn_v.weight", il, E, KV, true, err) ||
            oxl_bind_tensor(m, &l->wo, "blk.%d.attn_output.weight", il, Q, E, true, err) ||
            oxl_bind_tensor(m, &l->ffn_norm, "blk.%d.ffn_norm.weight", il, E, 0, true, err) ||
            oxl_bind_tensor(m, &l->ffn_gate, "blk.%d.ffn_gate.weight", il, E, F, true, err) ||
            oxl_bind_tensor(m, &l->ffn_up, "blk.%d.ffn_up.weight", il, E, F, true, err) ||
            oxl_bind_tensor(m, &l->ffn_down, "blk.%d.ffn_down.weight", il, F, E, true, err)) {
            return -1;
        }
    }
    return 0;
}

static void llama_free(void *weights) {
    llama_weights *w = weights;
    if (w) {
        free(w->layers);
        free(w);
    }
}

/* Activation buffers of one batch, carved from ctx->work in this order. */
typedef struct llama_acts {
    float *x;      /* (n_embd, n) residual stream */
    float *xb;     /* (n_embd, n) normalised input of a sub-block */
    float *q;      /* (n_head*head_dim, n) */
    float *k;      /* (n_head_kv*head_dim, n) */
    float *v;      /* (n_head_kv*head_dim, n) */
    float *att;    /* (n_head*head_dim, n) attention output before Wo */
    float *xout;   /* (n_embd, n) residual stream of the tokens whose logits are wanted */
    float *gate;   /* (n_ff, n) */
    float *up;     /* (n_ff, n) */
    float *scores; /* (n_ctx + head_dim) per thread */
    float *scratch; /* activation columns converted for matmuls (raw bytes) */
} llama_acts;

static size_t llama_acts_layout(const oxl_model *m, int32_t n, int32_t n_ctx, int n_threads, void *base, llama_acts *a) {
    const oxl_hparams *hp = &m->hp;
    const size_t E = hp->n_embd, Q = (size_t)hp->n_head * hp->head_dim, KV = (size_t)hp->n_head_kv * hp->head_dim;
    const size_t F = hp->n_ff;
    size_t widest = E > F ? E : F;
    widest = widest > Q ? widest : Q;
    const size_t sizes[] = {E * n, E * n, Q * n, KV * n, KV * n, Q * n, E * n, F * n, F * n,
                            (size_t)(n_ctx + hp->head_dim) * n_threads, widest * n + 64};
    float **slots[] = {&a->x, &a->xb, &a->q, &a->k, &a->v, &a->att, &a->xout, &a->gate, &a->up, &a->scores, &a->scratch};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (base) {
            *slots[i] = (float *)((char *)base + off);
        }
        off += (sizes[i] * sizeof(float) + 63) & ~(size_t)63;
    }
    return off;
}

static size_t llama_work_size(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads) {
    llama_acts a;
    return llama_acts_layout(m, n_batch, n_ctx, n_threads, NULL, &a);
}

static void llama_forward(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits) {
    const oxl_model *m = ctx->model;
    const oxl_hparams *hp = &m->hp;
    const llama_weights *w = m->weights;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    llama_acts a;
    llama_acts_layout(m, n, ctx->n_ctx, oxl_pool_size(pool), ctx->work, &a);
    const int64_t E = hp->n_embd, Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
    const float kq_scale = 1.0f / sqrtf((float)hp->head_dim);

    for (int32_t j = 0; j < n; j++) {
        oxl_tensor_get_row(&w->token_embd, ub->token[j], a.x + j * E);
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const llama_layer *l = &w->layers[il];
        /* self-attention */
        oxl_rms_norm(a.x, &l->attn_norm, a.xb, E, n, hp->norm_eps);
        oxl_matmul(pool, &l->wq, a.xb, n, a.q, Q, a.scratch);
        oxl_matmul(pool, &l->wk, a.xb, n, a.k, KV, a.scratch);
        oxl_matmul(pool, &l->wv, a.xb, n, a.v, KV, a.scratch);
        for (int32_t j = 0; j < n; j++) {
            oxl_rope_norm(a.q + j * Q, hp->n_head, hp->head_dim, hp->n_rot, ub->pos[j], hp->rope_freq_base, hp->rope_freq_scale);
            oxl_rope_norm(a.k + j * KV, hp->n_head_kv, hp->head_dim, hp->n_rot, ub->pos[j], hp->rope_freq_base, hp->rope_freq_scale);
        }
        oxl_kv_store(ctx, il, ub, a.k, a.v);
        oxl_attention(ctx, il, ub, a.q, a.att, hp->n_head, hp->n_head_kv, hp->head_dim, kq_scale, a.scores);
        oxl_matmul(pool, &l->wo, a.att, n, a.xb, E, a.scratch);
        oxl_add(a.x, a.xb, E * n);
        /* feed-forward: SwiGLU */
        oxl_rms_norm(a.x, &l->ffn_norm, a.xb, E, n, hp->norm_eps);
        oxl_matmul(pool, &l->ffn_gate, a.xb, n, a.gate, hp->n_ff, a.scratch);
        oxl_matmul(pool, &l->ffn_up, a.xb, n, a.up, hp->n_ff, a.scratch);
        oxl_swiglu(a.gate, a.up, (int64_t)hp->n_ff * n);
        oxl_matmul(pool, &l->ffn_down, a.gate, n, a.xb, E, a.scratch);
        oxl_add(a.x, a.xb, E * n);
    }
    /* only the tokens whose logits are wanted go through the output head */
    if (ub->n_out == 0) {
        return;
    }
    for (int32_t o = 0; o < ub->n_out; o++) {
        memcpy(a.xout + (size_t)o * E, a.x + (size_t)ub->out_ids[o] * E, (size_t)E * sizeof(float));
    }
    oxl_rms_norm(a.xout, &w->output_norm, a.xb, E, ub->n_out, hp->norm_eps);
    oxl_matmul(pool, &w->output, a.xb, ub->n_out, logits, hp->n_vocab, a.scratch);
}

const oxl_arch oxl_arch_llama = {
    .name = "llama",
    .load = llama_load,
    .free_weights = llama_free,
    .work_size = llama_work_size,
    .forward = llama_forward,
};
