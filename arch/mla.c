/* Multi-head latent attention (mla.h). */
#include "mla.h"

#include "errors.h"

#include <string.h>

int oxl_mla_bind(const oxl_model *m, const oxl_mla_opts *o, oxl_mla_layer *l, int il, oxl_error *err) {
    const oxl_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, H = hp->n_head, R = hp->n_rot, C = o->kv_lora_rank, Q = o->q_lora_rank;
    const int64_t nope = o->head_k - R;
    char name[64];
    snprintf(name, sizeof name, "blk.%d.attn_kv_b.weight", il);
    if (!o->merged_kv_b && oxl_gguf_find_tensor(m->gguf, name) &&
        !oxl_gguf_find_tensor(m->gguf, "blk.0.attn_k_b.weight")) {
        return oxl_err_set(err,
                           "%s: tensor '%s' (merged K/V up-projection of older files) is not supported; "
                           "convert with split attn_k_b / attn_v_b",
                           oxl_gguf_path(m->gguf), name);
    }
    if (Q > 0) {
        if (oxl_bind_tensor(m, &l->wq_a, "blk.%d.attn_q_a.weight", il, E, Q, true, err) ||
            oxl_bind_tensor(m, &l->q_a_norm, "blk.%d.attn_q_a_norm.weight", il, Q, 0, true, err) ||
            oxl_bind_tensor(m, &l->wq_b, "blk.%d.attn_q_b.weight", il, Q, H * o->head_k, true, err)) {
            return -1;
        }
    } else if (oxl_bind_tensor(m, &l->wq, "blk.%d.attn_q.weight", il, E, H * o->head_k, true, err)) {
        return -1;
    }
    if (o->merged_kv_b) {
        return oxl_bind_tensor(m, &l->wkv_a, "blk.%d.attn_kv_a_mqa.weight", il, E, C + R, true, err) ||
                       oxl_bind_tensor(m, &l->kv_a_norm, "blk.%d.attn_kv_a_norm.weight", il, C, 0, true, err) ||
                       oxl_bind_tensor(m, &l->wkv_b, "blk.%d.attn_kv_b.weight", il, C, H * (nope + o->head_v), true,
                                       err) ||
                       oxl_bind_tensor(m, &l->wo, "blk.%d.attn_output.weight", il, H * o->head_v, E, true, err)
                   ? -1
                   : 0;
    }
    return oxl_bind_tensor(m, &l->wkv_a, "blk.%d.attn_kv_a_mqa.weight", il, E, C + R, true, err) ||
                   oxl_bind_tensor(m, &l->kv_a_norm, "blk.%d.attn_kv_a_norm.weight", il, C, 0, true, err) ||
                   oxl_bind_tensor_3d(m, &l->wk_b, "blk.%d.attn_k_b.weight", il, nope, C, H, err) ||
                   oxl_bind_tensor_3d(m, &l->wv_b, "blk.%d.attn_v_b.weight", il, C, o->head_v, H, err) ||
                   oxl_bind_tensor(m, &l->wo, "blk.%d.attn_output.weight", il, H * o->head_v, E, true, err)
               ? -1
               : 0;
}

typedef struct mla_work {
    float *q;       /* (n_head*head_k, n) query before absorption */
    float *qa;      /* (q_lora_rank, n) */
    float *kv;      /* (kv_lora_rank + n_rot, n) latent | kpe */
    float *qabs;    /* (n_head*(kv_lora_rank + n_rot), n) absorbed queries */
    float *att;     /* (n_head*(kv_lora_rank + n_rot), n) attention output */
    float *vo;      /* (n_head*head_v, n) per-head values after Wv_b */
    float *col;     /* (max(nope, kv_lora_rank), n) one head's columns gathered */
    float *scratch; /* matmul conversions */
} mla_work;

static size_t mla_layout(const oxl_model *m, const oxl_mla_opts *o, int32_t n, void *base, mla_work *w) {
    const oxl_hparams *hp = &m->hp;
    const size_t H = (size_t)hp->n_head, R = (size_t)hp->n_rot, C = (size_t)o->kv_lora_rank;
    size_t K = C + R, widest = (size_t)(hp->n_embd > o->q_lora_rank ? hp->n_embd : o->q_lora_rank) + C;
    if (o->merged_kv_b) {
        /* qabs holds the decompressed K | V per head (nope + v_head each), att the keys and values of
         * n_head heads of head_k: sized as though the latent were that wide */
        const size_t kvb = (size_t)(o->head_k - (int32_t)R + o->head_v), kk = 2 * (size_t)o->head_k;
        K = kvb > K ? kvb : K;
        K = kk > K ? kk : K;
        widest += (size_t)o->head_k;
    }
    const size_t sizes[] = {H * o->head_k * n,
                            (size_t)o->q_lora_rank * n,
                            K * n,
                            H * K * n,
                            H * K * n,
                            H * o->head_v * n,
                            (C > (size_t)o->head_k ? C : (size_t)o->head_k) * n,
                            (widest > H * o->head_v ? widest : H * o->head_v) * n + 64};
    float **slots[] = {&w->q, &w->qa, &w->kv, &w->qabs, &w->att, &w->vo, &w->col, &w->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

size_t oxl_mla_work_size(const oxl_model *m, const oxl_mla_opts *o, int32_t n) {
    mla_work w;
    return o->kv_lora_rank > 0 ? mla_layout(m, o, n, NULL, &w) : 0;
}

/* Copies rows [off, off + rows) of each of n columns of stride ld into a contiguous (rows, n) block. */
static void gather_rows(const float *src, int64_t ld, int64_t off, int64_t rows, int32_t n, float *dst) {
    for (int32_t j = 0; j < n; j++) {
        memcpy(dst + (size_t)j * rows, src + (size_t)j * ld + off, (size_t)rows * sizeof(float));
    }
}

/* The merged attn_kv_b form, llama.cpp's non-MLA branch of src/models/deepseek2.cpp: kv = Wkv_b · c
 * gives per head k_nope | v; K_h = [k_nope_h ; kpe] (the rope key repeated over the heads), Q_h =
 * [q_nope_h ; q_rope_h], V_h = v_h; multi-head attention with kq_scale, then Wo. q and w.kv arrive
 * projected, roped and normalised. */
static void mla_merged_attention(oxl_ctx *ctx, const oxl_mla_opts *o, const oxl_mla_layer *l, int il,
                                 const oxl_ubatch *ub, const mla_work *w, float *out, float *scores) {
    const oxl_hparams *hp = &ctx->model->hp;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t H = hp->n_head, R = hp->n_rot, C = o->kv_lora_rank, nope = o->head_k - R, Dk = o->head_k;
    const int64_t Dv = o->head_v, KVB = H * (nope + Dv), KV = C + R;
    float *kvb = w->qabs;                        /* (KVB, n) */
    float *k = w->att, *v = w->att + H * Dk * n; /* (H*Dk, n) each */
    gather_rows(w->kv, KV, 0, C, n, w->col);
    oxl_matmul(pool, &l->wkv_b, w->col, n, kvb, KVB, w->scratch);
    for (int32_t j = 0; j < n; j++) {
        for (int64_t h = 0; h < H; h++) {
            const float *src = kvb + (size_t)j * KVB + h * (nope + Dv);
            float *kh = k + ((size_t)j * H + h) * Dk, *vh = v + ((size_t)j * H + h) * Dk;
            memcpy(kh, src, (size_t)nope * sizeof(float));
            memcpy(kh + nope, w->kv + (size_t)j * KV + C, (size_t)R * sizeof(float));
            memcpy(vh, src + nope, (size_t)Dv * sizeof(float));
            memset(vh + Dv, 0, (size_t)(Dk - Dv) * sizeof(float));
        }
    }
    oxl_memory_kv_store(ctx->mem, il, ub, k, v);
    /* with flash attention ggml picks its tiled kernel by V's head size (v_head % 16 == 0 on
     * AVX-512); the padded rows here are head_k wide, so the choice follows head_k instead */
    const oxl_attn_params ap = {.n_head = (int)H, .n_head_kv = (int)H, .head_dim = (int)Dk, .scale = o->kq_scale};
    const oxl_kv_view kvv = oxl_memory_kv_view(ctx->mem, il, ub);
    float *att = w->qabs; /* (H*Dk, n): kvb is no longer needed */
    oxl_attention(pool, &kvv, w->q, att, &ap, ctx->params.flash_attn != OXL_FLASH_ATTN_OFF, scores);
    for (int32_t j = 0; j < n; j++) {
        for (int64_t h = 0; h < H; h++) {
            memcpy(w->vo + ((size_t)j * H + h) * Dv, att + ((size_t)j * H + h) * Dk, (size_t)Dv * sizeof(float));
        }
    }
    oxl_matmul(pool, &l->wo, w->vo, n, out, hp->n_embd, w->scratch);
}

void oxl_mla_attention(oxl_ctx *ctx, const oxl_mla_opts *o, const oxl_mla_layer *l, int il, const oxl_ubatch *ub,
                       const oxl_rope *rope, const float *a, float *out, void *work, float *scores) {
    const oxl_model *m = ctx->model;
    const oxl_hparams *hp = &m->hp;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t H = hp->n_head, R = hp->n_rot, C = o->kv_lora_rank, K = C + R, nope = o->head_k - R;
    const int64_t QW = H * o->head_k;
    mla_work w;
    mla_layout(m, o, n, work, &w);

    /* queries: direct, or through the normalised low-rank bottleneck */
    if (l->wq.data) {
        oxl_matmul(pool, &l->wq, a, n, w.q, QW, w.scratch);
    } else {
        oxl_matmul(pool, &l->wq_a, a, n, w.qa, o->q_lora_rank, w.scratch);
        oxl_norm(OXL_NORM_RMS, w.qa, &l->q_a_norm, NULL, w.qa, o->q_lora_rank, n, o->norm_eps);
        oxl_matmul(pool, &l->wq_b, w.qa, n, w.q, QW, w.scratch);
    }
    /* the shared latent (normalised) and rope key; RoPE on the last n_rot dims of each query head */
    oxl_matmul(pool, &l->wkv_a, a, n, w.kv, K, w.scratch);
    for (int32_t j = 0; j < n; j++) {
        oxl_rope_apply(w.q + (size_t)j * QW + nope, (int)H, o->head_k, ub->pos[j], rope);
        oxl_rope_apply(w.kv + (size_t)j * K + C, 1, (int)R, ub->pos[j], rope);
        oxl_norm(OXL_NORM_RMS, w.kv + (size_t)j * K, &l->kv_a_norm, NULL, w.kv + (size_t)j * K, C, 1, o->norm_eps);
    }
    if (o->merged_kv_b) {
        mla_merged_attention(ctx, o, l, il, ub, &w, out, scores);
        return;
    }
    /* absorbed queries: head h's nope part through Wk_b_h into the latent space, then its rope part */
    for (int64_t h = 0; h < H; h++) {
        const oxl_tensor wk = oxl_tensor_slice(&l->wk_b, h);
        gather_rows(w.q, QW, h * o->head_k, nope, n, w.col);
        oxl_matmul(pool, &wk, w.col, n, w.qabs + h * K, H * K, w.scratch);
        for (int32_t j = 0; j < n; j++) {
            memcpy(w.qabs + (size_t)j * H * K + h * K + C, w.q + (size_t)j * QW + h * o->head_k + nope,
                   (size_t)R * sizeof(float));
        }
    }
    /* multi-query attention over the cached [latent ; kpe], V being the same rows */
    oxl_memory_kv_store(ctx->mem, il, ub, w.kv, w.kv);
    const oxl_attn_params ap = {.n_head = (int)H, .n_head_kv = 1, .head_dim = (int)K, .scale = o->kq_scale};
    const oxl_kv_view kv = oxl_memory_kv_view(ctx->mem, il, ub);
    oxl_attention(pool, &kv, w.qabs, w.att, &ap, ctx->params.flash_attn != OXL_FLASH_ATTN_OFF, scores);
    /* each head's latent output through Wv_b_h, then the output projection */
    for (int64_t h = 0; h < H; h++) {
        const oxl_tensor wv = oxl_tensor_slice(&l->wv_b, h);
        gather_rows(w.att, H * K, h * K, C, n, w.col);
        oxl_matmul(pool, &wv, w.col, n, w.vo + h * o->head_v, H * o->head_v, w.scratch);
    }
    oxl_matmul(pool, &l->wo, w.vo, n, out, hp->n_embd, w.scratch);
}
