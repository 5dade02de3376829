/* Gemma 3n ("gemma3n"), as llama.cpp's src/models/gemma3n.cpp builds it (llama_model_gemma3n): the
 * Gemma 3 layer (RMSNorm everywhere, q/k norms with weights, NeoX RoPE with its own base on the
 * sliding-window layers, post-attention and post-FFN norms, GELU-gated FFN) around a residual stream
 * of n_altup streams (altup.h):
 *
 *   x = token_embd[tokens] * sqrt(n_embd);  inp = per-layer inputs (x);  st = altup_expand(x)
 *   per layer:  pred = altup_predict(st);  a = pred[i_act];  c = rms(a)
 *               o = rms_post(Wo · attention(rope(rms_q(Wq c)), rope(rms_k(Wk c)), rms(Wv c))) + a
 *               h = (o + laurel(c)) / sqrt(2)
 *               y = h + rms_post(down · (gelu(sparsity(gate · rms(h))) * up · rms(h)))
 *               st = altup_correct(pred, y);  st[1..] += ple(st[i_act] * correct_scale, inp[layer])
 *   logits = 30 * tanh(token_embd · rms(altup_merge(st)) / 30)
 *
 * Fixed in llama.cpp, not read from the file: 4 streams with stream 0 active, LAuReL rank 64,
 * 256 per-layer inputs per layer and token, attention scale 1 (no 1/sqrt(head_dim)), activation
 * sparsity (Gaussian top-k, std multiplier 1.6449) on layers 0-9, the final soft-cap 30, and KV
 * sharing: layers from 20 on have no cache of their own (hparams.n_layer_kv_from_start) and read
 * that of layer 18 (sliding-window layers) or 19 (global layers), as llama-model.cpp's reuse
 * callback for LLM_ARCH_GEMMA3N maps them; their attn_k / attn_v are loaded but never used. */
#include "altup.h"
#include "decoder.h"
#include "model_memory.h"

#include "errors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    N_ALTUP = 4,
    I_ALTUP_ACT = 0,
    LAUREL_RANK = 64,
    N_EMBD_ALTUP = 256,
    N_LAYER_KV_FROM_START = 20,
    N_LAYER_SPARSITY = 10,
};
static const float SPARSITY_STD_MUL = 1.6448533535003662f; /* normal_dist.icdf(0.95) */
static const float FINAL_SOFTCAP = 30.0f;

typedef struct g3n_layer {
    oxl_tensor attn_norm, wq, wk, wv, wo, q_norm, k_norm, attn_post_norm;
    oxl_tensor ffn_norm, ffn_gate, ffn_up, ffn_down, ffn_post_norm;
    oxl_altup_layer altup;
    oxl_laurel_layer laurel;
    oxl_ple_layer ple;
} g3n_layer;

typedef struct g3n {
    oxl_decoder_opts o; /* norm_eps, rope, rope_swa, n_swa, swa_pattern */
    oxl_altup_opts altup;
    oxl_tensor token_embd, output, output_norm, altup_proj, altup_unembd_proj;
    oxl_ple ple;
    int32_t n_layer_kv; /* layers with a cache of their own: 0 .. n_layer_kv - 1 */
    int32_t *kv_src;    /* [n_layer] hp.kv_src */
    g3n_layer *layers;
} g3n;

static void g3n_free(void *weights) {
    g3n *g = weights;
    if (g) {
        free(g->kv_src);
        free(g->layers);
        free(g);
    }
}

static int bind_norm(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, oxl_error *err) {
    if (oxl_bind_tensor(m, t, name, il, ne0, 0, true, err)) {
        return -1;
    }
    if (t->type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' must be f32 (norm weights are)", oxl_gguf_path(m->gguf), t->name);
    }
    return 0;
}

static int bind_layer(const oxl_model *m, const g3n *g, g3n_layer *l, int il, oxl_error *err) {
    const oxl_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, D = hp->head_dim, Q = (int64_t)hp->n_head * D, KV = (int64_t)hp->n_head_kv * D;
    const int64_t F = hp->n_ff;
    const struct {
        oxl_tensor *t;
        const char *name;
        int64_t ne0, ne1;
    } mats[] = {{&l->wq, "blk.%d.attn_q.weight", E, Q},         {&l->wk, "blk.%d.attn_k.weight", E, KV},
                {&l->wv, "blk.%d.attn_v.weight", E, KV},        {&l->wo, "blk.%d.attn_output.weight", Q, E},
                {&l->ffn_gate, "blk.%d.ffn_gate.weight", E, F}, {&l->ffn_up, "blk.%d.ffn_up.weight", E, F},
                {&l->ffn_down, "blk.%d.ffn_down.weight", F, E}};
    const struct {
        oxl_tensor *t;
        const char *name;
        int64_t ne0;
    } norms[] = {
        {&l->attn_norm, "blk.%d.attn_norm.weight", E}, {&l->q_norm, "blk.%d.attn_q_norm.weight", D},
        {&l->k_norm, "blk.%d.attn_k_norm.weight", D},  {&l->attn_post_norm, "blk.%d.post_attention_norm.weight", E},
        {&l->ffn_norm, "blk.%d.ffn_norm.weight", E},   {&l->ffn_post_norm, "blk.%d.post_ffw_norm.weight", E}};
    for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) {
        if (bind_norm(m, norms[i].t, norms[i].name, il, norms[i].ne0, err)) {
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
        if (oxl_bind_tensor(m, mats[i].t, mats[i].name, il, mats[i].ne0, mats[i].ne1, true, err)) {
            return -1;
        }
    }
    return oxl_altup_bind(m, &g->altup, &l->altup, il, err) ||
                   oxl_laurel_bind(m, &l->laurel, il, hp->n_embd, LAUREL_RANK, err) ||
                   oxl_ple_bind_layer(m, &g->ple, &l->ple, il, hp->n_embd, err)
               ? -1
               : 0;
}

static int gemma3n_load(oxl_model *m, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_GEGLU};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) ||
        oxl_hp_int(m, "attention.sliding_window", &o.n_swa, true, err) || oxl_decoder_swa_pattern(m, &o, 5, err)) {
        return -1;
    }
    o.rope_swa.freq_base = 10000.0f;
    o.rope_swa.freq_scale = 1.0f;
    o.rope.fused = o.rope_swa.fused = true;
    if (oxl_hp_float(m, "rope.freq_base_swa", &o.rope_swa.freq_base, false, err)) {
        return -1;
    }
    o.kq_scale = 1.0f;
    o.final_softcap = FINAL_SOFTCAP;
    oxl_hparams *hp = &m->hp;
    if (hp->n_head_kv <= 0) {
        return oxl_err_set(err, "%s: gemma3n.attention.head_count_kv must be positive", path);
    }
    g3n *g = calloc(1, sizeof *g);
    if (!g) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    m->weights = g;
    g->o = o;
    g->o.n_head_kv_layers = NULL;
    g->altup = (oxl_altup_opts){.n_embd = hp->n_embd, .n_altup = N_ALTUP, .i_act = I_ALTUP_ACT, .eps = o.norm_eps};
    g->ple = (oxl_ple){.n_embd_pl = N_EMBD_ALTUP, .n_layer = hp->n_layer};
    g->layers = calloc((size_t)hp->n_layer, sizeof *g->layers);
    g->kv_src = calloc((size_t)hp->n_layer, sizeof *g->kv_src);
    if (!g->layers || !g->kv_src) {
        return oxl_err_set(err, "%s: out of memory for %d layers", path, hp->n_layer);
    }
    /* llama-model.cpp's reuse callback: from n_layer_kv_from_start on, a sliding-window layer reads
     * layer n_layer_kv_from_start - 2, a global one layer n_layer_kv_from_start - 1 */
    g->n_layer_kv = hp->n_layer < N_LAYER_KV_FROM_START ? hp->n_layer : N_LAYER_KV_FROM_START;
    for (int il = 0; il < hp->n_layer; il++) {
        g->kv_src[il] =
            il < N_LAYER_KV_FROM_START ? il : N_LAYER_KV_FROM_START - (oxl_decoder_is_swa(&g->o, il) ? 2 : 1);
    }
    hp->kv_src = g->kv_src;
    const int64_t E = hp->n_embd;
    if (oxl_bind_tensor(m, &g->token_embd, "token_embd.weight", -1, E, hp->n_vocab, true, err) ||
        oxl_bind_tensor(m, &g->output, "output.weight", -1, E, hp->n_vocab, false, err) ||
        bind_norm(m, &g->output_norm, "output_norm.weight", -1, E, err) ||
        oxl_bind_tensor_3d(m, &g->altup_proj, "altup_proj.weight", -1, E, E, N_ALTUP - 1, err) ||
        oxl_bind_tensor_3d(m, &g->altup_unembd_proj, "altup_unembd_proj.weight", -1, E, E, N_ALTUP - 1, err) ||
        oxl_ple_bind(m, &g->ple, hp->n_embd, err)) {
        return -1;
    }
    if (!g->output.data) {
        g->output = g->token_embd;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        if (bind_layer(m, g, &g->layers[il], il, err)) {
            return -1;
        }
    }
    return 0;
}

/* ---- forward ----------------------------------------------------------------------------- */

typedef struct acts {
    float *st, *pred;    /* (E, n, n_altup) streams, predictions */
    float *x;            /* (E, n) scaled embeddings; at the end the merged stream */
    float *ple;          /* (n_embd_pl, n_layer, n) per-layer inputs, then as much work */
    float *cur, *lau;    /* (E, n) attention input, LAuReL output */
    float *q, *k, *v;    /* (Q, n), (KV, n), (KV, n) */
    float *att;          /* (Q, n) */
    float *ao, *al, *fo; /* (E, n) attention branch, (attention + LAuReL) / sqrt(2), layer output */
    float *h;            /* (E, n) the per-layer embedding block's input, then the output norm */
    float *gate, *up;    /* (F, n) */
    float *pw;           /* (max(rank, n_embd_pl), n) LAuReL / per-layer embedding work */
    float *aw;           /* AltUp work */
    float *scores;       /* oxl_attention_cells_work, or oxl_attention's (n_ctx + head_dim) per thread */
    float *scratch;      /* converted matmul columns */
} acts;

static size_t acts_layout(const oxl_model *m, int32_t n, int32_t n_ctx, int n_threads, void *base, acts *a) {
    const oxl_hparams *hp = &m->hp;
    const g3n *g = m->weights;
    const size_t E = hp->n_embd, Q = (size_t)hp->n_head * hp->head_dim, KV = (size_t)hp->n_head_kv * hp->head_dim;
    const size_t F = hp->n_ff, A = N_ALTUP, PL = (size_t)N_EMBD_ALTUP * hp->n_layer;
    const size_t PW = LAUREL_RANK > N_EMBD_ALTUP ? LAUREL_RANK : N_EMBD_ALTUP;
    size_t widest = E > Q ? E : Q;
    widest = widest > F ? widest : F;
    widest = widest > PW ? widest : PW;
    const size_t sizes[] = {E * A * n,
                            E * A * n,
                            E * n,
                            2 * PL * n,
                            E * n,
                            E * n,
                            Q * n,
                            KV * n,
                            KV * n,
                            Q * n,
                            E * n,
                            E * n,
                            E * n,
                            E * n,
                            F * n,
                            F * n,
                            PW * n,
                            oxl_altup_work_floats(&g->altup, n),
                            oxl_attention_cells_work(n_ctx, hp->head_dim, n_threads) +
                                (size_t)(n_ctx + hp->head_dim) * n_threads,
                            widest * n + 64};
    float **slots[] = {&a->st, &a->pred, &a->x,  &a->ple, &a->cur,  &a->lau, &a->q,  &a->k,  &a->v,      &a->att,
                       &a->ao, &a->al,   &a->fo, &a->h,   &a->gate, &a->up,  &a->pw, &a->aw, &a->scores, &a->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

static size_t g3n_work_size(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads) {
    acts a;
    return acts_layout(m, n_batch, n_ctx, n_threads, NULL, &a);
}

/* Self-attention of layer il on c (E, n) into b->ao: a layer with its own cache stores its keys and
 * values; a sharing layer computes only q and reads the cache it shares (model_memory.h). */
static void attention(oxl_ctx *ctx, const oxl_ubatch *ub, const g3n *g, const g3n_layer *l, int il, acts *b) {
    const oxl_hparams *hp = &ctx->model->hp;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t D = hp->head_dim, Q = (int64_t)hp->n_head * D, KV = (int64_t)hp->n_head_kv * D;
    const float eps = g->o.norm_eps;
    const bool swa = oxl_decoder_is_swa(&g->o, il);
    const oxl_rope *rope = swa ? &g->o.rope_swa : &g->o.rope;
    const bool own_kv = g->kv_src[il] == il;
    oxl_matmul(pool, &l->wq, b->cur, n, b->q, Q, b->scratch);
    oxl_norm(OXL_NORM_RMS, b->q, &l->q_norm, NULL, b->q, D, (int64_t)n * hp->n_head, eps);
    if (own_kv) {
        oxl_matmul(pool, &l->wk, b->cur, n, b->k, KV, b->scratch);
        oxl_matmul(pool, &l->wv, b->cur, n, b->v, KV, b->scratch);
        oxl_norm(OXL_NORM_RMS, b->k, &l->k_norm, NULL, b->k, D, (int64_t)n * hp->n_head_kv, eps);
        oxl_norm(OXL_NORM_RMS, b->v, NULL, NULL, b->v, D, (int64_t)n * hp->n_head_kv, eps);
    }
    for (int32_t j = 0; j < n; j++) {
        oxl_rope_apply(b->q + j * Q, hp->n_head, hp->head_dim, ub->pos[j], rope);
        if (own_kv) {
            oxl_rope_apply(b->k + j * KV, hp->n_head_kv, hp->head_dim, ub->pos[j], rope);
        }
    }
    /* llama.cpp rotates q and k (v and the output) around a quantized cache */
    const int rot_k = oxl_memory_rot_k(ctx->mem, hp->head_dim), rot_v = oxl_memory_rot_v(ctx->mem, hp->head_dim);
    if (rot_k) {
        oxl_fwht_rows(b->q, Q * n, rot_k);
        if (own_kv) {
            oxl_fwht_rows(b->k, KV * n, rot_k);
        }
    }
    if (rot_v && own_kv) {
        oxl_fwht_rows(b->v, KV * n, rot_v);
    }
    if (own_kv) {
        oxl_memory_kv_store(ctx->mem, il, ub, b->k, b->v);
    }
    const oxl_attn_params ap = {.n_head = hp->n_head,
                                .n_head_kv = hp->n_head_kv,
                                .head_dim = hp->head_dim,
                                .scale = g->o.kq_scale,
                                .n_swa = swa ? g->o.n_swa : 0};
    const oxl_kv_view kv = oxl_memory_kv_view(ctx->mem, il, ub);
    const bool flash = ctx->params.flash_attn != OXL_FLASH_ATTN_OFF;
    if (!flash && kv.type_k == OXL_TYPE_F32 && kv.type_v == OXL_TYPE_F32) {
        /* the graph turns a last-bit difference into a visible one: ggml's order over its cells */
        oxl_attention_cells(pool, &kv, b->q, b->att, &ap, b->scores);
    } else {
        oxl_attention(pool, &kv, b->q, b->att, &ap, flash, b->scores);
    }
    if (rot_v) {
        oxl_fwht_rows(b->att, Q * n, rot_v);
    }
    oxl_matmul(pool, &l->wo, b->att, n, b->ao, hp->n_embd, b->scratch);
}

static void g3n_forward(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits) {
    const oxl_model *m = ctx->model;
    const oxl_hparams *hp = &m->hp;
    const g3n *g = m->weights;
    const oxl_altup_opts *ao = &g->altup;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    acts b;
    acts_layout(m, n, ctx->n_ctx, oxl_pool_size(pool), ctx->work, &b);
    const int64_t E = hp->n_embd, F = hp->n_ff, PL = (int64_t)N_EMBD_ALTUP * hp->n_layer;
    const float eps = g->o.norm_eps;

    for (int32_t j = 0; j < n; j++) {
        oxl_tensor_get_row(&g->token_embd, ub->token[j], b.x + j * E);
    }
    oxl_scale(b.x, E * n, sqrtf((float)E));
    oxl_ple_inputs(pool, &g->ple, ub->token, b.x, hp->n_embd, n, eps, b.ple, b.scratch);
    oxl_altup_expand(pool, ao, &g->altup_proj, b.x, b.st, n, b.aw, b.scratch);

    const float inv_sqrt2 = 1.0f / sqrtf(2.0f);
    for (int il = 0; il < hp->n_layer; il++) {
        const g3n_layer *l = &g->layers[il];
        oxl_altup_predict(pool, ao, &l->altup, b.st, b.pred, n, b.aw, b.scratch);
        const float *active = b.pred + (size_t)ao->i_act * n * E;
        oxl_norm(OXL_NORM_RMS, active, &l->attn_norm, NULL, b.cur, E, n, eps);
        oxl_laurel_forward(pool, &l->laurel, b.cur, b.lau, n, eps, b.pw, b.scratch);
        attention(ctx, ub, g, l, il, &b);
        oxl_norm(OXL_NORM_RMS, b.ao, &l->attn_post_norm, NULL, b.ao, E, n, eps);
        oxl_add(b.ao, active, E * n);
        for (int64_t i = 0; i < E * n; i++) {
            const float t = b.ao[i] + b.lau[i];
            b.al[i] = t * inv_sqrt2;
        }
        /* feed-forward, with activation sparsity on the first layers */
        oxl_norm(OXL_NORM_RMS, b.al, &l->ffn_norm, NULL, b.cur, E, n, eps);
        oxl_matmul(pool, &l->ffn_up, b.cur, n, b.up, F, b.scratch);
        oxl_matmul(pool, &l->ffn_gate, b.cur, n, b.gate, F, b.scratch);
        if (il < N_LAYER_SPARSITY) {
            oxl_gaussian_topk(b.gate, F, n, SPARSITY_STD_MUL);
        }
        oxl_geglu_fused(b.gate, b.up, F * n);
        oxl_matmul(pool, &l->ffn_down, b.gate, n, b.fo, E, b.scratch);
        oxl_norm(OXL_NORM_RMS, b.fo, &l->ffn_post_norm, NULL, b.fo, E, n, eps);
        oxl_add(b.fo, b.al, E * n);
        /* the streams corrected by the layer's output, then the per-layer embedding added to all
         * but stream 0 */
        oxl_altup_correct(pool, ao, &l->altup, b.pred, b.fo, b.st, n, b.aw, b.scratch);
        const float *first = b.st + (size_t)ao->i_act * n * E;
        const float *cs = l->altup.correct_scale.data;
        for (int32_t j = 0; j < n; j++) {
            for (int64_t e = 0; e < E; e++) {
                b.h[j * E + e] = first[j * E + e] * cs[e];
            }
        }
        oxl_ple_layer_forward(pool, &g->ple, &l->ple, b.h, b.ple + (size_t)il * N_EMBD_ALTUP, PL, b.ao, n, eps, b.pw,
                              b.scratch);
        for (int a = 1; a < ao->n_altup; a++) {
            oxl_add(b.st + (size_t)a * n * E, b.ao, E * n);
        }
    }
    oxl_altup_merge(pool, ao, &g->altup_unembd_proj, b.st, b.x, n, b.aw, b.scratch);

    /* the final norm (of every token when the context keeps embeddings), the tied head, soft-cap */
    const int32_t n_out = ub->n_out;
    if (ub->embd) {
        oxl_norm(OXL_NORM_RMS, b.x, &g->output_norm, NULL, ub->embd, E, n, eps);
    }
    if (n_out == 0) {
        return;
    }
    if (ub->embd) {
        for (int32_t j = 0; j < n_out; j++) {
            memcpy(b.h + (size_t)j * E, ub->embd + (size_t)ub->out_ids[j] * E, (size_t)E * sizeof(float));
        }
    } else {
        for (int32_t j = 0; j < n_out; j++) {
            memcpy(b.cur + (size_t)j * E, b.x + (size_t)ub->out_ids[j] * E, (size_t)E * sizeof(float));
        }
        oxl_norm(OXL_NORM_RMS, b.cur, &g->output_norm, NULL, b.h, E, n_out, eps);
    }
    oxl_matmul(pool, &g->output, b.h, n_out, logits, hp->n_vocab, b.scratch);
    oxl_softcap(logits, (int64_t)hp->n_vocab * n_out, g->o.final_softcap);
}

/* ---- description ------------------------------------------------------------------------- */

static void describe_rope(FILE *out, const char *what, const oxl_rope *r) {
    fprintf(out, "  %-16s neox, n_rot %d, freq_base %g, freq_scale %g\n", what, r->n_rot, r->freq_base, r->freq_scale);
}

static void g3n_describe(const oxl_model *m, FILE *out) {
    const oxl_hparams *hp = &m->hp;
    const g3n *g = m->weights;
    fprintf(out, "  %-16s n_embd %d, n_layer %d, n_ff %d, n_vocab %d, n_ctx_train %d\n", "shape", hp->n_embd,
            hp->n_layer, hp->n_ff, hp->n_vocab, hp->n_ctx_train);
    fprintf(out, "  %-16s n_head %d, n_head_kv %d, head_dim %d, kq_scale %g\n", "attention", hp->n_head, hp->n_head_kv,
            hp->head_dim, g->o.kq_scale);
    fprintf(out, "  %-16s n_swa %d on layers", "sliding window", g->o.n_swa);
    for (int il = 0; il < hp->n_layer; il++) {
        if (oxl_decoder_is_swa(&g->o, il)) {
            fprintf(out, " %d", il);
        }
    }
    fputc('\n', out);
    describe_rope(out, "rope", &g->o.rope);
    describe_rope(out, "rope (swa)", &g->o.rope_swa);
    fprintf(out, "  %-16s rms, eps %g; q/k norms per head, v norm without weights; post-attention and post-FFN norms\n",
            "norm", g->o.norm_eps);
    fprintf(out, "  %-16s geglu; activation sparsity (gaussian top-k, std x %g) on layers 0-%d\n", "ffn",
            SPARSITY_STD_MUL, (hp->n_layer < N_LAYER_SPARSITY ? hp->n_layer : N_LAYER_SPARSITY) - 1);
    fprintf(out, "  %-16s %d streams, active stream %d\n", "altup", g->altup.n_altup, g->altup.i_act);
    fprintf(out, "  %-16s rank %d\n", "laurel", LAUREL_RANK);
    fprintf(out, "  %-16s %d per layer and token (per_layer_token_embd %s)\n", "per-layer embd", g->ple.n_embd_pl,
            oxl_type_traits_get(g->ple.tok_embd.type)->name);
    if (g->n_layer_kv < hp->n_layer) {
        fprintf(out, "  %-16s from layer %d:", "kv sharing", g->n_layer_kv);
        for (int il = g->n_layer_kv; il < hp->n_layer; il++) {
            fprintf(out, " %d reads %d%s", il, g->kv_src[il], il + 1 < hp->n_layer ? "," : "\n");
        }
    } else {
        fprintf(out, "  %-16s none (fewer than %d layers)\n", "kv sharing", N_LAYER_KV_FROM_START);
    }
    fprintf(out, "  multipliers      embedding %g, final soft-cap %g\n", sqrtf((float)hp->n_embd), g->o.final_softcap);
    fprintf(out, "  %-16s %s\n", "output",
            g->output.data == g->token_embd.data ? "tied to token_embd" : "output.weight");
}

const oxl_arch oxl_arch_gemma3n = {.name = "gemma3n",
                                   .load = gemma3n_load,
                                   .free_weights = g3n_free,
                                   .work_size = g3n_work_size,
                                   .forward = g3n_forward,
                                   .describe = g3n_describe};
