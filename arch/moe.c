/* The mixture-of-experts block (moe.h): keys, tensors, routing and per-expert batched dispatch. */
#include "moe.h"

#include "errors.h"

#include <math.h>
#include <string.h>

/* ---- hyper-parameters -------------------------------------------------------------------- */

int oxl_moe_hparams(oxl_model *m, oxl_moe_opts *o, int32_t n_ff_default, unsigned keys, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    const char *arch = m->arch->name;
    int32_t n_shared = 0, gating = o->gating ? (int32_t)o->gating : OXL_MOE_SOFTMAX;
    o->n_ff_exp = n_ff_default;
    /* llama_model_base::load_hparams reads these for every architecture */
    if (oxl_hp_count(m, "expert_count", &o->n_expert, false, err) ||
        oxl_hp_count(m, "expert_used_count", &o->n_expert_used, o->n_expert > 0, err) ||
        oxl_hp_count(m, "expert_group_count", &o->n_group, false, err) ||
        oxl_hp_count(m, "expert_group_used_count", &o->n_group_used, false, err)) {
        return -1;
    }
    /* the architecture's own loader reads the rest */
    if (((keys & OXL_MOE_KEY_FF_EXP) &&
         oxl_hp_count(m, "expert_feed_forward_length", &o->n_ff_exp, (keys & OXL_MOE_KEY_DEEPSEEK) != 0, err)) ||
        ((keys & OXL_MOE_KEY_FF_SHEXP) &&
         oxl_hp_count(m, "expert_shared_feed_forward_length", &o->n_ff_shexp, false, err)) ||
        ((keys & OXL_MOE_KEY_DEEPSEEK) && (oxl_hp_count(m, "expert_shared_count", &n_shared, true, err) ||
                                           oxl_hp_count(m, "leading_dense_block_count", &o->n_dense_lead, false, err) ||
                                           oxl_hp_count(m, "expert_gating_func", &gating, false, err) ||
                                           oxl_hp_float(m, "expert_weights_scale", &o->w_scale, false, err) ||
                                           oxl_hp_bool(m, "expert_weights_norm", &o->norm_w, false, err)))) {
        return -1;
    }
    if (o->n_expert == 0) {
        return 0;
    }
    if (o->n_expert > 512 || o->n_expert_used < 1 || o->n_expert_used > o->n_expert) {
        return oxl_err_set(err, "%s: %s.expert_count = %d / expert_used_count = %d: need 1 <= used <= count <= 512",
                           path, arch, o->n_expert, o->n_expert_used);
    }
    if (o->n_group > 1 && (o->n_expert % o->n_group != 0 || o->n_expert / o->n_group < 2 || o->n_group_used < 1 ||
                           o->n_group_used > o->n_group)) {
        return oxl_err_set(err,
                           "%s: %s.expert_group_count = %d / expert_group_used_count = %d do not split %d experts "
                           "into groups of at least 2",
                           path, arch, o->n_group, o->n_group_used, o->n_expert);
    }
    gating = gating == 0 ? OXL_MOE_SOFTMAX : gating; /* NONE: llama.cpp's default */
    if (gating < OXL_MOE_SOFTMAX || gating > OXL_MOE_SOFTMAX_WEIGHT) {
        return oxl_err_set(err,
                           "%s: %s.expert_gating_func = %d is not 1 (softmax), 2 (sigmoid) or 3 (softmax of "
                           "the selected)",
                           path, arch, gating);
    }
    o->gating = (oxl_moe_gating)gating;
    if (n_shared > 0 && o->n_ff_shexp == 0) {
        o->n_ff_shexp = n_shared * o->n_ff_exp; /* DeepSeek: the shared experts side by side */
    }
    return 0;
}

/* ---- tensors ----------------------------------------------------------------------------- */

/* Whether layer il has the tensor named by fmt. */
static bool has_tensor(const oxl_model *m, const char *fmt, int il) {
    char full[128];
    snprintf(full, sizeof full, fmt, il);
    return oxl_gguf_find_tensor(m->gguf, full) != NULL;
}

int oxl_moe_bind(const oxl_model *m, const oxl_moe_opts *o, oxl_moe_layer *l, int il, unsigned parts, oxl_error *err) {
    const int64_t E = m->hp.n_embd, F = o->n_ff_exp, X = o->n_expert, S = o->n_ff_shexp;
    const bool biased = parts & OXL_MOE_HAS_ROUTER_BIAS;
    if ((parts & OXL_MOE_OPTIONAL) && !has_tensor(m, "blk.%d.ffn_gate_inp.weight", il)) {
        return 0;
    }
    if (oxl_bind_tensor(m, &l->gate_inp, "blk.%d.ffn_gate_inp.weight", il, E, X, true, err) ||
        oxl_bind_tensor_3d(m, &l->gate_exps, "blk.%d.ffn_gate_exps.weight", il, E, F, X, err) ||
        oxl_bind_tensor_3d(m, &l->up_exps, "blk.%d.ffn_up_exps.weight", il, E, F, X, err) ||
        oxl_bind_tensor_3d(m, &l->down_exps, "blk.%d.ffn_down_exps.weight", il, F, E, X, err) ||
        oxl_bind_tensor(m, &l->gate_inp_b, "blk.%d.ffn_gate_inp.bias", il, X, 0, biased, err) ||
        oxl_bind_tensor(m, &l->gate_exps_b, "blk.%d.ffn_gate_exps.bias", il, F, X, biased, err) ||
        oxl_bind_tensor(m, &l->up_exps_b, "blk.%d.ffn_up_exps.bias", il, F, X, biased, err) ||
        oxl_bind_tensor(m, &l->down_exps_b, "blk.%d.ffn_down_exps.bias", il, E, X, biased, err)) {
        return -1;
    }
    if ((parts & OXL_MOE_HAS_PROBS_B) &&
        oxl_bind_tensor(m, &l->exp_probs_b, "blk.%d.exp_probs_b.bias", il, X, 0, false, err)) {
        return -1;
    }
    if ((parts & OXL_MOE_HAS_SHEXP) &&
        (oxl_bind_tensor(m, &l->gate_shexp, "blk.%d.ffn_gate_shexp.weight", il, E, S, true, err) ||
         oxl_bind_tensor(m, &l->up_shexp, "blk.%d.ffn_up_shexp.weight", il, E, S, true, err) ||
         oxl_bind_tensor(m, &l->down_shexp, "blk.%d.ffn_down_shexp.weight", il, S, E, true, err))) {
        return -1;
    }
    if ((parts & OXL_MOE_HAS_SHEXP_GATE) &&
        oxl_bind_tensor(m, &l->gate_inp_shexp, "blk.%d.ffn_gate_inp_shexp.weight", il, E, 0, true, err)) {
        return -1;
    }
    const oxl_tensor *f32[] = {&l->gate_inp_b, &l->exp_probs_b, &l->gate_exps_b,
                               &l->up_exps_b,  &l->down_exps_b, &l->gate_inp_shexp};
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++) {
        if (f32[i]->data && f32[i]->type != OXL_TYPE_F32) {
            return oxl_err_set(err, "%s: tensor '%s' must be f32", oxl_gguf_path(m->gguf), f32[i]->name);
        }
    }
    return 0;
}

/* ---- forward ----------------------------------------------------------------------------- */

/* Work buffers of one call, carved in this order. */
typedef struct moe_work {
    float *probs;   /* (n_expert, n) gating output */
    float *sel;     /* (n_expert) selection scores of one token */
    int32_t *topk;  /* (k, n) selected experts, best first */
    float *w;       /* (k, n) their weights */
    int32_t *rows;  /* (k*n) per expert, the (token*k + slot) entries routed to it, expert by expert */
    int32_t *count; /* (n_expert + 1) start of each expert's entries in rows */
    float *xg;      /* (n_embd, n) the gathered inputs of one expert */
    float *g;       /* (n_ff, n) gate (n_ff = the wider of n_ff_exp and n_ff_shexp) */
    float *u;       /* (n_ff, n) up */
    float *d;       /* (n_embd, n) down */
    float *slots;   /* (n_embd, k, n) each slot's weighted expert output */
    float *scratch; /* matmul conversions */
} moe_work;

static size_t moe_layout(const oxl_moe_opts *o, int64_t E, int32_t n, void *base, moe_work *w) {
    const size_t X = (size_t)o->n_expert, K = (size_t)o->n_expert_used;
    const size_t F = (size_t)(o->n_ff_exp > o->n_ff_shexp ? o->n_ff_exp : o->n_ff_shexp);
    const size_t widest = (size_t)E > F ? (size_t)E : F;
    const size_t sizes[] = {
        X * n,          X, K * n, K * n, K * n, X + 1, (size_t)E * n, F * n, F * n, (size_t)E * n, (size_t)E * K * n,
        widest * n + 64};
    void **slots[] = {(void **)&w->probs, (void **)&w->sel,   (void **)&w->topk,  (void **)&w->w,
                      (void **)&w->rows,  (void **)&w->count, (void **)&w->xg,    (void **)&w->g,
                      (void **)&w->u,     (void **)&w->d,     (void **)&w->slots, (void **)&w->scratch};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (base) {
            *slots[i] = (char *)base + off;
        }
        off += (sizes[i] * 4 + 63) & ~(size_t)63;
    }
    return off;
}

size_t oxl_moe_work_size(const oxl_moe_opts *o, int64_t n_embd, int32_t n) {
    moe_work w;
    return o->n_expert > 0 ? moe_layout(o, n_embd, n, NULL, &w) : 0;
}

/* ggml_soft_max over n values: exp(x - max) summed in double, then scaled by the inverse sum. */
static void softmax(float *x, int n) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++) {
        max = x[i] > max ? x[i] : max;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) {
        x[i] *= inv;
    }
}

/* The indices of the k largest of v[0..n) (ggml_argsort_top_k: descending), into idx. */
static void top_k(const float *v, int n, int k, int32_t *idx) {
    for (int s = 0; s < k; s++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            bool taken = false;
            for (int t = 0; t < s; t++) {
                taken |= idx[t] == i;
            }
            if (!taken && (best < 0 || v[i] > v[best])) {
                best = i;
            }
        }
        idx[s] = best;
    }
}

/* Routing of token j: selected experts and their weights. */
static void route(const oxl_moe_opts *o, const oxl_moe_layer *l, float *probs_all, int32_t *topk_all, float *w_all,
                  float *sel, int32_t j) {
    const int X = o->n_expert, K = o->n_expert_used;
    float *probs = probs_all + (size_t)j * X;
    if (l->gate_inp_b.data) {
        oxl_add(probs, l->gate_inp_b.data, X);
    }
    if (o->select_logits) {
        memcpy(sel, probs, (size_t)X * sizeof(float));
    }
    if (o->gating == OXL_MOE_SOFTMAX) {
        softmax(probs, X);
    } else if (o->gating == OXL_MOE_SIGMOID) {
        for (int i = 0; i < X; i++) {
            probs[i] = 1.0f / (1.0f + expf(-probs[i]));
        }
    }
    if (!o->select_logits) {
        memcpy(sel, probs, (size_t)X * sizeof(float));
    }
    if (l->exp_probs_b.data) {
        oxl_add(sel, l->exp_probs_b.data, X);
    }
    if (o->n_group > 1) {
        /* keep the n_group_used groups whose two best scores sum highest; mask the rest */
        const int per = X / o->n_group;
        float score[512];
        int32_t best[512];
        for (int g = 0; g < o->n_group; g++) {
            int32_t two[2];
            top_k(sel + g * per, per, 2, two);
            score[g] = sel[g * per + two[0]] + sel[g * per + two[1]];
        }
        top_k(score, o->n_group, o->n_group_used, best);
        for (int g = 0; g < o->n_group; g++) {
            bool kept = false;
            for (int t = 0; t < o->n_group_used; t++) {
                kept |= best[t] == g;
            }
            for (int i = 0; !kept && i < per; i++) {
                sel[g * per + i] = -INFINITY;
            }
        }
    }
    int32_t *topk = topk_all + (size_t)j * K;
    float *wt = w_all + (size_t)j * K;
    top_k(sel, X, K, topk);
    for (int s = 0; s < K; s++) {
        wt[s] = probs[topk[s]];
    }
    if (o->gating == OXL_MOE_SOFTMAX_WEIGHT) {
        softmax(wt, K);
    }
    if (o->norm_w) {
        double sum = 0.0; /* ggml_sum_rows */
        for (int s = 0; s < K; s++) {
            sum += (double)wt[s];
        }
        const float div = fmaxf((float)sum, 6.103515625e-5f);
        for (int s = 0; s < K; s++) {
            wt[s] /= div;
        }
    }
    if (o->w_scale != 0.0f && o->w_scale != 1.0f) {
        oxl_scale(wt, K, o->w_scale);
    }
}

void oxl_moe_route(const oxl_moe_opts *o, const oxl_moe_layer *l, float *probs, int32_t n, int32_t *topk, float *w,
                   float *sel) {
    for (int32_t j = 0; j < n; j++) {
        route(o, l, probs, topk, w, sel, j);
    }
}

/* Row e of a (d, n_expert) bias as a 1-D tensor (unbound stays unbound). */
static oxl_tensor bias_row(const oxl_tensor *b, int e) {
    oxl_tensor v = *b;
    if (b->data) {
        v.data = (const float *)b->data + (size_t)e * b->ne[0];
        v.ne[1] = 1;
    }
    return v;
}

/* w->g = act(w->g, w->u) over n rows of the experts' n_ff_exp values. */
static void expert_act(const oxl_moe_opts *o, moe_work *w, int64_t n) {
    float *g = w->g;
    const float *u = w->u;
    switch (o->act) {
    case OXL_MOE_SILU: oxl_swiglu(g, u, o->n_ff_exp, n / o->n_ff_exp); break;
    case OXL_MOE_GELU: oxl_geglu(g, u, n); break;
    case OXL_MOE_SWIGLU_OAI:
        for (int64_t i = 0; i < n; i++) {
            const float x = fminf(g[i], 7.0f);
            const float y = fminf(fmaxf(u[i], -7.0f), 7.0f);
            g[i] = x / (1.0f + expf(1.702f * -x)) * (y + 1.0f);
        }
        break;
    }
}

void oxl_moe_forward(oxl_ctx *ctx, const oxl_moe_opts *o, const oxl_moe_layer *l, const float *x, int32_t n, float *out,
                     void *work) {
    oxl_pool *pool = ctx->pool;
    const int64_t E = ctx->model->hp.n_embd, F = o->n_ff_exp;
    const int X = o->n_expert, K = o->n_expert_used;
    moe_work w;
    moe_layout(o, E, n, work, &w);

    /* router logits, then each token's experts and weights */
    oxl_matmul(pool, &l->gate_inp, x, n, w.probs, X, w.scratch);
    oxl_moe_route(o, l, w.probs, n, w.topk, w.w, w.sel);

    /* bucket the (token, slot) entries by expert, keeping token order within an expert */
    memset(w.count, 0, (size_t)(X + 1) * sizeof(int32_t));
    for (int64_t i = 0; i < (int64_t)n * K; i++) {
        w.count[w.topk[i] + 1]++;
    }
    for (int e = 0; e < X; e++) {
        w.count[e + 1] += w.count[e];
    }
    for (int64_t i = 0; i < (int64_t)n * K; i++) {
        w.rows[w.count[w.topk[i]]++] = (int32_t)i;
    }
    for (int e = X; e > 0; e--) {
        w.count[e] = w.count[e - 1];
    }
    w.count[0] = 0;

    /* each expert once, on the block of its tokens */
    for (int e = 0; e < X; e++) {
        const int32_t *rows = w.rows + w.count[e];
        const int32_t m = w.count[e + 1] - w.count[e];
        if (m == 0) {
            continue;
        }
        for (int32_t r = 0; r < m; r++) {
            memcpy(w.xg + (size_t)r * E, x + (size_t)(rows[r] / K) * E, (size_t)E * sizeof(float));
            if (o->weight_before_ffn) {
                oxl_scale(w.xg + (size_t)r * E, E, w.w[rows[r]]);
            }
        }
        const oxl_tensor gate = oxl_tensor_slice(&l->gate_exps, e), up = oxl_tensor_slice(&l->up_exps, e);
        const oxl_tensor down = oxl_tensor_slice(&l->down_exps, e);
        const oxl_tensor gb = bias_row(&l->gate_exps_b, e), ub = bias_row(&l->up_exps_b, e);
        const oxl_tensor db = bias_row(&l->down_exps_b, e);
        oxl_matmul(pool, &up, w.xg, m, w.u, F, w.scratch);
        oxl_add_bias(w.u, &ub, F, m);
        oxl_matmul(pool, &gate, w.xg, m, w.g, F, w.scratch);
        oxl_add_bias(w.g, &gb, F, m);
        expert_act(o, &w, F * m);
        oxl_matmul(pool, &down, w.g, m, w.d, E, w.scratch);
        oxl_add_bias(w.d, &db, E, m);
        for (int32_t r = 0; r < m; r++) {
            const float wt = o->weight_before_ffn ? 1.0f : w.w[rows[r]];
            float *dst = w.slots + (size_t)rows[r] * E;
            const float *src = w.d + (size_t)r * E;
            for (int64_t i = 0; i < E; i++) {
                dst[i] = src[i] * wt;
            }
        }
        ctx->moe_stats.n_dispatch++;
        ctx->moe_stats.n_matmul += 3;
        ctx->moe_stats.n_tokens += m;
        if (ctx->moe_stats.min_tokens == 0 || m < ctx->moe_stats.min_tokens) {
            ctx->moe_stats.min_tokens = m;
        }
    }

    /* sum the slots in order: slot 0 + slot 1 + ... (ggml_add chain) */
    for (int32_t j = 0; j < n; j++) {
        float *oj = out + (size_t)j * E;
        memcpy(oj, w.slots + (size_t)j * K * E, (size_t)E * sizeof(float));
        for (int s = 1; s < K; s++) {
            oxl_add(oj, w.slots + ((size_t)j * K + s) * E, E);
        }
    }

    /* shared experts: SwiGLU FFN on every token, gated by sigmoid(x · gate_inp_shexp) when present */
    if (l->up_shexp.data) {
        const int64_t S = o->n_ff_shexp;
        oxl_matmul(pool, &l->up_shexp, x, n, w.u, S, w.scratch);
        oxl_matmul(pool, &l->gate_shexp, x, n, w.g, S, w.scratch);
        oxl_swiglu(w.g, w.u, S, n);
        oxl_matmul(pool, &l->down_shexp, w.g, n, w.d, E, w.scratch);
        if (l->gate_inp_shexp.data) {
            /* ggml: silu(t) / t with t the (1, n) product of the gate vector and x */
            const oxl_tensor gv = {.name = l->gate_inp_shexp.name,
                                   .type = OXL_TYPE_F32,
                                   .ne = {E, 1},
                                   .row_size = (size_t)E * sizeof(float),
                                   .data = l->gate_inp_shexp.data};
            oxl_matmul(pool, &gv, x, n, w.probs, 1, w.scratch);
            for (int32_t j = 0; j < n; j++) {
                const float t = w.probs[j];
                oxl_scale(w.d + (size_t)j * E, E, t / (1.0f + expf(-t)) / t);
            }
        }
        oxl_add(out, w.d, E * n);
    }
}

void oxl_moe_describe(const oxl_moe_opts *o, FILE *out) {
    static const char *const gating[] = {"", "softmax", "sigmoid", "softmax over the selected"};
    static const char *const act[] = {"swiglu", "geglu", "swiglu-oai (alpha 1.702, clamp 7)"};
    fprintf(out, "  %-16s %d experts, top-%d, n_ff_exp %d, %s experts\n", "experts", o->n_expert, o->n_expert_used,
            o->n_ff_exp, act[o->act]);
    fprintf(out, "  %-16s %s%s", "routing", gating[o->gating], o->norm_w ? ", top-k weights renormalised" : "");
    if (o->w_scale != 0.0f && o->w_scale != 1.0f) {
        fprintf(out, ", weights x %g", o->w_scale);
    }
    if (o->n_group > 1) {
        fprintf(out, ", %d groups (best %d kept)", o->n_group, o->n_group_used);
    }
    if (o->select_logits) {
        fputs(", chosen on the raw logits", out);
    }
    if (o->weight_before_ffn) {
        fputs(", weights scale the expert input", out);
    }
    fputc('\n', out);
    if (o->n_ff_shexp > 0) {
        fprintf(out, "  %-16s n_ff %d (swiglu, on every token)\n", "shared experts", o->n_ff_shexp);
    }
    if (o->n_dense_lead > 0) {
        fprintf(out, "  %-16s %d (dense FFN)\n", "leading layers", o->n_dense_lead);
    }
}
