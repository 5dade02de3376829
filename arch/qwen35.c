/* Qwen3-Next, Qwen3.5 and Qwen3.5-MoE ("qwen3next", "qwen35", "qwen35moe"), as llama.cpp's
 * src/models/qwen3next.cpp, qwen35.cpp and qwen35moe.cpp build them: hybrids of gated delta-net
 * layers (linear attention, deltanet.h) and gated full-attention layers. Layer il is a full-attention
 * layer when (il + 1) % full_attention_interval == 0 (default 4), else a delta-net layer.
 *
 *   x = token_embd[tokens]
 *   per layer:  a = rms(x, attn_norm)
 *               o = delta_net(a)                                  (recurrent layers)
 *                 | Wo · (attention(q, k, v) * sigmoid(gate))    (attention layers)
 *               h = x + o
 *               x = h + ffn(rms(h, post_attention_norm))
 *   logits = output · rms(x, output_norm)              (tied to token_embd when output is absent)
 *
 * Attention layers: attn_q gives each head [query (head_dim) | output gate (head_dim)]; q and k get
 * a per-head RMSNorm (weights (head_dim)) before RoPE; kq_scale 1/sqrt(head_dim). RoPE is NeoX on
 * rope.dimension_count dims (qwen3next) or interleaved M-RoPE with rope.dimension_sections (qwen35,
 * qwen35moe; text positions (p, p, p, 0)).
 * Delta net: value head h reads key head h % n_k (qwen35, qwen35moe) or h / (n_v / n_k) (qwen3next,
 * which also fuses beta and alpha into ssm_ba).
 * FFN: dense SwiGLU (qwen35); qwen35moe and qwen3next: softmax router, top-k weights renormalised,
 * plus a SwiGLU shared expert scaled by sigmoid(x · ffn_gate_inp_shexp) (moe.h).
 *
 * The KV cache of the attention layers and the conv and delta-rule states of the recurrent ones live
 * in the context's memory; a sequence can be cleared but not cut back to a later position. The
 * NextN/MTP block that nextn_predict_layers appends to block_count is not evaluated (nor bound).
 */
#include "deltanet.h"
#include "errors.h"
#include "moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct q35_opts {
    float norm_eps;
    float kq_scale;
    int32_t full_attn_interval;
    oxl_rope rope;
    oxl_gdn_opts gdn;
    oxl_moe_opts moe; /* n_expert 0: dense FFN (qwen35) */
} q35_opts;

typedef struct q35_layer {
    bool recurrent;
    oxl_tensor attn_norm; /* (n_embd) */
    oxl_tensor post_norm; /* (n_embd) post_attention_norm: the FFN's pre-norm */
    oxl_gdn_layer gdn;    /* recurrent layers */
    oxl_tensor wq;        /* (n_embd, 2 n_head head_dim) per head [query | gate] */
    oxl_tensor wk;        /* (n_embd, n_head_kv head_dim) */
    oxl_tensor wv;        /* (n_embd, n_head_kv head_dim) */
    oxl_tensor wo;        /* (n_head head_dim, n_embd) */
    oxl_tensor q_norm;    /* (head_dim) */
    oxl_tensor k_norm;    /* (head_dim) */
    oxl_tensor ffn_gate;  /* (n_embd, n_ff) dense FFN */
    oxl_tensor ffn_up;    /* (n_embd, n_ff) */
    oxl_tensor ffn_down;  /* (n_ff, n_embd) */
    oxl_moe_layer moe;    /* experts and shared expert */
} q35_layer;

typedef struct q35_model {
    q35_opts o;
    oxl_tensor token_embd;  /* (n_embd, n_vocab) */
    oxl_tensor output_norm; /* (n_embd) */
    oxl_tensor output;      /* (n_embd, n_vocab) */
    q35_layer *layers;      /* [n_layer] */
} q35_model;

/* ---- loading ----------------------------------------------------------------------------- */

static int q35_hparams(oxl_model *m, q35_opts *o, oxl_rope_mode mode, oxl_error *err) {
    oxl_hparams *hp = &m->hp;
    const char *path = oxl_gguf_path(m->gguf), *arch = m->arch->name;
    int32_t n_nextn = 0, head_dim_v = 0;
    if (oxl_hp_int(m, "context_length", &hp->n_ctx_train, true, err) ||
        oxl_hp_int(m, "embedding_length", &hp->n_embd, true, err) ||
        oxl_hp_int(m, "block_count", &hp->n_layer, true, err) ||
        oxl_hp_int(m, "feed_forward_length", &hp->n_ff, true, err) ||
        oxl_hp_int(m, "attention.head_count", &hp->n_head, true, err) ||
        oxl_hp_float(m, "attention.layer_norm_rms_epsilon", &o->norm_eps, true, err) ||
        oxl_hp_count(m, "nextn_predict_layers", &n_nextn, false, err)) {
        return -1;
    }
    hp->n_head_kv = hp->n_head;
    hp->head_dim = hp->n_embd / hp->n_head;
    if (oxl_hp_int(m, "attention.head_count_kv", &hp->n_head_kv, false, err) ||
        oxl_hp_int(m, "attention.key_length", &hp->head_dim, false, err) ||
        oxl_hp_int(m, "attention.value_length", &head_dim_v, false, err)) {
        return -1;
    }
    hp->n_rot = hp->head_dim;
    hp->rope_freq_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    o->full_attn_interval = 4;
    if (oxl_hp_int(m, "rope.dimension_count", &hp->n_rot, false, err) ||
        oxl_hp_float(m, "rope.freq_base", &hp->rope_freq_base, false, err) ||
        oxl_hp_int(m, "full_attention_interval", &o->full_attn_interval, false, err)) {
        return -1;
    }
    if (n_nextn >= hp->n_layer) {
        return oxl_err_set(err, "%s: %s.nextn_predict_layers = %d must be below block_count %d", path, arch, n_nextn,
                           hp->n_layer);
    }
    hp->n_layer -= n_nextn;
    char key[256];
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", arch);
    if (oxl_gguf_find_key(m->gguf, key) >= 0) {
        return oxl_err_set(err, "%s: key '%s' (an explicit recurrent-layer list) is not supported", path, key);
    }
    if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv != 0) {
        return oxl_err_set(err, "%s: %s.attention.head_count = %d is not a multiple of head_count_kv = %d", path, arch,
                           hp->n_head, hp->n_head_kv);
    }
    if (head_dim_v && head_dim_v != hp->head_dim) {
        return oxl_err_set(err, "%s: %s.attention.value_length = %d differs from key_length %d; unsupported", path,
                           arch, head_dim_v, hp->head_dim);
    }
    if (hp->head_dim > 1024 || hp->n_rot > hp->head_dim || hp->n_rot % 2) {
        return oxl_err_set(err,
                           "%s: unsupported head size %d / %s.rope.dimension_count %d (head size <= 1024, even "
                           "rotary dims <= head size)",
                           path, hp->head_dim, arch, hp->n_rot);
    }
    /* every layer binds at least a norm, an input and an output projection */
    if (hp->n_layer > oxl_gguf_n_tensors(m->gguf) / 3) {
        return oxl_err_set(err, "%s: %s.block_count = %d needs at least %lld tensors; the file has %lld", path, arch,
                           hp->n_layer, 3LL * hp->n_layer, (long long)oxl_gguf_n_tensors(m->gguf));
    }
    o->rope = (oxl_rope){.mode = mode,
                         .n_rot = hp->n_rot,
                         .freq_base = hp->rope_freq_base,
                         .freq_scale = 1.0f,
                         .attn_factor = 1.0f,
                         .beta_fast = 32.0f,
                         .beta_slow = 1.0f,
                         .n_ctx_orig = hp->n_ctx_train};
    if (mode == OXL_ROPE_IMROPE) {
        /* llama.cpp: get_key_or_arr(rope.dimension_sections, 4, required) */
        int32_t *sec = o->rope.sections;
        if (oxl_hp_int_layers(m, "rope.dimension_sections", sec, 4, true, err)) {
            return -1;
        }
        const int64_t sum = (int64_t)sec[0] + sec[1] + sec[2] + sec[3];
        if (sec[0] < 0 || sec[1] < 0 || sec[2] < 0 || sec[3] < 0 || sec[0] + sec[1] + sec[2] == 0 || sum < 1 ||
            sum > hp->head_dim) {
            return oxl_err_set(err,
                               "%s: %s.rope.dimension_sections [%d, %d, %d, %d] must be non-negative, not all of "
                               "the first three 0, and sum to at most the head size %d",
                               path, arch, sec[0], sec[1], sec[2], sec[3], hp->head_dim);
        }
    }
    o->kq_scale = 1.0f / sqrtf((float)hp->head_dim);
    o->gdn.norm_eps = o->norm_eps;
    hp->mrope = mode == OXL_ROPE_IMROPE;
    return 0;
}

/* The experts of qwen35moe and qwen3next: refused when absent, as llama.cpp's loaders do. */
static int q35_moe_keys(oxl_model *m, q35_opts *o, oxl_error *err) {
    int32_t used = 1;
    if (oxl_hp_count(m, "expert_used_count", &used, false, err)) {
        return -1;
    }
    o->moe.norm_w = true;
    if (oxl_moe_hparams(m, &o->moe, m->hp.n_ff / (used > 0 ? used : 1), OXL_MOE_KEY_FF_EXP | OXL_MOE_KEY_FF_SHEXP,
                        err)) {
        return -1;
    }
    if (o->moe.n_expert == 0) {
        return oxl_err_set(err, "%s: %s.expert_count is missing or 0; this architecture needs experts",
                           oxl_gguf_path(m->gguf), m->arch->name);
    }
    if (o->moe.n_ff_shexp == 0) {
        o->moe.n_ff_shexp = m->hp.n_ff;
    }
    return 0;
}

static int bind_f32(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, oxl_error *err) {
    if (oxl_bind_tensor(m, t, name, il, ne0, 0, true, err)) {
        return -1;
    }
    if (t->type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' must be f32 (norm weights are)", oxl_gguf_path(m->gguf), t->name);
    }
    return 0;
}

static int q35_bind_layer(const oxl_model *m, const q35_opts *o, q35_layer *l, int il, oxl_error *err) {
    const oxl_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, D = hp->head_dim, Q = (int64_t)hp->n_head * D, KV = (int64_t)hp->n_head_kv * D;
    l->recurrent = (il + 1) % o->full_attn_interval != 0;
    if (bind_f32(m, &l->attn_norm, "blk.%d.attn_norm.weight", il, E, err) ||
        bind_f32(m, &l->post_norm, "blk.%d.post_attention_norm.weight", il, E, err)) {
        return -1;
    }
    if (l->recurrent) {
        if (oxl_gdn_bind(m, &o->gdn, &l->gdn, il, err)) {
            return -1;
        }
    } else if (oxl_bind_tensor(m, &l->wq, "blk.%d.attn_q.weight", il, E, 2 * Q, true, err) ||
               oxl_bind_tensor(m, &l->wk, "blk.%d.attn_k.weight", il, E, KV, true, err) ||
               oxl_bind_tensor(m, &l->wv, "blk.%d.attn_v.weight", il, E, KV, true, err) ||
               oxl_bind_tensor(m, &l->wo, "blk.%d.attn_output.weight", il, Q, E, true, err) ||
               bind_f32(m, &l->q_norm, "blk.%d.attn_q_norm.weight", il, D, err) ||
               bind_f32(m, &l->k_norm, "blk.%d.attn_k_norm.weight", il, D, err)) {
        return -1;
    }
    if (o->moe.n_expert > 0) {
        return oxl_moe_bind(m, &o->moe, &l->moe, il, OXL_MOE_HAS_SHEXP | OXL_MOE_HAS_SHEXP_GATE, err);
    }
    return oxl_bind_tensor(m, &l->ffn_gate, "blk.%d.ffn_gate.weight", il, E, hp->n_ff, true, err) ||
                   oxl_bind_tensor(m, &l->ffn_up, "blk.%d.ffn_up.weight", il, E, hp->n_ff, true, err) ||
                   oxl_bind_tensor(m, &l->ffn_down, "blk.%d.ffn_down.weight", il, hp->n_ff, E, true, err)
               ? -1
               : 0;
}

static void q35_free(void *weights) {
    q35_model *d = weights;
    if (d) {
        free(d->layers);
        free(d);
    }
}

static int q35_load(oxl_model *m, const q35_opts *o, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    q35_model *d = calloc(1, sizeof *d);
    if (!d) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    m->weights = d;
    d->o = *o;
    d->layers = calloc((size_t)m->hp.n_layer, sizeof *d->layers);
    if (!d->layers) {
        return oxl_err_set(err, "%s: out of memory for %d layers", path, m->hp.n_layer);
    }
    const int64_t E = m->hp.n_embd;
    if (oxl_bind_tensor(m, &d->token_embd, "token_embd.weight", -1, E, m->hp.n_vocab, true, err) ||
        bind_f32(m, &d->output_norm, "output_norm.weight", -1, E, err) ||
        oxl_bind_tensor(m, &d->output, "output.weight", -1, E, m->hp.n_vocab, false, err)) {
        return -1;
    }
    if (!d->output.data) {
        d->output = d->token_embd;
    }
    for (int il = 0; il < m->hp.n_layer; il++) {
        if (q35_bind_layer(m, &d->o, &d->layers[il], il, err)) {
            return -1;
        }
    }
    return 0;
}

static int qwen35_load(oxl_model *m, oxl_error *err) {
    q35_opts o = {0};
    return q35_hparams(m, &o, OXL_ROPE_IMROPE, err) || oxl_gdn_hparams(m, &o.gdn, false, false, err) ||
                   q35_load(m, &o, err)
               ? -1
               : 0;
}

static int qwen35moe_load(oxl_model *m, oxl_error *err) {
    q35_opts o = {0};
    return q35_hparams(m, &o, OXL_ROPE_IMROPE, err) || q35_moe_keys(m, &o, err) ||
                   oxl_gdn_hparams(m, &o.gdn, false, false, err) || q35_load(m, &o, err)
               ? -1
               : 0;
}

static int qwen3next_load(oxl_model *m, oxl_error *err) {
    q35_opts o = {0};
    return q35_hparams(m, &o, OXL_ROPE_NEOX, err) || q35_moe_keys(m, &o, err) ||
                   oxl_gdn_hparams(m, &o.gdn, true, true, err) || q35_load(m, &o, err)
               ? -1
               : 0;
}

/* ---- forward ----------------------------------------------------------------------------- */

/* Activation buffers of one pass, carved from ctx->work in this order. */
typedef struct q35_acts {
    float *x;       /* (n_embd, n) residual stream */
    float *xb;      /* (n_embd, n) normalised layer input */
    float *qg;      /* (2 n_head head_dim, n) query and gate */
    float *q;       /* (n_head head_dim, n) */
    float *gate;    /* (n_head head_dim, n) */
    float *k;       /* (n_head_kv head_dim, n) */
    float *v;       /* (n_head_kv head_dim, n) */
    float *att;     /* (n_head head_dim, n) attention output before Wo */
    float *ao;      /* (n_embd, n) mixer output */
    float *fo;      /* (n_embd, n) FFN output */
    float *fg;      /* (n_ff, n) dense FFN gate */
    float *fu;      /* (n_ff, n) dense FFN up */
    float *xout;    /* (n_embd, n_out) residual stream of the tokens whose logits are wanted */
    void *moe;      /* the MoE block's work */
    void *gdn;      /* the delta net's work */
    float *scores;  /* (n_ctx + head_dim) per thread */
    float *scratch; /* matmul conversions */
} q35_acts;

static size_t q35_layout(const oxl_model *m, int32_t n, int32_t n_ctx, int n_threads, void *base, q35_acts *a) {
    const oxl_hparams *hp = &m->hp;
    const q35_model *d = m->weights;
    const size_t E = hp->n_embd, Q = (size_t)hp->n_head * hp->head_dim, KV = (size_t)hp->n_head_kv * hp->head_dim;
    const size_t F = hp->n_ff;
    size_t widest = E > 2 * Q ? E : 2 * Q;
    widest = widest > F ? widest : F;
    const size_t moe = d->o.moe.n_expert > 0 ? oxl_moe_work_size(&d->o.moe, hp->n_embd, n) / sizeof(float) : 0;
    const size_t gdn = oxl_gdn_work_size(&d->o.gdn, hp->n_embd, n) / sizeof(float);
    const size_t sizes[] = {E * n,          E * n,  2 * Q * n, Q * n,
                            Q * n,          KV * n, KV * n,    Q * n,
                            E * n,          E * n,  F * n,     F * n,
                            E * n,          moe,    gdn,       (size_t)(n_ctx + hp->head_dim) * (size_t)n_threads,
                            widest * n + 64};
    float **slots[] = {&a->x,
                       &a->xb,
                       &a->qg,
                       &a->q,
                       &a->gate,
                       &a->k,
                       &a->v,
                       &a->att,
                       &a->ao,
                       &a->fo,
                       &a->fg,
                       &a->fu,
                       &a->xout,
                       (float **)&a->moe,
                       (float **)&a->gdn,
                       &a->scores,
                       &a->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

static size_t q35_work_size(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads) {
    q35_acts a;
    return q35_layout(m, n_batch, n_ctx, n_threads, NULL, &a);
}

/* The gated attention of llama.cpp's build_layer_attn: joint query/gate projection, per-head q and k
 * RMSNorm, RoPE, attention over the cache, sigmoid(gate) times the result, Wo. */
static void gated_attention(oxl_ctx *ctx, const q35_model *d, const q35_layer *l, int il, const oxl_ubatch *ub,
                            q35_acts *b) {
    const oxl_hparams *hp = &ctx->model->hp;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t D = hp->head_dim, Q = (int64_t)hp->n_head * D, KV = (int64_t)hp->n_head_kv * D;
    oxl_matmul(pool, &l->wq, b->xb, n, b->qg, 2 * Q, b->scratch);
    for (int32_t j = 0; j < n; j++) {
        for (int64_t h = 0; h < hp->n_head; h++) {
            const float *src = b->qg + (size_t)j * 2 * Q + h * 2 * D;
            memcpy(b->q + (size_t)j * Q + h * D, src, (size_t)D * sizeof(float));
            memcpy(b->gate + (size_t)j * Q + h * D, src + D, (size_t)D * sizeof(float));
        }
    }
    oxl_matmul(pool, &l->wk, b->xb, n, b->k, KV, b->scratch);
    oxl_matmul(pool, &l->wv, b->xb, n, b->v, KV, b->scratch);
    oxl_norm(OXL_NORM_RMS, b->q, &l->q_norm, NULL, b->q, D, n * hp->n_head, d->o.norm_eps);
    oxl_norm(OXL_NORM_RMS, b->k, &l->k_norm, NULL, b->k, D, n * hp->n_head_kv, d->o.norm_eps);
    for (int32_t j = 0; j < n; j++) {
        oxl_ubatch_rope(ub, j, b->q + j * Q, hp->n_head, hp->head_dim, &d->o.rope);
        oxl_ubatch_rope(ub, j, b->k + j * KV, hp->n_head_kv, hp->head_dim, &d->o.rope);
    }
    /* llama.cpp rotates q and k (v and the output) around a quantized cache */
    const int rot_k = oxl_memory_rot_k(ctx->mem, hp->head_dim), rot_v = oxl_memory_rot_v(ctx->mem, hp->head_dim);
    if (rot_k) {
        oxl_fwht_rows(b->q, Q * n, rot_k);
        oxl_fwht_rows(b->k, KV * n, rot_k);
    }
    if (rot_v) {
        oxl_fwht_rows(b->v, KV * n, rot_v);
    }
    oxl_memory_kv_store(ctx->mem, il, ub, b->k, b->v);
    const oxl_attn_params ap = {
        .n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .head_dim = hp->head_dim, .scale = d->o.kq_scale};
    const oxl_kv_view kv = oxl_memory_kv_view(ctx->mem, il, ub);
    oxl_attention(pool, &kv, b->q, b->att, &ap, ctx->params.flash_attn != OXL_FLASH_ATTN_OFF, b->scores);
    if (rot_v) {
        oxl_fwht_rows(b->att, Q * n, rot_v);
    }
    for (int64_t e = 0; e < Q * n; e++) {
        b->att[e] *= 1.0f / (1.0f + expf(-b->gate[e]));
    }
    oxl_matmul(pool, &l->wo, b->att, n, b->ao, hp->n_embd, b->scratch);
}

static void q35_forward(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits) {
    const oxl_model *m = ctx->model;
    const oxl_hparams *hp = &m->hp;
    const q35_model *d = m->weights;
    const q35_opts *o = &d->o;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    q35_acts b;
    q35_layout(m, n, ctx->n_ctx, oxl_pool_size(pool), ctx->work, &b);

    for (int32_t j = 0; j < n; j++) {
        oxl_ubatch_input_row(ub, &d->token_embd, j, E, b.x + j * E);
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const q35_layer *l = &d->layers[il];
        oxl_norm(OXL_NORM_RMS, b.x, &l->attn_norm, NULL, b.xb, E, n, o->norm_eps);
        if (l->recurrent) {
            oxl_gdn_forward(ctx, &o->gdn, &l->gdn, il, ub, b.xb, b.ao, b.gdn);
        } else {
            gated_attention(ctx, d, l, il, ub, &b);
        }
        oxl_add(b.x, b.ao, E * n);
        oxl_norm(OXL_NORM_RMS, b.x, &l->post_norm, NULL, b.xb, E, n, o->norm_eps);
        if (o->moe.n_expert > 0) {
            oxl_moe_forward(ctx, &o->moe, &l->moe, b.xb, n, b.fo, b.moe);
        } else {
            oxl_matmul(pool, &l->ffn_gate, b.xb, n, b.fg, F, b.scratch);
            oxl_matmul(pool, &l->ffn_up, b.xb, n, b.fu, F, b.scratch);
            oxl_swiglu(b.fg, b.fu, F, n);
            oxl_matmul(pool, &l->ffn_down, b.fg, n, b.fo, E, b.scratch);
        }
        oxl_add(b.x, b.fo, E * n);
    }

    /* the final norm and the output head (of the tokens whose logits are wanted) */
    oxl_rms_output_head(pool, ub, b.x, E, n, &d->output_norm, o->norm_eps, &d->output, hp->n_vocab, b.xb, b.xout,
                        logits, b.scratch);
}

/* ---- repacking -------------------------------------------------------------------------- */

/* Repacks one projection into the CPU's interleaved layout (matmul.h); short of memory it keeps its
 * plain rows. A tied output head keeps its plain rows too, which embedding look-ups read. */
static void repack_one(oxl_model *m, oxl_tensor *t, bool evict) {
    const size_t bytes = t->data ? oxl_tensor_repack_bytes(t) : 0;
    void *buf = bytes ? oxl_tensor_repack_alloc(bytes) : NULL;
    if (!buf) {
        return;
    }
    oxl_tensor_repack_rows(t, buf, 0, t->ne[1]);
    if (oxl_model_own(m, buf, bytes)) {
        t->rp = buf;
        if (evict) {
            oxl_tensor_evict(t);
            (void)oxl_model_note_evicted(m, t->data);
        }
    }
}

/* The dense projections of every layer and the head (experts keep their plain rows, as the
 * decoder's repacking leaves them). */
static void q35_repack(oxl_model *m, bool evict) {
    q35_model *d = m->weights;
    for (int il = 0; il < m->hp.n_layer; il++) {
        q35_layer *l = &d->layers[il];
        oxl_tensor *ts[] = {&l->wq,     &l->wk,       &l->wv,      &l->wo,       &l->ffn_gate,
                            &l->ffn_up, &l->ffn_down, &l->gdn.qkv, &l->gdn.gate, &l->gdn.out};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
            repack_one(m, ts[i], evict);
        }
    }
    if (d->output.data != d->token_embd.data) {
        repack_one(m, &d->output, evict);
    }
}

/* ---- description ------------------------------------------------------------------------- */

static void q35_describe(const oxl_model *m, FILE *out) {
    const oxl_hparams *hp = &m->hp;
    const q35_model *d = m->weights;
    const q35_opts *o = &d->o;
    fprintf(out, "  %-16s n_embd %d, n_layer %d, n_ff %d, n_vocab %d, n_ctx_train %d\n", "shape", hp->n_embd,
            hp->n_layer, hp->n_ff, hp->n_vocab, hp->n_ctx_train);
    fprintf(out, "  %-16s", "layer kinds");
    for (int il = 0; il < hp->n_layer; il++) {
        fputs(d->layers[il].recurrent ? " R" : " A", out);
    }
    fprintf(out, " (R delta net, A full attention every %d)\n", o->full_attn_interval);
    fprintf(out, "  %-16s n_head %d, n_head_kv %d, head_dim %d, kq_scale %g; sigmoid output gate from attn_q\n",
            "attention", hp->n_head, hp->n_head_kv, hp->head_dim, o->kq_scale);
    const oxl_rope *r = &o->rope;
    fprintf(out, "  %-16s %s, n_rot %d, freq_base %g", "rope", r->mode == OXL_ROPE_IMROPE ? "imrope" : "neox", r->n_rot,
            r->freq_base);
    if (r->mode == OXL_ROPE_IMROPE) {
        fprintf(out, ", sections [%d, %d, %d, %d] (text positions p, p, p, 0)", r->sections[0], r->sections[1],
                r->sections[2], r->sections[3]);
    }
    fputc('\n', out);
    fprintf(out, "  %-16s rms, eps %g; q/k norms per head; post-attention norm before the FFN\n", "norm", o->norm_eps);
    oxl_gdn_describe(&o->gdn, out);
    if (o->moe.n_expert > 0) {
        fprintf(out, "  %-16s experts on every layer, sigmoid-gated shared expert\n", "ffn");
        oxl_moe_describe(&o->moe, out);
    } else {
        fprintf(out, "  %-16s swiglu, sequential residual\n", "ffn");
    }
    fprintf(out, "  %-16s %s\n", "output",
            d->output.data == d->token_embd.data ? "tied to token_embd" : "output.weight");
}

#define Q35_ARCH(arch_name, load_fn)                                                                                   \
    {                                                                                                                  \
        .name = (arch_name), .load = (load_fn), .free_weights = q35_free, .work_size = q35_work_size,                  \
        .forward = q35_forward, .describe = q35_describe, .repack = q35_repack, .embd_input = true                     \
    }

const oxl_arch oxl_arch_qwen35 = Q35_ARCH("qwen35", qwen35_load);
const oxl_arch oxl_arch_qwen35moe = Q35_ARCH("qwen35moe", qwen35moe_load);
const oxl_arch oxl_arch_qwen3next = Q35_ARCH("qwen3next", qwen3next_load);
