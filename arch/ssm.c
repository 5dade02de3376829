/* The Mamba mixers (ssm.h): keys, tensors, causal conv and selective scan over recurrent states. */
#include "ssm.h"

#include "errors.h"

#include <math.h>
#include <string.h>

/* ---- hyper-parameters and tensors ------------------------------------------------------- */

static int64_t conv_dim(const oxl_ssm_opts *o) {
    return o->kind == OXL_SSM_MAMBA2 ? o->d_inner + 2 * (int64_t)o->n_group * o->d_state : o->d_inner;
}

int oxl_ssm_hparams(oxl_model *m, oxl_ssm_opts *o, oxl_ssm_kind kind, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf), *arch = m->arch->name;
    o->kind = kind;
    o->n_group = 1;
    if (oxl_hp_int(m, "ssm.conv_kernel", &o->d_conv, true, err) ||
        oxl_hp_int(m, "ssm.inner_size", &o->d_inner, true, err) ||
        oxl_hp_int(m, "ssm.state_size", &o->d_state, true, err) ||
        oxl_hp_int(m, "ssm.time_step_rank", &o->dt_rank, true, err) ||
        (kind == OXL_SSM_MAMBA2 && oxl_hp_int(m, "ssm.group_count", &o->n_group, true, err))) {
        return -1;
    }
    if (o->d_conv < 2 || o->d_conv > 64 || o->d_state > 4096 || o->d_inner > (1 << 20) || o->dt_rank > o->d_inner) {
        return oxl_err_set(err,
                           "%s: %s.ssm sizes out of range: conv_kernel %d (2 .. 64), state_size %d (<= 4096), "
                           "inner_size %d, time_step_rank %d (<= inner_size)",
                           path, arch, o->d_conv, o->d_state, o->d_inner, o->dt_rank);
    }
    if (kind == OXL_SSM_MAMBA && o->d_inner != 2 * m->hp.n_embd) {
        return oxl_err_set(err, "%s: %s.ssm.inner_size = %d must be 2 * embedding_length = %d (as llama.cpp requires)",
                           path, arch, o->d_inner, 2 * m->hp.n_embd);
    }
    if (kind == OXL_SSM_MAMBA2 &&
        (o->d_inner % o->dt_rank != 0 || o->d_inner % o->n_group != 0 || o->dt_rank % o->n_group != 0)) {
        return oxl_err_set(err,
                           "%s: %s.ssm.time_step_rank (heads) = %d and group_count = %d must divide inner_size %d "
                           "(and groups the heads)",
                           path, arch, o->dt_rank, o->n_group, o->d_inner);
    }
    const int64_t n_r = (o->d_conv - 1) * conv_dim(o), n_s = (int64_t)o->d_state * o->d_inner;
    if (n_r > (1 << 28) || n_s > (1 << 28)) {
        return oxl_err_set(err, "%s: %s.ssm state of %lld + %lld floats per sequence and layer is too large", path,
                           arch, (long long)n_r, (long long)n_s);
    }
    m->hp.n_embd_r = (int32_t)n_r;
    m->hp.n_embd_s = (int32_t)n_s;
    return 0;
}

int oxl_ssm_bind(const oxl_model *m, const oxl_ssm_opts *o, oxl_ssm_layer *l, int il, bool dt_b_c_norms,
                 oxl_error *err) {
    const int64_t E = m->hp.n_embd, I = o->d_inner, S = o->d_state, R = o->dt_rank, C = conv_dim(o);
    const bool two = o->kind == OXL_SSM_MAMBA2;
    if (oxl_bind_tensor(m, &l->in, "blk.%d.ssm_in.weight", il, E, two ? I + C + R : 2 * I, true, err) ||
        oxl_bind_tensor(m, &l->conv1d, "blk.%d.ssm_conv1d.weight", il, o->d_conv, C, true, err) ||
        oxl_bind_tensor(m, &l->conv1d_b, "blk.%d.ssm_conv1d.bias", il, C, 0, true, err) ||
        oxl_bind_tensor(m, &l->dt_b, "blk.%d.ssm_dt.bias", il, two ? R : I, 0, true, err) ||
        oxl_bind_tensor(m, &l->a, "blk.%d.ssm_a", il, two ? 1 : S, two ? R : I, true, err) ||
        oxl_bind_tensor(m, &l->d, "blk.%d.ssm_d", il, two ? 1 : I, two ? R : 0, true, err) ||
        oxl_bind_tensor(m, &l->out, "blk.%d.ssm_out.weight", il, I, E, true, err)) {
        return -1;
    }
    if (two) {
        if (oxl_bind_tensor(m, &l->norm, "blk.%d.ssm_norm.weight", il, I / o->n_group, o->n_group, !o->norm_optional,
                            err)) {
            return -1;
        }
    } else if (oxl_bind_tensor(m, &l->x, "blk.%d.ssm_x.weight", il, I, R + 2 * S, true, err) ||
               oxl_bind_tensor(m, &l->dt, "blk.%d.ssm_dt.weight", il, R, I, true, err)) {
        return -1;
    }
    if (dt_b_c_norms && (oxl_bind_tensor(m, &l->dt_norm, "blk.%d.ssm_dt_norm.weight", il, R, 0, true, err) ||
                         oxl_bind_tensor(m, &l->b_norm, "blk.%d.ssm_b_norm.weight", il, S, 0, true, err) ||
                         oxl_bind_tensor(m, &l->c_norm, "blk.%d.ssm_c_norm.weight", il, S, 0, true, err))) {
        return -1;
    }
    /* the scan and the conv read these directly as floats */
    const oxl_tensor *f32[] = {&l->conv1d, &l->a, &l->d, &l->norm};
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++) {
        if (f32[i]->data && f32[i]->type != OXL_TYPE_F32) {
            return oxl_err_set(err, "%s: tensor '%s' must be f32 (as ggml's ssm_conv and ssm_scan require)",
                               oxl_gguf_path(m->gguf), f32[i]->name);
        }
    }
    return 0;
}

/* ---- forward ----------------------------------------------------------------------------- */

typedef struct ssm_work {
    float *proj;    /* (in rows, n) W_in · a */
    float *xc;      /* (conv_dim, n) conv output */
    float *xdb;     /* (dt_rank + 2*d_state, n) Mamba-1 W_x · x */
    float *dt;      /* (d_inner | n_head, n) */
    float *y;       /* (d_inner, n) scan output */
    float *scratch; /* matmul conversions */
} ssm_work;

static size_t ssm_layout(const oxl_ssm_opts *o, int32_t n, void *base, ssm_work *w) {
    const size_t I = (size_t)o->d_inner, C = (size_t)conv_dim(o);
    const size_t in_rows = o->kind == OXL_SSM_MAMBA2 ? I + C + (size_t)o->dt_rank : 2 * I;
    const size_t sizes[] = {in_rows * n, C * n, ((size_t)o->dt_rank + 2 * (size_t)o->d_state) * n,
                            I * n,       I * n, in_rows * n + 64};
    float **slots[] = {&w->proj, &w->xc, &w->xdb, &w->dt, &w->y, &w->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

size_t oxl_ssm_work_size(const oxl_ssm_opts *o, int32_t n) {
    ssm_work w;
    return o->kind == OXL_SSM_NONE ? 0 : ssm_layout(o, n, NULL, &w);
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* ggml_compute_softplus_f32 */
static float softplus(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

typedef struct ssm_task {
    oxl_ctx *ctx;
    const oxl_ssm_opts *o;
    const oxl_ssm_layer *l;
    int il;
    const oxl_ubatch *ub;
    ssm_work *w;
    int64_t in_rows, x_off; /* rows of proj per token; first conv input row in proj */
} ssm_task;

/* Causal depthwise conv of each channel over its sequence's last d_conv - 1 inputs and the token's,
 * summed in float in window order (ggml_ssm_conv), + bias, SiLU; the window then slides. Channels
 * are split over threads; each thread walks the pass's tokens in order. */
static void conv_run(void *arg, int ith, int nth) {
    const ssm_task *t = arg;
    const int64_t C = conv_dim(t->o), K = t->o->d_conv;
    const float *wc = t->l->conv1d.data, *bc = t->l->conv1d_b.data;
    int64_t lo, hi;
    oxl_split_range(C, ith, nth, &lo, &hi);
    for (int32_t j = 0; j < t->ub->n; j++) {
        float *state = oxl_memory_conv_state(t->ctx->mem, t->il, t->ub->seq[j]);
        const float *xin = t->w->proj + (size_t)j * t->in_rows + t->x_off;
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
            xo[c] = silu(sum + bc[c]);
        }
    }
}

/* The selective scan (ggml_ssm_scan): heads split over threads, tokens in order. Mamba-1 has one
 * channel per head and A per (state, channel); Mamba-2 head_dim channels per head sharing A[h], dt[h]
 * and their group's B, C. */
static void scan_run(void *arg, int ith, int nth) {
    const ssm_task *t = arg;
    const oxl_ssm_opts *o = t->o;
    const bool two = o->kind == OXL_SSM_MAMBA2;
    const int64_t S = o->d_state, I = o->d_inner, n_head = two ? o->dt_rank : I, head_dim = I / n_head;
    const int64_t C = conv_dim(o), ng = o->n_group;
    const float *A = t->l->a.data;
    int64_t lo, hi;
    oxl_split_range(n_head, ith, nth, &lo, &hi);
    for (int32_t j = 0; j < t->ub->n; j++) {
        float *state = oxl_memory_ssm_state(t->ctx->mem, t->il, t->ub->seq[j]);
        const float *x = t->w->xc + (size_t)j * C;
        const float *B, *Cv;
        if (two) {
            B = x + I;
            Cv = x + I + ng * S;
        } else {
            B = t->w->xdb + (size_t)j * (o->dt_rank + 2 * S) + o->dt_rank;
            Cv = B + S;
        }
        const float *dt = t->w->dt + (size_t)j * n_head;
        float *y = t->w->y + (size_t)j * I;
        for (int64_t h = lo; h < hi; h++) {
            const float dsp = softplus(dt[h]);
            const float dA = two ? expf(dsp * A[h]) : 0.0f;
            const int64_t g = h / (n_head / ng);
            for (int64_t i1 = 0; i1 < head_dim; i1++) {
                const int64_t ii = i1 + h * head_dim;
                const float x_dt = x[ii] * dsp;
                float *s = state + ii * S;
                float sum = 0.0f;
                for (int64_t i0 = 0; i0 < S; i0++) {
                    const float decay = two ? dA : expf(dsp * A[i0 + h * S]);
                    const float v = s[i0] * decay + B[i0 + g * S] * x_dt;
                    sum += v * Cv[i0 + g * S];
                    s[i0] = v;
                }
                y[ii] = sum;
            }
        }
    }
}

void oxl_ssm_forward(oxl_ctx *ctx, const oxl_ssm_opts *o, const oxl_ssm_layer *l, int il, const oxl_ubatch *ub,
                     const float *a, float *out, void *work) {
    oxl_pool *pool = ctx->pool;
    const bool two = o->kind == OXL_SSM_MAMBA2;
    const int32_t n = ub->n;
    const int64_t I = o->d_inner, S = o->d_state, R = o->dt_rank, C = conv_dim(o);
    const int64_t n_head = two ? R : I, head_dim = I / n_head;
    ssm_work w;
    ssm_layout(o, n, work, &w);
    ssm_task t = {
        .ctx = ctx, .o = o, .l = l, .il = il, .ub = ub, .w = &w, .in_rows = l->in.ne[1], .x_off = two ? I : 0};

    /* input projection, then the causal conv on x (Mamba-1) or xBC (Mamba-2) */
    oxl_matmul(pool, &l->in, a, n, w.proj, t.in_rows, w.scratch);
    oxl_pool_run(pool, conv_run, &t);

    /* the step sizes */
    if (two) {
        for (int32_t j = 0; j < n; j++) {
            memcpy(w.dt + (size_t)j * R, w.proj + (size_t)j * t.in_rows + I + C, (size_t)R * sizeof(float));
        }
        oxl_add_bias(w.dt, &l->dt_b, R, n);
    } else {
        const int64_t xdb_rows = R + 2 * S;
        oxl_matmul(pool, &l->x, w.xc, n, w.xdb, xdb_rows, w.scratch);
        if (l->dt_norm.data) {
            for (int32_t j = 0; j < n; j++) {
                float *col = w.xdb + (size_t)j * xdb_rows;
                oxl_norm(OXL_NORM_RMS, col, &l->dt_norm, NULL, col, R, 1, o->norm_eps);
                oxl_norm(OXL_NORM_RMS, col + R, &l->b_norm, NULL, col + R, S, 1, o->norm_eps);
                oxl_norm(OXL_NORM_RMS, col + R + S, &l->c_norm, NULL, col + R + S, S, 1, o->norm_eps);
            }
        }
        /* W_dt reads the first dt_rank rows of each column: gather them (ggml's strided view) */
        for (int32_t j = 0; j < n; j++) {
            memmove(w.y + (size_t)j * R, w.xdb + (size_t)j * xdb_rows, (size_t)R * sizeof(float));
        }
        oxl_matmul(pool, &l->dt, w.y, n, w.dt, I, w.scratch);
        oxl_add_bias(w.dt, &l->dt_b, I, n);
    }
    oxl_pool_run(pool, scan_run, &t);

    /* D skip, SiLU(z) gate, (Mamba-2) grouped RMSNorm, output projection */
    const float *D = l->d.data;
    for (int32_t j = 0; j < n; j++) {
        float *y = w.y + (size_t)j * I;
        const float *x = w.xc + (size_t)j * C;
        const float *z = w.proj + (size_t)j * t.in_rows + (two ? 0 : I);
        for (int64_t i = 0; i < I; i++) {
            y[i] = silu(z[i]) * (y[i] + x[i] * D[two ? i / head_dim : i]);
        }
    }
    if (two && l->norm.data) {
        oxl_norm(OXL_NORM_RMS, w.y, &l->norm, NULL, w.y, I / o->n_group, (int64_t)n * o->n_group, o->norm_eps);
    }
    oxl_matmul(pool, &l->out, w.y, n, out, ctx->model->hp.n_embd, w.scratch);
}

void oxl_ssm_describe(const oxl_ssm_opts *o, FILE *out) {
    fprintf(out, "  %-16s %s: d_inner %d, d_state %d, d_conv %d, %s %d", "ssm",
            o->kind == OXL_SSM_MAMBA2 ? "mamba2" : "mamba", o->d_inner, o->d_state, o->d_conv,
            o->kind == OXL_SSM_MAMBA2 ? "heads" : "dt_rank", o->dt_rank);
    if (o->kind == OXL_SSM_MAMBA2) {
        fprintf(out, ", %d groups (B/C and the gated RMSNorm)", o->n_group);
    }
    fputc('\n', out);
}
