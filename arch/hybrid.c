/* The hybrid families that mix attention with recurrent blocks layer by layer: LFM2, Granite 4.0-H,
 * Nemotron-H and Falcon-H1 ("lfm2", "granitehybrid", "nemotron_h", "falcon-h1"), as llama.cpp's
 * src/models/lfm2.cpp, granite-hybrid.cpp, nemotron-h.cpp and falcon-h1.cpp build them. Every layer
 * is one block
 *
 *   a = rms(x, attn_norm)
 *   x = x + residual_scale * mixer(a)
 *   x = x + residual_scale * ffn(rms(x, ffn_norm))          (layers with an FFN)
 *
 * with the mixer chosen per layer:
 *
 *   lfm2:          head_count_kv[il] == 0: the gated short convolution (shortconv.h), else attention
 *                  with per-head q/k RMSNorm and NeoX RoPE; SwiGLU FFN on every layer; the final norm
 *                  is token_embd_norm.weight
 *   granitehybrid: head_count_kv[il] == 0: Mamba-2 (ssm.h), else attention, with RoPE only while
 *                  rope.scaling.finetuned holds; FFN: experts (softmax, top-k renormalised) plus an
 *                  ungated shared expert, or a dense SwiGLU; Granite's multipliers (embedding_scale,
 *                  residual_scale, attention.scale, logits / logit_scale)
 *   nemotron_h:    head_count_kv[il] == 0 and feed_forward_length[il] == 0: Mamba-2; else
 *                  feed_forward_length[il] == 0: attention without positions; else the MLP
 *                  down · relu(up · a)^2; no FFN after the mixer
 *   falcon-h1:     attention (NeoX RoPE) + Mamba-2 on the same a, summed; SwiGLU FFN whose norm is
 *                  named blk.N.ffn_norm (no .weight)
 *
 * The attention layers keep a KV cache and the recurrent layers their conv (and scan) state per
 * sequence in the context's memory (src/model/model_memory.h); like Mamba's, a sequence with
 * recurrent state can be cleared but not cut back to a later position. */
#include "decoder.h"
#include "errors.h"
#include "shortconv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum hybrid_family { FAM_LFM2, FAM_GRANITE, FAM_NEMOTRON, FAM_FALCON } hybrid_family;

/* The mixers of a layer (falcon-h1: attention and Mamba-2 together). */
enum { MIX_ATTN = 1, MIX_SSM = 2, MIX_CONV = 4, MIX_MLP = 8 };

typedef struct hybrid_layer {
    unsigned mix;
    int32_t n_ff;                /* the MLP mixer's or the dense FFN's width */
    oxl_tensor attn_norm;        /* (n_embd) */
    oxl_tensor wqkv, bqkv;       /* (n_embd, (n_head + 2*n_head_kv)*head_dim) fused, when the file has it */
    oxl_tensor wq, wk, wv;       /* (n_embd, n_head*head_dim), (n_embd, n_head_kv*head_dim) x 2 */
    oxl_tensor bq, bk, bv, bo;   /* optional biases */
    oxl_tensor q_norm, k_norm;   /* (head_dim) lfm2 */
    oxl_tensor wo;               /* (n_head*head_dim, n_embd) */
    oxl_ssm_layer ssm;           /* Mamba-2 */
    oxl_shortconv_layer conv;    /* lfm2's conv layers */
    oxl_tensor ffn_norm;         /* (n_embd); absent: no FFN after the mixer */
    oxl_tensor ffn_gate, ffn_up; /* (n_embd, n_ff) */
    oxl_tensor ffn_down;         /* (n_ff, n_embd) */
    oxl_tensor ffn_gate_b, ffn_up_b, ffn_down_b;
    oxl_moe_layer moe; /* granitehybrid's experts; moe.gate_inp.data NULL when dense */
} hybrid_layer;

typedef struct hybrid {
    hybrid_family fam;
    float norm_eps;
    float kq_scale;
    float embd_scale;     /* 0: none */
    float residual_scale; /* 0: none */
    float logit_scale;    /* logits *= (granite: 1 / logit_scale); 0: none */
    oxl_rope rope;        /* mode OXL_ROPE_NONE: attention without positions */
    oxl_ssm_opts ssm;     /* kind OXL_SSM_NONE for lfm2 */
    int32_t l_cache;      /* lfm2's conv window */
    int32_t n_swa;        /* lfm2: attention.sliding_window on the attention layers; 0: none */
    oxl_moe_opts moe;
    oxl_tensor token_embd; /* (n_embd, n_vocab) */
    oxl_tensor output_norm;
    oxl_tensor output; /* token_embd when tied */
    hybrid_layer *layers;
} hybrid;

/* ---- loading ----------------------------------------------------------------------------- */

static void hybrid_free(void *weights) {
    hybrid *h = weights;
    if (h) {
        free(h->layers);
        free(h);
    }
}

/* nemotron_h's shape keys: llama_model_base's, with feed_forward_length and head_count_kv per layer
 * and no RoPE. */
static int nemotron_shape(oxl_model *m, hybrid *h, oxl_error *err) {
    oxl_hparams *hp = &m->hp;
    if (oxl_hp_int(m, "context_length", &hp->n_ctx_train, true, err) ||
        oxl_hp_int(m, "embedding_length", &hp->n_embd, true, err) ||
        oxl_hp_int(m, "block_count", &hp->n_layer, true, err) ||
        oxl_hp_int(m, "attention.head_count", &hp->n_head, true, err) ||
        oxl_hp_float(m, "attention.layer_norm_rms_epsilon", &h->norm_eps, true, err)) {
        return -1;
    }
    hp->head_dim = hp->n_embd / hp->n_head;
    if (oxl_hp_int(m, "attention.key_length", &hp->head_dim, false, err)) {
        return -1;
    }
    if (hp->head_dim < 1 || hp->head_dim > 1024) {
        return oxl_err_set(err, "%s: unsupported head size %d (1 .. 1024)", oxl_gguf_path(m->gguf), hp->head_dim);
    }
    hp->n_rot = hp->head_dim;
    h->rope = (oxl_rope){.mode = OXL_ROPE_NONE};
    h->kq_scale = 1.0f / sqrtf((float)hp->head_dim);
    return 0;
}

/* The per-layer counts (head_count_kv, feed_forward_length: one value or an array of n_layer), the
 * KV heads of the attention layers (which must agree) and the widest FFN. */
static int layer_counts(oxl_model *m, int32_t *kv, int32_t *ff, oxl_error *err) {
    oxl_hparams *hp = &m->hp;
    const char *path = oxl_gguf_path(m->gguf), *arch = m->arch->name;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        kv[il] = hp->n_head;
        ff[il] = hp->n_ff;
    }
    if (oxl_hp_int_layers(m, "attention.head_count_kv", kv, hp->n_layer, false, err) ||
        oxl_hp_int_layers(m, "feed_forward_length", ff, hp->n_layer, true, err)) {
        return -1;
    }
    hp->n_head_kv = 0;
    hp->n_ff = 0;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        if (kv[il] != 0 && hp->n_head_kv != 0 && kv[il] != hp->n_head_kv) {
            return oxl_err_set(err, "%s: %s.attention.head_count_kv differs between attention layers (%d, %d)", path,
                               arch, hp->n_head_kv, kv[il]);
        }
        if (kv[il] != 0 && hp->n_head % kv[il] != 0) {
            return oxl_err_set(err, "%s: %s.attention.head_count = %d is not a multiple of head_count_kv[%d] = %d",
                               path, arch, hp->n_head, il, kv[il]);
        }
        if (ff[il] > (1 << 24)) {
            return oxl_err_set(err, "%s: %s.feed_forward_length[%d] = %d out of range", path, arch, il, ff[il]);
        }
        hp->n_head_kv = kv[il] ? kv[il] : hp->n_head_kv;
        hp->n_ff = ff[il] > hp->n_ff ? ff[il] : hp->n_ff;
    }
    if (hp->n_head_kv == 0) {
        hp->n_head_kv = hp->n_head; /* no attention layer: the cache stays empty */
    }
    return 0;
}

/* The attention tensors of layer il (create_tensor_qkv: a fused attn_qkv when the file has one, else
 * separate q/k/v, biases optional; lfm2's per-head q/k norms). */
static int bind_attention(const oxl_model *m, const hybrid *h, hybrid_layer *l, int il, oxl_error *err) {
    const oxl_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
    if (oxl_bind_tensor(m, &l->wqkv, "blk.%d.attn_qkv.weight", il, E, Q + 2 * KV, false, err) ||
        (l->wqkv.data && oxl_bind_tensor(m, &l->bqkv, "blk.%d.attn_qkv.bias", il, Q + 2 * KV, 0, false, err))) {
        return -1;
    }
    if (!l->wqkv.data && (oxl_bind_tensor(m, &l->wq, "blk.%d.attn_q.weight", il, E, Q, true, err) ||
                          oxl_bind_tensor(m, &l->wk, "blk.%d.attn_k.weight", il, E, KV, true, err) ||
                          oxl_bind_tensor(m, &l->wv, "blk.%d.attn_v.weight", il, E, KV, true, err) ||
                          oxl_bind_tensor(m, &l->bq, "blk.%d.attn_q.bias", il, Q, 0, false, err) ||
                          oxl_bind_tensor(m, &l->bk, "blk.%d.attn_k.bias", il, KV, 0, false, err) ||
                          oxl_bind_tensor(m, &l->bv, "blk.%d.attn_v.bias", il, KV, 0, false, err))) {
        return -1;
    }
    if (oxl_bind_tensor(m, &l->wo, "blk.%d.attn_output.weight", il, Q, E, true, err)) {
        return -1;
    }
    if (h->fam == FAM_LFM2) {
        return oxl_bind_tensor(m, &l->q_norm, "blk.%d.attn_q_norm.weight", il, hp->head_dim, 0, true, err) ||
                       oxl_bind_tensor(m, &l->k_norm, "blk.%d.attn_k_norm.weight", il, hp->head_dim, 0, true, err)
                   ? -1
                   : 0;
    }
    /* lfm2 and falcon-h1 have no output bias (their graphs pass none) */
    return h->fam != FAM_FALCON && oxl_bind_tensor(m, &l->bo, "blk.%d.attn_output.bias", il, E, 0, false, err) ? -1 : 0;
}

/* The FFN after the mixer: experts (granitehybrid with expert_count) or a dense SwiGLU. */
static int bind_ffn(const oxl_model *m, const hybrid *h, hybrid_layer *l, int il, oxl_error *err) {
    const int64_t E = m->hp.n_embd, F = l->n_ff;
    if (oxl_bind_tensor(m, &l->ffn_norm, h->fam == FAM_FALCON ? "blk.%d.ffn_norm" : "blk.%d.ffn_norm.weight", il, E, 0,
                        true, err)) {
        return -1;
    }
    if (h->moe.n_expert > 0) {
        return oxl_moe_bind(m, &h->moe, &l->moe, il, h->moe.n_ff_shexp > 0 ? OXL_MOE_HAS_SHEXP : 0, err);
    }
    const bool biases = h->fam != FAM_LFM2;
    return oxl_bind_tensor(m, &l->ffn_gate, "blk.%d.ffn_gate.weight", il, E, F, true, err) ||
                   oxl_bind_tensor(m, &l->ffn_up, "blk.%d.ffn_up.weight", il, E, F, true, err) ||
                   oxl_bind_tensor(m, &l->ffn_down, "blk.%d.ffn_down.weight", il, F, E, true, err) ||
                   (biases && (oxl_bind_tensor(m, &l->ffn_gate_b, "blk.%d.ffn_gate.bias", il, F, 0, false, err) ||
                               oxl_bind_tensor(m, &l->ffn_up_b, "blk.%d.ffn_up.bias", il, F, 0, false, err) ||
                               oxl_bind_tensor(m, &l->ffn_down_b, "blk.%d.ffn_down.bias", il, E, 0, false, err)))
               ? -1
               : 0;
}

static int bind_layers(oxl_model *m, hybrid *h, const int32_t *kv, const int32_t *ff, oxl_error *err) {
    for (int il = 0; il < m->hp.n_layer; il++) {
        hybrid_layer *l = &h->layers[il];
        l->n_ff = ff[il];
        switch (h->fam) {
        case FAM_LFM2: l->mix = kv[il] == 0 ? MIX_CONV : MIX_ATTN; break;
        case FAM_GRANITE: l->mix = kv[il] == 0 ? MIX_SSM : MIX_ATTN; break;
        case FAM_NEMOTRON: l->mix = ff[il] != 0 ? MIX_MLP : kv[il] == 0 ? MIX_SSM : MIX_ATTN; break;
        case FAM_FALCON: l->mix = MIX_ATTN | MIX_SSM; break;
        }
        if (oxl_bind_tensor(m, &l->attn_norm, "blk.%d.attn_norm.weight", il, m->hp.n_embd, 0, true, err) ||
            ((l->mix & MIX_ATTN) && bind_attention(m, h, l, il, err)) ||
            ((l->mix & MIX_SSM) && oxl_ssm_bind(m, &h->ssm, &l->ssm, il, false, err)) ||
            ((l->mix & MIX_CONV) && oxl_shortconv_bind(m, h->l_cache, &l->conv, il, err))) {
            return -1;
        }
        if (l->mix & MIX_MLP) {
            const int64_t E = m->hp.n_embd, F = l->n_ff;
            if (oxl_bind_tensor(m, &l->ffn_up, "blk.%d.ffn_up.weight", il, E, F, true, err) ||
                oxl_bind_tensor(m, &l->ffn_down, "blk.%d.ffn_down.weight", il, F, E, true, err) ||
                oxl_bind_tensor(m, &l->ffn_up_b, "blk.%d.ffn_up.bias", il, F, 0, false, err) ||
                oxl_bind_tensor(m, &l->ffn_down_b, "blk.%d.ffn_down.bias", il, E, 0, false, err)) {
                return -1;
            }
        } else if (h->fam != FAM_NEMOTRON && bind_ffn(m, h, l, il, err)) {
            return -1;
        }
        /* norms and biases are applied as f32 vectors */
        const oxl_tensor *f32[] = {&l->attn_norm, &l->ffn_norm, &l->q_norm,   &l->k_norm,     &l->bq,         &l->bk,
                                   &l->bv,        &l->bo,       &l->ffn_up_b, &l->ffn_gate_b, &l->ffn_down_b, &l->bqkv};
        for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++) {
            if (f32[i]->data && f32[i]->type != OXL_TYPE_F32) {
                return oxl_err_set(err, "%s: tensor '%s' must be f32 (norm weights and biases are)",
                                   oxl_gguf_path(m->gguf), f32[i]->name);
            }
        }
    }
    return 0;
}

static int hybrid_load(oxl_model *m, hybrid_family fam, oxl_error *err) {
    oxl_hparams *hp = &m->hp;
    const char *path = oxl_gguf_path(m->gguf), *arch = m->arch->name;
    hybrid *h = calloc(1, sizeof *h);
    if (!h) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    m->weights = h;
    h->fam = fam;
    if (fam == FAM_NEMOTRON) {
        if (nemotron_shape(m, h, err)) {
            return -1;
        }
    } else {
        /* llama_model_base's keys; the granite hybrid's RoPE type is NORM, the others' NeoX */
        oxl_decoder_opts o = {.norm = OXL_NORM_RMS};
        if (oxl_decoder_hparams(m, &o, fam == FAM_GRANITE ? OXL_ROPE_NORM : OXL_ROPE_NEOX, err)) {
            return -1;
        }
        h->norm_eps = o.norm_eps;
        h->rope = o.rope;
        h->kq_scale = o.kq_scale;
    }
    /* every layer binds at least a norm, an input and an output projection */
    if (hp->n_layer > oxl_gguf_n_tensors(m->gguf) / 3) {
        return oxl_err_set(err, "%s: %s.block_count = %d needs at least %lld tensors; the file has %lld", path, arch,
                           hp->n_layer, 3LL * hp->n_layer, (long long)oxl_gguf_n_tensors(m->gguf));
    }
    int32_t *kv = malloc(sizeof(int32_t) * 2 * (size_t)hp->n_layer);
    h->layers = calloc((size_t)hp->n_layer, sizeof *h->layers);
    if (!kv || !h->layers) {
        free(kv);
        return oxl_err_set(err, "%s: out of memory for %d layers", path, hp->n_layer);
    }
    int32_t *ff = kv + hp->n_layer;
    int r = layer_counts(m, kv, ff, err);
    if (r == 0 && fam == FAM_LFM2) {
        /* a sliding window, when the file sets one, applies to every attention layer */
        r = oxl_shortconv_hparams(m, &h->l_cache, err) ||
            oxl_hp_count(m, "attention.sliding_window", &h->n_swa, false, err);
    } else if (r == 0) {
        h->ssm.norm_eps = h->norm_eps;
        h->ssm.norm_optional = fam == FAM_FALCON;
        r = oxl_ssm_hparams(m, &h->ssm, OXL_SSM_MAMBA2, err);
        if (r == 0 && fam == FAM_GRANITE && h->ssm.d_inner != 2 * hp->n_embd) {
            r = oxl_err_set(err, "%s: %s.ssm.inner_size = %d must be 2 * embedding_length = %d (as llama.cpp requires)",
                            path, arch, h->ssm.d_inner, 2 * hp->n_embd);
        }
    }
    if (r == 0 && fam == FAM_GRANITE) {
        /* Granite's multipliers; RoPE only while rope.scaling.finetuned (default true) */
        float logit_scale = 0.0f, attention_scale = 0.0f;
        bool rope = true;
        h->moe.gating = OXL_MOE_SOFTMAX;
        h->moe.norm_w = true;
        h->moe.act = OXL_MOE_SILU;
        r = oxl_hp_float(m, "logit_scale", &logit_scale, false, err) ||
            oxl_hp_float(m, "residual_scale", &h->residual_scale, false, err) ||
            oxl_hp_float(m, "embedding_scale", &h->embd_scale, false, err) ||
            oxl_hp_float(m, "attention.scale", &attention_scale, false, err) ||
            oxl_hp_bool(m, "rope.scaling.finetuned", &rope, false, err) ||
            oxl_moe_hparams(m, &h->moe, hp->n_ff, OXL_MOE_KEY_FF_SHEXP, err);
        h->logit_scale = logit_scale != 0.0f ? 1.0f / logit_scale : 0.0f;
        h->kq_scale = attention_scale != 0.0f ? attention_scale : h->kq_scale;
        h->rope.mode = rope ? h->rope.mode : OXL_ROPE_NONE;
    } else if (r == 0 && fam == FAM_NEMOTRON) {
        int32_t n_expert = 0;
        r = oxl_hp_count(m, "expert_count", &n_expert, false, err);
        if (r == 0 && n_expert > 0) {
            r = oxl_err_set(err, "%s: %s.expert_count = %d: Nemotron-H experts are not supported", path, arch,
                            n_expert);
        }
    }
    r = r || bind_layers(m, h, kv, ff, err);
    free(kv);
    if (r) {
        return -1;
    }
    if (oxl_bind_tensor(m, &h->token_embd, "token_embd.weight", -1, hp->n_embd, hp->n_vocab, true, err) ||
        oxl_bind_tensor(m, &h->output_norm, fam == FAM_LFM2 ? "token_embd_norm.weight" : "output_norm.weight", -1,
                        hp->n_embd, 0, true, err) ||
        oxl_bind_tensor(m, &h->output, "output.weight", -1, hp->n_embd, hp->n_vocab, false, err)) {
        return -1;
    }
    if (h->output_norm.type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' must be f32 (norm weights and biases are)", path, h->output_norm.name);
    }
    if (!h->output.data) {
        h->output = h->token_embd;
    }
    return 0;
}

static int lfm2_load(oxl_model *m, oxl_error *err) { return hybrid_load(m, FAM_LFM2, err); }
static int granitehybrid_load(oxl_model *m, oxl_error *err) { return hybrid_load(m, FAM_GRANITE, err); }
static int nemotron_h_load(oxl_model *m, oxl_error *err) { return hybrid_load(m, FAM_NEMOTRON, err); }
static int falcon_h1_load(oxl_model *m, oxl_error *err) { return hybrid_load(m, FAM_FALCON, err); }

/* ---- forward ----------------------------------------------------------------------------- */

/* Activation buffers of one pass, carved from ctx->work in this order. */
typedef struct acts {
    float *x;       /* (n_embd, n) residual stream */
    float *xb;      /* (n_embd, n) normalised block input */
    float *qkv;     /* ((n_head + 2*n_head_kv)*head_dim, n) fused projection */
    float *q;       /* (n_head*head_dim, n) */
    float *k;       /* (n_head_kv*head_dim, n) */
    float *v;       /* (n_head_kv*head_dim, n) */
    float *att;     /* (n_head*head_dim, n) attention output before Wo */
    float *ao;      /* (n_embd, n) mixer output */
    float *so;      /* (n_embd, n) falcon-h1's Mamba-2 output beside attention */
    float *fo;      /* (n_embd, n) FFN output */
    float *gate;    /* (n_ff, n) */
    float *up;      /* (n_ff, n) */
    float *xout;    /* (n_embd, n) residual stream of the tokens whose logits are wanted */
    void *moe;      /* oxl_moe_work_size */
    void *ssm;      /* oxl_ssm_work_size */
    void *conv;     /* oxl_shortconv_work_size */
    float *scores;  /* (n_ctx + head_dim) per thread */
    float *scratch; /* activation columns converted for matmuls (raw bytes) */
} acts;

static size_t acts_layout(const oxl_model *m, int32_t n, int32_t n_ctx, int n_threads, void *base, acts *a) {
    const oxl_hparams *hp = &m->hp;
    const hybrid *h = m->weights;
    const size_t E = hp->n_embd, Q = (size_t)hp->n_head * hp->head_dim, KV = (size_t)hp->n_head_kv * hp->head_dim;
    const size_t F = hp->n_ff;
    size_t widest = E > F ? E : F;
    widest = widest > Q ? widest : Q;
    const size_t moe = oxl_moe_work_size(&h->moe, hp->n_embd, n) / sizeof(float);
    const size_t ssm = oxl_ssm_work_size(&h->ssm, n) / sizeof(float);
    const size_t conv = h->fam == FAM_LFM2 ? oxl_shortconv_work_size(m, n) / sizeof(float) : 0;
    const size_t sizes[] = {E * n,
                            E * n,
                            (Q + 2 * KV) * n,
                            Q * n,
                            KV * n,
                            KV * n,
                            Q * n,
                            E * n,
                            E * n,
                            E * n,
                            F * n,
                            F * n,
                            E * n,
                            moe,
                            ssm,
                            conv,
                            (size_t)(n_ctx + hp->head_dim) * n_threads,
                            widest * n + 64};
    float **slots[] = {&a->x,
                       &a->xb,
                       &a->qkv,
                       &a->q,
                       &a->k,
                       &a->v,
                       &a->att,
                       &a->ao,
                       &a->so,
                       &a->fo,
                       &a->gate,
                       &a->up,
                       &a->xout,
                       (float **)&a->moe,
                       (float **)&a->ssm,
                       (float **)&a->conv,
                       &a->scores,
                       &a->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

static size_t hybrid_work_size(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads) {
    acts a;
    return acts_layout(m, n_batch, n_ctx, n_threads, NULL, &a);
}

/* y = W x + b for n columns (y has W's ne1 rows). */
static void linear(oxl_pool *pool, const oxl_tensor *w, const oxl_tensor *b, const float *x, int32_t n, float *y,
                   void *scratch) {
    oxl_matmul(pool, w, x, n, y, w->ne[1], scratch);
    oxl_add_bias(y, b, w->ne[1], n);
}

/* The attention mixer on a into out: q, k, v, (lfm2) per-head q/k norms, RoPE, the cache, causal
 * attention, Wo (+ bo), as llama.cpp's build_qkv / build_attn. */
static void attention(oxl_ctx *ctx, const hybrid *h, const hybrid_layer *l, int il, const oxl_ubatch *ub,
                      const float *a, acts *b, float *out) {
    const oxl_hparams *hp = &ctx->model->hp;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t D = hp->head_dim, Q = hp->n_head * D, KV = hp->n_head_kv * D;
    if (l->wqkv.data) {
        /* views of one product, as build_qkv */
        linear(pool, &l->wqkv, &l->bqkv, a, n, b->qkv, b->scratch);
        for (int32_t j = 0; j < n; j++) {
            const float *src = b->qkv + (size_t)j * (Q + 2 * KV);
            memcpy(b->q + (size_t)j * Q, src, (size_t)Q * sizeof(float));
            memcpy(b->k + (size_t)j * KV, src + Q, (size_t)KV * sizeof(float));
            memcpy(b->v + (size_t)j * KV, src + Q + KV, (size_t)KV * sizeof(float));
        }
    } else {
        linear(pool, &l->wq, &l->bq, a, n, b->q, b->scratch);
        linear(pool, &l->wk, &l->bk, a, n, b->k, b->scratch);
        linear(pool, &l->wv, &l->bv, a, n, b->v, b->scratch);
    }
    if (l->q_norm.data) {
        oxl_norm(OXL_NORM_RMS, b->q, &l->q_norm, NULL, b->q, D, n * hp->n_head, h->norm_eps);
        oxl_norm(OXL_NORM_RMS, b->k, &l->k_norm, NULL, b->k, D, n * hp->n_head_kv, h->norm_eps);
    }
    if (h->rope.mode != OXL_ROPE_NONE) {
        for (int32_t j = 0; j < n; j++) {
            oxl_rope_apply(b->q + j * Q, hp->n_head, hp->head_dim, ub->pos[j], &h->rope);
            oxl_rope_apply(b->k + j * KV, hp->n_head_kv, hp->head_dim, ub->pos[j], &h->rope);
        }
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
    const oxl_attn_params ap = {.n_head = hp->n_head,
                                .n_head_kv = hp->n_head_kv,
                                .head_dim = hp->head_dim,
                                .scale = h->kq_scale,
                                .n_swa = h->n_swa};
    const oxl_kv_view kv = oxl_memory_kv_view(ctx->mem, il, ub);
    oxl_attention(pool, &kv, b->q, b->att, &ap, ctx->params.flash_attn != OXL_FLASH_ATTN_OFF, b->scores);
    if (rot_v) {
        oxl_fwht_rows(b->att, Q * n, rot_v);
    }
    linear(pool, &l->wo, &l->bo, b->att, n, out, b->scratch);
}

/* Nemotron-H's MLP mixer: down · relu(up · a + b)^2 + b (LLM_FFN_RELU_SQR, ggml_relu then ggml_sqr). */
static void mlp_relu2(oxl_ctx *ctx, const hybrid_layer *l, const float *a, int32_t n, acts *b, float *out) {
    const int64_t F = l->n_ff;
    linear(ctx->pool, &l->ffn_up, &l->ffn_up_b, a, n, b->up, b->scratch);
    for (int64_t i = 0; i < F * n; i++) {
        const float r = b->up[i] > 0.0f ? b->up[i] : 0.0f;
        b->up[i] = r * r;
    }
    linear(ctx->pool, &l->ffn_down, &l->ffn_down_b, b->up, n, out, b->scratch);
}

/* The FFN after the mixer: experts (+ shared expert) or the dense SwiGLU. */
static void ffn(oxl_ctx *ctx, const hybrid *h, const hybrid_layer *l, const float *x, int32_t n, acts *b) {
    if (l->moe.gate_inp.data) {
        oxl_moe_forward(ctx, &h->moe, &l->moe, x, n, b->fo, b->moe);
        return;
    }
    linear(ctx->pool, &l->ffn_gate, &l->ffn_gate_b, x, n, b->gate, b->scratch);
    linear(ctx->pool, &l->ffn_up, &l->ffn_up_b, x, n, b->up, b->scratch);
    oxl_swiglu(b->gate, b->up, l->n_ff, n);
    linear(ctx->pool, &l->ffn_down, &l->ffn_down_b, b->gate, n, b->fo, b->scratch);
}

static void hybrid_forward(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits) {
    const oxl_model *m = ctx->model;
    const oxl_hparams *hp = &m->hp;
    const hybrid *h = m->weights;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t E = hp->n_embd;
    acts b;
    acts_layout(m, n, ctx->n_ctx, oxl_pool_size(pool), ctx->work, &b);

    for (int32_t j = 0; j < n; j++) {
        oxl_ubatch_input_row(ub, &h->token_embd, j, E, b.x + j * E);
    }
    if (h->embd_scale != 0.0f) {
        oxl_scale(b.x, E * n, h->embd_scale);
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const hybrid_layer *l = &h->layers[il];
        oxl_norm(OXL_NORM_RMS, b.x, &l->attn_norm, NULL, b.xb, E, n, h->norm_eps);
        if (l->mix & MIX_ATTN) {
            attention(ctx, h, l, il, ub, b.xb, &b, b.ao);
        }
        if (l->mix & MIX_SSM) {
            float *dst = (l->mix & MIX_ATTN) ? b.so : b.ao;
            oxl_ssm_forward(ctx, &h->ssm, &l->ssm, il, ub, b.xb, dst, b.ssm);
            if (dst == b.so) {
                oxl_add(b.ao, b.so, E * n); /* falcon-h1: attn_out + ssm_out */
            }
        }
        if (l->mix & MIX_CONV) {
            oxl_shortconv_forward(ctx, h->l_cache, &l->conv, il, ub, b.xb, b.ao, b.conv);
        }
        if (l->mix & MIX_MLP) {
            mlp_relu2(ctx, l, b.xb, n, &b, b.ao);
        }
        if (h->residual_scale != 0.0f) {
            oxl_scale(b.ao, E * n, h->residual_scale);
        }
        oxl_add(b.x, b.ao, E * n);
        if (!l->ffn_norm.data) {
            continue;
        }
        oxl_norm(OXL_NORM_RMS, b.x, &l->ffn_norm, NULL, b.xb, E, n, h->norm_eps);
        ffn(ctx, h, l, b.xb, n, &b);
        if (h->residual_scale != 0.0f) {
            oxl_scale(b.fo, E * n, h->residual_scale);
        }
        oxl_add(b.x, b.fo, E * n);
    }

    /* the final norm and the output head (of the tokens whose logits are wanted) */
    oxl_rms_output_head(pool, ub, b.x, E, n, &h->output_norm, h->norm_eps, &h->output, hp->n_vocab, b.xb, b.xout,
                        logits, b.scratch);
    if (h->logit_scale != 0.0f) {
        oxl_scale(logits, (int64_t)hp->n_vocab * ub->n_out, h->logit_scale);
    }
}

/* ---- repacking --------------------------------------------------------------------------- */

/* Repacks one tensor's rows into the CPU's interleaved layout when it has one; evicts the plain rows
 * when asked (never token_embd's, which the look-ups read). */
static void repack_one(oxl_model *m, oxl_tensor *t, bool evict) {
    const size_t bytes = t->data ? oxl_tensor_repack_bytes(t) : 0;
    void *buf = bytes ? oxl_tensor_repack_alloc(bytes) : NULL;
    if (!buf) {
        return; /* no layout, or short of memory: the plain rows serve */
    }
    oxl_tensor_repack_rows(t, buf, 0, t->ne[1]);
    if (!oxl_model_own(m, buf, bytes)) {
        oxl_tensor_repack_free(buf, bytes);
        return;
    }
    t->rp = buf;
    if (evict) {
        oxl_tensor_evict(t);
        (void)oxl_model_note_evicted(m, t->data); /* short of memory: --mlock locks it too */
    }
}

/* The attention, dense FFN and MLP projections and the output head, as the decoder repacks its
 * layers (the Mamba-2, short-conv and expert matrices keep their plain rows). */
static void hybrid_repack(oxl_model *m, bool evict) {
    hybrid *h = m->weights;
    for (int il = 0; il < m->hp.n_layer; il++) {
        hybrid_layer *l = &h->layers[il];
        oxl_tensor *ts[] = {&l->wqkv, &l->wq, &l->wk, &l->wv, &l->wo, &l->ffn_gate, &l->ffn_up, &l->ffn_down};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
            repack_one(m, ts[i], evict);
        }
    }
    repack_one(m, &h->output, evict && h->output.data != h->token_embd.data);
}

/* ---- description ------------------------------------------------------------------------- */

static void hybrid_describe(const oxl_model *m, FILE *out) {
    const oxl_hparams *hp = &m->hp;
    const hybrid *h = m->weights;
    fprintf(out, "  %-16s n_embd %d, n_layer %d, n_ff %d, n_vocab %d, n_ctx_train %d\n", "shape", hp->n_embd,
            hp->n_layer, hp->n_ff, hp->n_vocab, hp->n_ctx_train);
    fprintf(out, "  %-16s %s\n", "hybrid",
            h->fam == FAM_LFM2       ? "gated short conv or attention per layer, then a SwiGLU FFN"
            : h->fam == FAM_GRANITE  ? "Mamba-2 or attention per layer, then the FFN"
            : h->fam == FAM_NEMOTRON ? "one mixer per block: Mamba-2, attention or MLP (relu^2), x + mixer(rms(x))"
                                     : "attention + Mamba-2 on the same norm (summed), then a SwiGLU FFN");
    fprintf(out, "  %-16s", "layer mixers");
    for (int il = 0; il < hp->n_layer; il++) {
        const unsigned mix = h->layers[il].mix;
        fprintf(out, " %s",
                mix == (MIX_ATTN | MIX_SSM) ? "attention+mamba2"
                : mix == MIX_ATTN           ? "attention"
                : mix == MIX_SSM            ? "mamba2"
                : mix == MIX_CONV           ? "shortconv"
                                            : "mlp");
    }
    fputc('\n', out);
    fprintf(out, "  %-16s n_head %d, n_head_kv %d, head_dim %d, kq_scale %g%s\n", "attention", hp->n_head,
            hp->n_head_kv, hp->head_dim, h->kq_scale, h->fam == FAM_LFM2 ? ", per-head q/k rms norms" : "");
    if (h->n_swa > 0) {
        fprintf(out, "  %-16s n_swa %d on every attention layer\n", "sliding window", h->n_swa);
    }
    if (h->rope.mode == OXL_ROPE_NONE) {
        fprintf(out, "  %-16s none\n", "rope");
    } else {
        fprintf(out, "  %-16s %s, n_rot %d, freq_base %g, freq_scale %g\n", "rope",
                h->rope.mode == OXL_ROPE_NEOX ? "neox" : "normal", h->rope.n_rot, h->rope.freq_base,
                h->rope.freq_scale);
    }
    fprintf(out, "  %-16s rms, eps %g\n", "norm", h->norm_eps);
    if (h->ssm.kind != OXL_SSM_NONE) {
        oxl_ssm_describe(&h->ssm, out);
    }
    if (h->fam == FAM_LFM2) {
        fprintf(out, "  %-16s l_cache %d (state of %d columns): y = C * conv(B * x)\n", "short conv", h->l_cache,
                h->l_cache - 1);
    }
    if (h->moe.n_expert > 0) {
        oxl_moe_describe(&h->moe, out);
    }
    if (h->embd_scale != 0.0f || h->residual_scale != 0.0f || h->logit_scale != 0.0f) {
        fprintf(out, "  %-16s embedding %g, residual %g, logits %g\n", "multipliers", h->embd_scale, h->residual_scale,
                h->logit_scale);
    }
    fprintf(out, "  %-16s %s; final norm %s\n", "output",
            h->output.data == h->token_embd.data ? "tied to token_embd" : "output.weight", h->output_norm.name);
}

#define HYBRID_ARCH(arch_name, load_fn)                                                                                \
    {                                                                                                                  \
        .name = (arch_name), .load = (load_fn), .free_weights = hybrid_free, .work_size = hybrid_work_size,            \
        .forward = hybrid_forward, .describe = hybrid_describe, .repack = hybrid_repack, .embd_input = true            \
    }

const oxl_arch oxl_arch_lfm2 = HYBRID_ARCH("lfm2", lfm2_load);
const oxl_arch oxl_arch_granite_h = HYBRID_ARCH("granitehybrid", granitehybrid_load);
const oxl_arch oxl_arch_nemotron_h = HYBRID_ARCH("nemotron_h", nemotron_h_load);
const oxl_arch oxl_arch_falcon_h1 = HYBRID_ARCH("falcon-h1", falcon_h1_load);
