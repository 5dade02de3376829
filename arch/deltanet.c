/* The gated delta net (deltanet.h): keys, tensors, causal conv and the delta rule over recurrent
 * states. */
#include "deltanet.h"

#include "errors.h"

#include <math.h>
#include <string.h>

/* ---- hyper-parameters and tensors ------------------------------------------------------- */

static int64_t conv_dim(const oxl_gdn_opts *o) { return 2 * (int64_t)o->n_k * o->d_head + o->d_inner; }

int oxl_gdn_hparams(oxl_model *m, oxl_gdn_opts *o, bool grouped, bool fused_ba, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf), *arch = m->arch->name;
    o->grouped = grouped;
    o->fused_ba = fused_ba;
    if (oxl_hp_int(m, "ssm.conv_kernel", &o->d_conv, true, err) ||
        oxl_hp_int(m, "ssm.inner_size", &o->d_inner, true, err) ||
        oxl_hp_int(m, "ssm.state_size", &o->d_head, true, err) ||
        oxl_hp_int(m, "ssm.group_count", &o->n_k, true, err) ||
        oxl_hp_int(m, "ssm.time_step_rank", &o->n_v, true, err)) {
        return -1;
    }
    if (o->d_conv < 2 || o->d_conv > 64 || o->d_head > 1024 || o->n_v > 4096 || o->n_k > o->n_v ||
        o->n_v % o->n_k != 0) {
        return oxl_err_set(err,
                           "%s: %s.ssm sizes out of range: conv_kernel %d (2 .. 64), state_size %d (<= 1024), "
                           "time_step_rank %d (value heads, <= 4096) must be a multiple of group_count %d (key heads)",
                           path, arch, o->d_conv, o->d_head, o->n_v, o->n_k);
    }
    if ((int64_t)o->n_v * o->d_head != o->d_inner) {
        return oxl_err_set(err,
                           "%s: %s.ssm.inner_size = %d must be time_step_rank * state_size = %d * %d (value heads "
                           "of the key head size)",
                           path, arch, o->d_inner, o->n_v, o->d_head);
    }
    const int64_t n_r = (o->d_conv - 1) * conv_dim(o), n_s = (int64_t)o->d_head * o->d_inner;
    if (n_r > (1 << 28) || n_s > (1 << 28)) {
        return oxl_err_set(err, "%s: %s.ssm state of %lld + %lld floats per sequence and layer is too large", path,
                           arch, (long long)n_r, (long long)n_s);
    }
    m->hp.n_embd_r = (int32_t)n_r;
    m->hp.n_embd_s = (int32_t)n_s;
    return 0;
}

int oxl_gdn_bind(const oxl_model *m, const oxl_gdn_opts *o, oxl_gdn_layer *l, int il, oxl_error *err) {
    const int64_t E = m->hp.n_embd, V = o->n_v, I = o->d_inner;
    if (oxl_bind_tensor(m, &l->qkv, "blk.%d.attn_qkv.weight", il, E, conv_dim(o), true, err) ||
        oxl_bind_tensor(m, &l->gate, "blk.%d.attn_gate.weight", il, E, I, true, err) ||
        oxl_bind_tensor(m, &l->conv1d, "blk.%d.ssm_conv1d.weight", il, o->d_conv, conv_dim(o), true, err) ||
        oxl_bind_tensor(m, &l->dt_b, "blk.%d.ssm_dt.bias", il, V, 0, true, err) ||
        oxl_bind_tensor(m, &l->a, "blk.%d.ssm_a", il, V, 0, true, err) ||
        oxl_bind_tensor(m, &l->norm, "blk.%d.ssm_norm.weight", il, o->d_head, 0, true, err) ||
        oxl_bind_tensor(m, &l->out, "blk.%d.ssm_out.weight", il, I, E, true, err)) {
        return -1;
    }
    if (o->fused_ba ? oxl_bind_tensor(m, &l->ba, "blk.%d.ssm_ba.weight", il, E, 2 * V, true, err)
                    : oxl_bind_tensor(m, &l->beta, "blk.%d.ssm_beta.weight", il, E, V, true, err) ||
                          oxl_bind_tensor(m, &l->alpha, "blk.%d.ssm_alpha.weight", il, E, V, true, err)) {
        return -1;
    }
    /* the conv and the gates read these directly as floats */
    const oxl_tensor *f32[] = {&l->conv1d, &l->dt_b, &l->a, &l->norm};
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++) {
        if (f32[i]->type != OXL_TYPE_F32) {
            return oxl_err_set(err, "%s: tensor '%s' must be f32 (as ggml's ssm_conv and the gate ops require)",
                               oxl_gguf_path(m->gguf), f32[i]->name);
        }
    }
    return 0;
}

/* ---- forward ----------------------------------------------------------------------------- */

typedef struct gdn_work {
    float *qkv;     /* (conv_dim, n) W_qkv · a, then the conv output */
    float *xc;      /* (conv_dim, n) conv output, q and k l2-normed */
    float *z;       /* (n_v d_v, n) W_gate · a */
    float *ba;      /* (2 n_v, n) beta and alpha projections */
    float *beta;    /* (n_v, n) sigmoid(beta) */
    float *g;       /* (n_v, n) log decay */
    float *y;       /* (n_v d_v, n) delta-rule output */
    float *scratch; /* matmul conversions */
} gdn_work;

static size_t gdn_layout(const oxl_gdn_opts *o, int64_t E, int32_t n, void *base, gdn_work *w) {
    const size_t C = (size_t)conv_dim(o), I = (size_t)o->d_inner, V = (size_t)o->n_v;
    size_t widest = C > (size_t)E ? C : (size_t)E;
    const size_t sizes[] = {C * n, C * n, I * n, 2 * V * n, V * n, V * n, I * n, widest * n + 64};
    float **slots[] = {&w->qkv, &w->xc, &w->z, &w->ba, &w->beta, &w->g, &w->y, &w->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

size_t oxl_gdn_work_size(const oxl_gdn_opts *o, int64_t n_embd, int32_t n) {
    gdn_work w;
    return gdn_layout(o, n_embd, n, NULL, &w);
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* ggml's op_softplus */
static float softplus(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

typedef struct gdn_task {
    oxl_ctx *ctx;
    const oxl_gdn_opts *o;
    const oxl_gdn_layer *l;
    int il;
    const oxl_ubatch *ub;
    gdn_work *w;
} gdn_task;

/* Causal depthwise conv of each channel over its sequence's last d_conv - 1 inputs and the token's,
 * summed in float in window order (ggml_ssm_conv, no bias), then SiLU; the window then slides.
 * Channels are split over threads; each thread walks the pass's tokens in order. */
static void conv_run(void *arg, int ith, int nth) {
    const gdn_task *t = arg;
    const int64_t C = conv_dim(t->o), K = t->o->d_conv;
    const float *wc = t->l->conv1d.data;
    int64_t lo, hi;
    oxl_split_range(C, ith, nth, &lo, &hi);
    for (int32_t j = 0; j < t->ub->n; j++) {
        float *state = oxl_memory_conv_state(t->ctx->mem, t->il, t->ub->seq[j]);
        const float *xin = t->w->qkv + (size_t)j * C;
        float *xo = t->w->xc + (size_t)j * C;
        for (int64_t c = lo; c < hi; c++) {
            float *s = state + c * (K - 1);
            const float *wk = wc + c * K;
            float sum = 0.0f;
            for (int64_t i = 0; i < K - 1; i++) {
                sum += s[i] * wk[i];
            }
            sum += xin[c] * wk[K - 1];
            memmove(s, s + 1, (size_t)(K - 2) * sizeof(float));
            s[K - 2] = xin[c];
            xo[c] = silu(sum);
        }
    }
}

/* ggml_l2_norm of each d-float head: x / max(sqrt(sum x^2 in double), eps). */
static void l2_norm(float *x, int64_t d, int64_t n_heads, float eps) {
    for (int64_t h = 0; h < n_heads; h++) {
        float *xh = x + h * d;
        double sum = 0.0;
        for (int64_t i = 0; i < d; i++) {
            sum += (double)(xh[i] * xh[i]);
        }
        const float scale = 1.0f / fmaxf(sqrtf((float)sum), eps);
        for (int64_t i = 0; i < d; i++) {
            xh[i] *= scale;
        }
    }
}

/* The delta rule (ggml_compute_forward_gated_delta_net_one_chunk): value heads split over threads,
 * tokens in order. The state of a head is stored transposed, M[j][i] = S[i][j], so that each of its
 * dot products runs over a contiguous row. */
static void delta_run(void *arg, int ith, int nth) {
    const gdn_task *t = arg;
    const oxl_gdn_opts *o = t->o;
    const int64_t D = o->d_head, V = o->n_v, NK = o->n_k, C = conv_dim(o), rep = V / NK;
    const float scale = 1.0f / sqrtf((float)D);
    float delta[1024];
    int64_t lo, hi;
    oxl_split_range(V, ith, nth, &lo, &hi);
    for (int32_t j = 0; j < t->ub->n; j++) {
        float *state = oxl_memory_ssm_state(t->ctx->mem, t->il, t->ub->seq[j]);
        const float *x = t->w->xc + (size_t)j * C;
        const float *beta = t->w->beta + (size_t)j * V, *g = t->w->g + (size_t)j * V;
        float *y = t->w->y + (size_t)j * o->d_inner;
        for (int64_t h = lo; h < hi; h++) {
            const int64_t kh = o->grouped ? h / rep : h % NK;
            const float *q = x + kh * D, *k = x + NK * D + kh * D, *v = x + 2 * NK * D + h * D;
            float *M = state + h * D * D;
            const float decay = expf(g[h]);
            for (int64_t e = 0; e < D * D; e++) {
                M[e] *= decay;
            }
            for (int64_t r = 0; r < D; r++) {
                float sum = 0.0f;
                for (int64_t i = 0; i < D; i++) {
                    sum += M[r * D + i] * k[i];
                }
                delta[r] = (v[r] - sum) * beta[h];
            }
            for (int64_t r = 0; r < D; r++) {
                for (int64_t i = 0; i < D; i++) {
                    M[r * D + i] += k[i] * delta[r];
                }
            }
            for (int64_t r = 0; r < D; r++) {
                float sum = 0.0f;
                for (int64_t i = 0; i < D; i++) {
                    sum += M[r * D + i] * q[i];
                }
                y[h * D + r] = sum * scale;
            }
        }
    }
}

void oxl_gdn_forward(oxl_ctx *ctx, const oxl_gdn_opts *o, const oxl_gdn_layer *l, int il, const oxl_ubatch *ub,
                     const float *a, float *out, void *work) {
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    const int64_t C = conv_dim(o), I = o->d_inner, V = o->n_v, D = o->d_head, NK = o->n_k, rep = V / NK;
    gdn_work w;
    gdn_layout(o, ctx->model->hp.n_embd, n, work, &w);
    gdn_task t = {.ctx = ctx, .o = o, .l = l, .il = il, .ub = ub, .w = &w};

    /* projections: q|k|v, the output gate z, beta and alpha */
    oxl_matmul(pool, &l->qkv, a, n, w.qkv, C, w.scratch);
    oxl_matmul(pool, &l->gate, a, n, w.z, I, w.scratch);
    if (o->fused_ba) {
        oxl_matmul(pool, &l->ba, a, n, w.ba, 2 * V, w.scratch);
    } else {
        oxl_matmul(pool, &l->beta, a, n, w.ba, V, w.scratch);
        oxl_matmul(pool, &l->alpha, a, n, w.ba + (size_t)V * n, V, w.scratch);
    }
    const float *dt_b = l->dt_b.data, *A = l->a.data;
    for (int32_t j = 0; j < n; j++) {
        for (int64_t h = 0; h < V; h++) {
            float b, al;
            if (o->fused_ba) {
                /* per key head: [beta (rep) | alpha (rep)] */
                const float *grp = w.ba + (size_t)j * 2 * V + (h / rep) * 2 * rep;
                b = grp[h % rep];
                al = grp[rep + h % rep];
            } else {
                b = w.ba[(size_t)j * V + h];
                al = w.ba[(size_t)V * n + (size_t)j * V + h];
            }
            w.beta[(size_t)j * V + h] = 1.0f / (1.0f + expf(-b));
            w.g[(size_t)j * V + h] = softplus(al + dt_b[h]) * A[h];
        }
    }

    /* causal conv + SiLU, then the l2 norms of q and k */
    oxl_pool_run(pool, conv_run, &t);
    for (int32_t j = 0; j < n; j++) {
        l2_norm(w.xc + (size_t)j * C, D, 2 * NK, o->norm_eps);
    }

    /* the delta rule over each sequence's state */
    oxl_pool_run(pool, delta_run, &t);

    /* gated RMSNorm per value head, output projection */
    oxl_norm(OXL_NORM_RMS, w.y, &l->norm, NULL, w.y, D, V * n, o->norm_eps);
    for (int64_t e = 0; e < I * n; e++) {
        w.y[e] *= silu(w.z[e]);
    }
    oxl_matmul(pool, &l->out, w.y, n, out, ctx->model->hp.n_embd, w.scratch);
}

void oxl_gdn_describe(const oxl_gdn_opts *o, FILE *out) {
    fprintf(out,
            "  %-16s gated delta net: %d key heads, %d value heads of %d (value head h reads key head %s), "
            "conv kernel %d%s\n",
            "delta net", o->n_k, o->n_v, o->d_head, o->grouped ? "h / (n_v / n_k)" : "h % n_k", o->d_conv,
            o->fused_ba ? ", fused ssm_ba" : "");
}
