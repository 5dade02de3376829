/* Gemma 3n's AltUp, LAuReL and per-layer embeddings (altup.h): llama.cpp src/models/gemma3n.cpp,
 * llama_model_gemma3n::graph (constructor, altup_predict, altup_correct,
 * altup_compute_router_modalities, laurel, build_inp_per_layer, project_per_layer_inputs), each op in
 * ggml's order: ggml_sum_rows sums in double, every other op rounds to float. */
#include "altup.h"

#include "errors.h"

#include <math.h>
#include <string.h>

/* A required vector or matrix read elementwise (norm weights, scales): f32. */
static int bind_f32(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, int64_t ne1,
                    oxl_error *err) {
    if (oxl_bind_tensor(m, t, name, il, ne0, ne1, true, err)) {
        return -1;
    }
    if (t->type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' must be f32", oxl_gguf_path(m->gguf), t->name);
    }
    return 0;
}

int oxl_altup_bind(const oxl_model *m, const oxl_altup_opts *o, oxl_altup_layer *l, int il, oxl_error *err) {
    const int64_t E = o->n_embd, A = o->n_altup;
    return oxl_bind_tensor(m, &l->router, "blk.%d.altup_router.weight", il, E, A, true, err) ||
                   bind_f32(m, &l->router_norm, "blk.%d.altup_router_norm.weight", il, E, 0, err) ||
                   oxl_bind_tensor(m, &l->predict_coef, "blk.%d.altup_predict_coef.weight", il, A, A * A, true, err) ||
                   oxl_bind_tensor(m, &l->correct_coef, "blk.%d.altup_correct_coef.weight", il, A, A, true, err) ||
                   bind_f32(m, &l->correct_scale, "blk.%d.altup_correct_scale.weight", il, E, 0, err)
               ? -1
               : 0;
}

size_t oxl_altup_work_floats(const oxl_altup_opts *o, int32_t n) {
    const size_t E = (size_t)o->n_embd, A = (size_t)o->n_altup;
    return E * (size_t)n * A + (A * A + 2 * A + 2) * (size_t)n + E * A;
}

/* |x| of one token as calc_magnitude: ggml_sqr, ggml_sum_rows (double), ggml_sqrt. */
static float magnitude(const float *x, int64_t d) {
    double s = 0.0;
    for (int64_t i = 0; i < d; i++) {
        const float t = x[i] * x[i];
        s += (double)t;
    }
    return sqrtf((float)s);
}

/* y (E, n) = x * target / |x| per token (ggml_mul then ggml_div), in place. */
static void match_magnitude(float *y, const float *target, int64_t E, int32_t n) {
    for (int32_t j = 0; j < n; j++) {
        float *c = y + (size_t)j * E;
        const float mag = magnitude(c, E);
        for (int64_t e = 0; e < E; e++) {
            const float t = c[e] * target[j];
            c[e] = t / mag;
        }
    }
}

void oxl_altup_expand(oxl_pool *pool, const oxl_altup_opts *o, const oxl_tensor *proj, const float *x, float *st,
                      int32_t n, float *work, void *scratch) {
    const int64_t E = o->n_embd;
    float *target = work;
    for (int32_t j = 0; j < n; j++) {
        target[j] = magnitude(x + (size_t)j * E, E);
    }
    memcpy(st, x, (size_t)E * n * sizeof(float));
    for (int32_t a = 1; a < o->n_altup; a++) {
        const oxl_tensor w = oxl_tensor_slice(proj, a - 1);
        float *sa = st + (size_t)a * n * E;
        oxl_matmul(pool, &w, x, n, sa, E, scratch);
        match_magnitude(sa, target, E, n);
    }
}

/* altup_compute_router_modalities: mod (n_altup, n) = tanh(router · (rms(x) * router_norm / E)). */
static void modalities(oxl_pool *pool, const oxl_altup_opts *o, const oxl_altup_layer *l, const float *x, int32_t n,
                       float *rn, float *mod, void *scratch) {
    const int64_t E = o->n_embd;
    oxl_norm(OXL_NORM_RMS, x, &l->router_norm, NULL, rn, E, n, o->eps);
    oxl_scale(rn, E * n, 1.0f / (float)E);
    oxl_matmul(pool, &l->router, rn, n, mod, o->n_altup, scratch);
    for (int64_t i = 0; i < (int64_t)o->n_altup * n; i++) {
        mod[i] = tanhf(mod[i]);
    }
}

void oxl_altup_predict(oxl_pool *pool, const oxl_altup_opts *o, const oxl_altup_layer *l, const float *st, float *pred,
                       int32_t n, float *work, void *scratch) {
    const int64_t E = o->n_embd, A = o->n_altup;
    float *rn = work, *mod = rn + E * n, *coefs = mod + A * n, *perm = coefs + A * A * n;
    modalities(pool, o, l, st + (size_t)o->i_act * n * E, n, rn, mod, scratch);
    oxl_matmul(pool, &l->predict_coef, mod, n, coefs, A * A, scratch);
    /* ggml_mul_mat of the streams permuted to (n_altup, E, n) with the coefficients reshaped to
     * (n_altup, n_altup, n): one f32 vec_dot of n_altup per output */
    const oxl_vec_dot_fn dot = oxl_kernels_get()->vec_dot[OXL_TYPE_F32];
    for (int32_t j = 0; j < n; j++) {
        for (int64_t k = 0; k < A; k++) {
            const float *sk = st + ((size_t)k * n + j) * E;
            for (int64_t e = 0; e < E; e++) {
                perm[e * A + k] = sk[e];
            }
        }
        const float *c = coefs + (size_t)j * A * A;
        for (int64_t i = 0; i < A; i++) {
            const float *si = st + ((size_t)i * n + j) * E;
            float *pi = pred + ((size_t)i * n + j) * E;
            for (int64_t e = 0; e < E; e++) {
                float s;
                dot(A, &s, perm + e * A, c + i * A);
                pi[e] = s + si[e];
            }
        }
    }
}

void oxl_altup_correct(oxl_pool *pool, const oxl_altup_opts *o, const oxl_altup_layer *l, const float *pred,
                       const float *y, float *out, int32_t n, float *work, void *scratch) {
    const int64_t E = o->n_embd, A = o->n_altup;
    float *rn = work, *mod = rn + E * n, *coefs = mod + A * n, *innov = coefs + A * n;
    modalities(pool, o, l, y, n, rn, mod, scratch);
    oxl_matmul(pool, &l->correct_coef, mod, n, coefs, A, scratch);
    for (int64_t i = 0; i < A * n; i++) {
        coefs[i] += 1.0f; /* ggml_scale_bias(1, 1) */
    }
    const float *act = pred + (size_t)o->i_act * n * E;
    for (int64_t i = 0; i < E * n; i++) {
        innov[i] = y[i] - act[i];
    }
    for (int64_t a = 0; a < A; a++) {
        for (int32_t j = 0; j < n; j++) {
            const float c = coefs[(size_t)j * A + a];
            const float *pa = pred + ((size_t)a * n + j) * E, *ij = innov + (size_t)j * E;
            float *oa = out + ((size_t)a * n + j) * E;
            for (int64_t e = 0; e < E; e++) {
                const float t = ij[e] * c;
                oa[e] = t + pa[e];
            }
        }
    }
}

void oxl_altup_merge(oxl_pool *pool, const oxl_altup_opts *o, const oxl_tensor *unembd_proj, const float *st,
                     float *out, int32_t n, float *work, void *scratch) {
    const int64_t E = o->n_embd, A = o->n_altup;
    float *target = work, *tmp = target + n;
    const float *act = st + (size_t)o->i_act * n * E;
    for (int32_t j = 0; j < n; j++) {
        target[j] = magnitude(act + (size_t)j * E, E);
    }
    for (int64_t a = 1; a < A; a++) {
        const oxl_tensor w = oxl_tensor_slice(unembd_proj, a - 1);
        float *ta = tmp + (size_t)(a - 1) * n * E;
        oxl_matmul(pool, &w, st + (size_t)a * n * E, n, ta, E, scratch);
        match_magnitude(ta, target, E, n);
    }
    /* the mean: stream 0 plus each rescaled stream in turn, then / n_altup */
    memcpy(out, st, (size_t)E * n * sizeof(float));
    for (int64_t a = 1; a < A; a++) {
        oxl_add(out, tmp + (size_t)(a - 1) * n * E, E * n);
    }
    oxl_scale(out, E * n, 1.0f / (float)A);
}

/* ---- LAuReL ------------------------------------------------------------------------------ */

int oxl_laurel_bind(const oxl_model *m, oxl_laurel_layer *l, int il, int32_t n_embd, int32_t rank, oxl_error *err) {
    return oxl_bind_tensor(m, &l->l, "blk.%d.laurel_l.weight", il, n_embd, rank, true, err) ||
                   oxl_bind_tensor(m, &l->r, "blk.%d.laurel_r.weight", il, rank, n_embd, true, err) ||
                   bind_f32(m, &l->post_norm, "blk.%d.laurel_post_norm.weight", il, n_embd, 0, err)
               ? -1
               : 0;
}

void oxl_laurel_forward(oxl_pool *pool, const oxl_laurel_layer *l, const float *x, float *out, int32_t n, float eps,
                        float *work, void *scratch) {
    const int64_t E = l->r.ne[1];
    oxl_matmul(pool, &l->l, x, n, work, l->l.ne[1], scratch);
    oxl_matmul(pool, &l->r, work, n, out, E, scratch);
    oxl_norm(OXL_NORM_RMS, out, &l->post_norm, NULL, out, E, n, eps);
    oxl_add(out, x, E * n);
}

/* ---- per-layer embeddings ------------------------------------------------------------------ */

int oxl_ple_bind(const oxl_model *m, oxl_ple *p, int32_t n_embd, oxl_error *err) {
    const int64_t P = p->n_embd_pl, PL = P * p->n_layer;
    return oxl_bind_tensor(m, &p->tok_embd, "per_layer_token_embd.weight", -1, PL, m->hp.n_vocab, true, err) ||
                   oxl_bind_tensor(m, &p->model_proj, "per_layer_model_proj.weight", -1, n_embd, PL, true, err) ||
                   bind_f32(m, &p->proj_norm, "per_layer_proj_norm.weight", -1, P, 0, err)
               ? -1
               : 0;
}

int oxl_ple_bind_layer(const oxl_model *m, const oxl_ple *p, oxl_ple_layer *l, int il, int32_t n_embd, oxl_error *err) {
    return oxl_bind_tensor(m, &l->inp_gate, "blk.%d.inp_gate.weight", il, n_embd, p->n_embd_pl, true, err) ||
                   oxl_bind_tensor(m, &l->proj, "blk.%d.proj.weight", il, p->n_embd_pl, n_embd, true, err) ||
                   bind_f32(m, &l->post_norm, "blk.%d.post_norm.weight", il, n_embd, 0, err)
               ? -1
               : 0;
}

void oxl_ple_inputs(oxl_pool *pool, const oxl_ple *p, const oxl_token *tokens, const float *x, int32_t n_embd,
                    int32_t n, float eps, float *out, void *scratch) {
    const int64_t P = p->n_embd_pl, PL = P * p->n_layer;
    float *proj = out + PL * n;
    /* build_inp_per_layer: the rows (f16 rows converted exactly) * sqrt(n_embd_pl) */
    for (int32_t j = 0; j < n; j++) {
        oxl_tensor_get_row(&p->tok_embd, tokens[j], out + (size_t)j * PL);
    }
    oxl_scale(out, PL * n, sqrtf((float)P));
    /* project_per_layer_inputs */
    oxl_matmul(pool, &p->model_proj, x, n, proj, PL, scratch);
    oxl_scale(proj, PL * n, 1.0f / sqrtf((float)n_embd));
    oxl_norm(OXL_NORM_RMS, proj, &p->proj_norm, NULL, proj, P, (int64_t)p->n_layer * n, eps);
    const float s = 1.0f / sqrtf(2.0f);
    for (int64_t i = 0; i < PL * n; i++) {
        const float t = proj[i] + out[i];
        out[i] = t * s;
    }
}

void oxl_ple_layer_forward(oxl_pool *pool, const oxl_ple *p, const oxl_ple_layer *l, const float *h, const float *inp,
                           int64_t inp_stride, float *out, int32_t n, float eps, float *work, void *scratch) {
    const int64_t P = p->n_embd_pl, E = l->proj.ne[1];
    oxl_matmul(pool, &l->inp_gate, h, n, work, P, scratch);
    oxl_gelu_fused(work, P * n);
    for (int32_t j = 0; j < n; j++) {
        float *g = work + (size_t)j * P;
        const float *in = inp + (size_t)j * inp_stride;
        for (int64_t i = 0; i < P; i++) {
            g[i] *= in[i];
        }
    }
    oxl_matmul(pool, &l->proj, work, n, out, E, scratch);
    oxl_norm(OXL_NORM_RMS, out, &l->post_norm, NULL, out, E, n, eps);
}
