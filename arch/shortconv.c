/* The gated short convolution (shortconv.h): llama.cpp src/models/lfm2.cpp, build_shortconv_block. */
#include "shortconv.h"

#include "errors.h"

#include <string.h>

int oxl_shortconv_hparams(oxl_model *m, int32_t *l_cache, oxl_error *err) {
    if (oxl_hp_int(m, "shortconv.l_cache", l_cache, true, err)) {
        return -1;
    }
    if (*l_cache < 2 || *l_cache > 64) {
        return oxl_err_set(err, "%s: %s.shortconv.l_cache = %d out of range (2 .. 64)", oxl_gguf_path(m->gguf),
                           m->arch->name, *l_cache);
    }
    m->hp.n_embd_r = (*l_cache - 1) * m->hp.n_embd;
    m->hp.n_embd_s = 0;
    return 0;
}

int oxl_shortconv_bind(const oxl_model *m, int32_t l_cache, oxl_shortconv_layer *l, int il, oxl_error *err) {
    const int64_t E = m->hp.n_embd;
    if (oxl_bind_tensor(m, &l->in, "blk.%d.shortconv.in_proj.weight", il, E, 3 * E, true, err) ||
        oxl_bind_tensor(m, &l->conv, "blk.%d.shortconv.conv.weight", il, l_cache, E, true, err) ||
        oxl_bind_tensor(m, &l->out, "blk.%d.shortconv.out_proj.weight", il, E, E, true, err)) {
        return -1;
    }
    if (l->conv.type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' must be f32 (as ggml's ssm_conv requires)", oxl_gguf_path(m->gguf),
                           l->conv.name);
    }
    return 0;
}

typedef struct conv_work {
    float *bcx;     /* (3*n_embd, n) W_in · a */
    float *y;       /* (n_embd, n) C * conv(B * x) */
    float *scratch; /* matmul conversions */
} conv_work;

static size_t conv_layout(int64_t E, int32_t n, void *base, conv_work *w) {
    const size_t sizes[] = {3 * (size_t)E * n, (size_t)E * n, (size_t)E * n + 64};
    float **slots[] = {&w->bcx, &w->y, &w->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

size_t oxl_shortconv_work_size(const oxl_model *m, int32_t n) {
    conv_work w;
    return conv_layout(m->hp.n_embd, n, NULL, &w);
}

typedef struct conv_task {
    oxl_ctx *ctx;
    const oxl_shortconv_layer *l;
    int il;
    int32_t l_cache;
    const oxl_ubatch *ub;
    conv_work *w;
} conv_task;

/* Channels split over threads; each thread walks the pass's tokens in order. The window (state, then
 * the token's B * x) is summed in float in order, as ggml_ssm_conv, and slides by one. */
static void conv_run(void *arg, int ith, int nth) {
    const conv_task *t = arg;
    const int64_t E = t->ctx->model->hp.n_embd, K = t->l_cache;
    const float *wc = t->l->conv.data;
    int64_t lo, hi;
    oxl_split_range(E, ith, nth, &lo, &hi);
    for (int32_t j = 0; j < t->ub->n; j++) {
        float *state = oxl_memory_conv_state(t->ctx->mem, t->il, t->ub->seq[j]);
        const float *b = t->w->bcx + (size_t)j * 3 * E, *c = b + E, *x = b + 2 * E;
        float *y = t->w->y + (size_t)j * E;
        for (int64_t ch = lo; ch < hi; ch++) {
            float *s = state + ch * (K - 1);
            const float *wk = wc + ch * K;
            const float bx = b[ch] * x[ch];
            float sum = 0.0f;
            for (int64_t i = 0; i < K - 1; i++) {
                sum += s[i] * wk[i];
            }
            sum += bx * wk[K - 1];
            memmove(s, s + 1, (size_t)(K - 2) * sizeof(float));
            s[K - 2] = bx;
            y[ch] = c[ch] * sum;
        }
    }
}

void oxl_shortconv_forward(oxl_ctx *ctx, int32_t l_cache, const oxl_shortconv_layer *l, int il, const oxl_ubatch *ub,
                           const float *a, float *out, void *work) {
    const int64_t E = ctx->model->hp.n_embd;
    conv_work w;
    conv_layout(E, ub->n, work, &w);
    conv_task t = {.ctx = ctx, .l = l, .il = il, .l_cache = l_cache, .ub = ub, .w = &w};
    oxl_matmul(ctx->pool, &l->in, a, ub->n, w.bcx, 3 * E, w.scratch);
    oxl_pool_run(ctx->pool, conv_run, &t);
    oxl_matmul(ctx->pool, &l->out, w.y, ub->n, out, E, w.scratch);
}
