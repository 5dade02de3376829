#include "blocks.h"

#include "error.h"
#include "oxl_fp16.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- loading ---------------------------------------------------------------------------- */

static void arch_key(const oxl_model *m, const char *key, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s", m->arch->name, key);
}

int oxl_hp_int(const oxl_model *m, const char *key, int32_t *out, bool required, oxl_error *err) {
    char full[256];
    arch_key(m, key, full, sizeof full);
    int64_t v;
    int r = oxl_gguf_get_int(m->gguf, full, &v, err);
    if (r < 0) {
        return -1;
    }
    if (r == 0) {
        return required ? oxl_err_set(err, "%s: missing required key '%s'", oxl_gguf_path(m->gguf), full) : 0;
    }
    if (v <= 0 || v > INT32_MAX) {
        return oxl_err_set(err, "%s: key '%s' = %lld: must be a positive 32-bit integer",
                           oxl_gguf_path(m->gguf), full, (long long)v);
    }
    *out = (int32_t)v;
    return 0;
}

int oxl_hp_float(const oxl_model *m, const char *key, float *out, bool required, oxl_error *err) {
    char full[256];
    arch_key(m, key, full, sizeof full);
    float v;
    int r = oxl_gguf_get_float(m->gguf, full, &v, err);
    if (r < 0) {
        return -1;
    }
    if (r == 0) {
        return required ? oxl_err_set(err, "%s: missing required key '%s'", oxl_gguf_path(m->gguf), full) : 0;
    }
    if (!isfinite(v)) {
        return oxl_err_set(err, "%s: key '%s' = %g: must be finite", oxl_gguf_path(m->gguf), full, v);
    }
    *out = v;
    return 0;
}

int oxl_bind_tensor(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, int64_t ne1,
                    bool required, oxl_error *err) {
    char full[128];
    if (il >= 0) {
        snprintf(full, sizeof full, name, il);
    } else {
        snprintf(full, sizeof full, "%s", name);
    }
    const char *path = oxl_gguf_path(m->gguf);
    const oxl_gguf_tensor *gt = oxl_gguf_find_tensor(m->gguf, full);
    memset(t, 0, sizeof *t);
    if (!gt) {
        return required ? oxl_err_set(err, "%s: missing tensor '%s'", path, full) : 0;
    }
    int64_t want_dims = ne1 ? 2 : 1;
    bool ok = gt->ne[0] == ne0 && gt->ne[1] == (ne1 ? ne1 : 1) && gt->ne[2] == 1 && gt->ne[3] == 1;
    if (!ok) {
        return oxl_err_set(err, "%s: tensor '%s' has shape (%lld, %lld, %lld, %lld); expected (%lld%s%lld)", path, full,
                           (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2], (long long)gt->ne[3],
                           (long long)ne0, want_dims == 2 ? ", " : "", (long long)(want_dims == 2 ? ne1 : 0));
    }
    const oxl_kernels *k = oxl_kernels_get();
    const oxl_type_traits *tt = oxl_type_traits_get(gt->type);
    if (gt->type != OXL_TYPE_F32 && (!k->vec_dot[gt->type] || !k->dequant[gt->type])) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s, which oxillama cannot compute with yet", path, full,
                           tt ? tt->name : "?");
    }
    if (want_dims == 1 && gt->type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s; 1-D tensors must be f32", path, full, tt->name);
    }
    t->name = gt->name;
    t->type = (oxl_type)gt->type;
    t->ne[0] = gt->ne[0];
    t->ne[1] = gt->ne[1];
    t->row_size = oxl_row_size(t->type, gt->ne[0]);
    t->data = gt->data;
    return 0;
}

/* ---- math -------------------------------------------------------------------------------- */

void oxl_rms_norm(const float *x, const oxl_tensor *w, float *y, int64_t d, int64_t n, float eps) {
    const float *wd = w->data;
    for (int64_t j = 0; j < n; j++) {
        const float *xj = x + j * d;
        float *yj = y + j * d;
        double sum = 0.0; /* ggml accumulates the squares in double */
        for (int64_t i = 0; i < d; i++) {
            sum += (double)(xj[i] * xj[i]);
        }
        const float mean = (float)(sum / (double)d);
        const float scale = 1.0f / sqrtf(mean + eps);
        for (int64_t i = 0; i < d; i++) {
            yj[i] = (xj[i] * scale) * wd[i];
        }
    }
}

void oxl_rope_norm(float *x, int n_head, int head_dim, int n_rot, int32_t pos, float freq_base, float freq_scale) {
    /* ggml builds the angle of pair i by repeated multiplication: theta_i = pos * base^(-2i/n_rot). */
    const float theta_scale = powf(freq_base, -2.0f / (float)n_rot);
    float cs[2 * 256 + 2];
    float theta = (float)pos;
    int n_pairs = n_rot / 2;
    for (int i = 0; i < n_pairs && i < 256; i++) {
        float t = freq_scale * theta;
        cs[2 * i] = cosf(t);
        cs[2 * i + 1] = sinf(t);
        theta *= theta_scale;
    }
    for (int h = 0; h < n_head; h++) {
        float *xh = x + (size_t)h * head_dim;
        for (int i = 0; i < n_pairs && i < 256; i++) {
            const float x0 = xh[2 * i], x1 = xh[2 * i + 1];
            xh[2 * i] = x0 * cs[2 * i] - x1 * cs[2 * i + 1];
            xh[2 * i + 1] = x0 * cs[2 * i + 1] + x1 * cs[2 * i];
        }
    }
}

void oxl_swiglu(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    }
}

void oxl_add(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        x[i] += y[i];
    }
}

/* ---- attention --------------------------------------------------------------------------- */

static void store_row(oxl_type t, const float *src, void *dst, int64_t n) {
    if (t == OXL_TYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
    } else {
        oxl_kernels_get()->quant[t](src, dst, n);
    }
}

void oxl_kv_store(oxl_ctx *ctx, int il, const oxl_ubatch *ub, const float *k, const float *v) {
    oxl_kv_cache *kv = &ctx->kv;
    for (int32_t j = 0; j < ub->n; j++) {
        const size_t r = (size_t)ub->seq[j] * (size_t)ctx->n_ctx + (size_t)ub->pos[j];
        store_row(kv->type_k, k + (size_t)j * kv->kv_dim, (char *)kv->k[il] + r * kv->k_row, kv->kv_dim);
        store_row(kv->type_v, v + (size_t)j * kv->kv_dim, (char *)kv->v[il] + r * kv->v_row, kv->kv_dim);
    }
}

typedef struct attn_task {
    oxl_ctx *ctx;
    int il;
    const oxl_ubatch *ub;
    const float *q;
    float *out;
    int n_head, n_head_kv, head_dim;
    float scale;
    float *scores;
} attn_task;

/* Shared per-item set-up: the query (converted to f16 for an f16 K cache, as ggml converts q to
 * K's vec_dot_type) and the byte offsets of this head's K and V columns. */
typedef struct attn_item {
    const void *q;
    size_t k_off, v_off;
    size_t row0;  /* cache row of the sequence's position 0 */
    int32_t n_kv; /* causal: positions 0 .. pos of the token */
    float *out;
} attn_item;

static attn_item attn_item_at(const attn_task *t, int64_t item, uint16_t *qh) {
    const oxl_kv_cache *kv = &t->ctx->kv;
    const int32_t j = (int32_t)(item / t->n_head);
    const int h = (int)(item % t->n_head);
    const int hk = h / (t->n_head / t->n_head_kv);
    const float *qj = t->q + ((size_t)j * t->n_head + h) * t->head_dim;
    attn_item it = {
        .q = qj,
        .k_off = (size_t)hk * t->head_dim * (kv->type_k == OXL_TYPE_F16 ? 2 : 4),
        .v_off = (size_t)hk * t->head_dim * (kv->type_v == OXL_TYPE_F16 ? 2 : 4),
        .row0 = (size_t)t->ub->seq[j] * (size_t)t->ctx->n_ctx,
        .n_kv = t->ub->pos[j] + 1,
        .out = t->out + ((size_t)j * t->n_head + h) * t->head_dim,
    };
    if (kv->type_k == OXL_TYPE_F16) {
        oxl_kernels_get()->quant[OXL_TYPE_F16](qj, qh, t->head_dim);
        it.q = qh;
    }
    return it;
}

static float attn_score(const attn_task *t, const attn_item *it, int32_t p) {
    const oxl_kv_cache *kv = &t->ctx->kv;
    const char *kp = (const char *)kv->k[t->il] + (it->row0 + (size_t)p) * kv->k_row + it->k_off;
    float s;
    oxl_kernels_get()->vec_dot[kv->type_k](t->head_dim, &s, kp, it->q);
    return s * t->scale;
}

static const void *attn_value(const attn_task *t, const attn_item *it, int32_t p) {
    const oxl_kv_cache *kv = &t->ctx->kv;
    return (const char *)kv->v[t->il] + (it->row0 + (size_t)p) * kv->v_row + it->v_off;
}

/* Unfused attention, as llama.cpp's graph without -fa: kq = K·q, softmax(kq*scale) summing in double
 * (ggml_soft_max_ext), then the weighted sum of values (kq converted to f16 for an f16 V cache). */
static void attn_unfused(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const oxl_kv_cache *kv = &t->ctx->kv;
    const int D = t->head_dim;
    float *sc = t->scores + (size_t)ith * (size_t)(t->ctx->n_ctx + D);
    float *acc = sc + t->ctx->n_ctx;
    uint16_t qh[1024];
    int64_t lo, hi;
    oxl_split_range((int64_t)t->ub->n * t->n_head, ith, nth, &lo, &hi);
    for (int64_t item = lo; item < hi; item++) {
        const attn_item it = attn_item_at(t, item, qh);
        float max = -INFINITY;
        for (int32_t p = 0; p < it.n_kv; p++) {
            sc[p] = attn_score(t, &it, p);
            max = sc[p] > max ? sc[p] : max;
        }
        double sum = 0.0;
        for (int32_t p = 0; p < it.n_kv; p++) {
            sc[p] = expf(sc[p] - max);
            sum += (double)sc[p];
        }
        const float inv = (float)(1.0 / sum);
        memset(acc, 0, (size_t)D * sizeof(float));
        for (int32_t p = 0; p < it.n_kv; p++) {
            const float w = sc[p] * inv;
            if (kv->type_v == OXL_TYPE_F16) {
                const uint16_t *vp = attn_value(t, &it, p);
                const float wh = oxl_fp16_to_fp32(oxl_fp32_to_fp16(w));
                for (int d = 0; d < D; d++) {
                    acc[d] += wh * oxl_fp16_to_fp32(vp[d]);
                }
            } else {
                const float *vp = attn_value(t, &it, p);
                for (int d = 0; d < D; d++) {
                    acc[d] += w * vp[d];
                }
            }
        }
        memcpy(it.out, acc, (size_t)D * sizeof(float));
    }
}

/* Flash attention, as ggml_flash_attn_ext on the CPU (one query row at a time): an online softmax
 * over the positions (running max M and sum S), rescaling the accumulator when the max grows. With
 * an f16 V cache the accumulator itself is f16, rounded after every fused multiply-add, exactly as
 * ggml's ggml_vec_mad_f16 / ggml_vec_scale_f16 do; with f32 it is f32. */
static void attn_flash(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const oxl_kv_cache *kv = &t->ctx->kv;
    const int D = t->head_dim;
    float *acc = t->scores + (size_t)ith * (size_t)(t->ctx->n_ctx + D);
    uint16_t acc16[1024];
    uint16_t qh[1024];
    int64_t lo, hi;
    oxl_split_range((int64_t)t->ub->n * t->n_head, ith, nth, &lo, &hi);
    for (int64_t item = lo; item < hi; item++) {
        const attn_item it = attn_item_at(t, item, qh);
        const bool v16 = kv->type_v == OXL_TYPE_F16;
        float S = 0.0f, M = -INFINITY;
        memset(acc, 0, (size_t)D * sizeof(float));
        memset(acc16, 0, (size_t)D * sizeof(uint16_t));
        for (int32_t p = 0; p < it.n_kv; p++) {
            const float s = attn_score(t, &it, p);
            float ms = 1.0f, vs = 1.0f;
            if (s > M) {
                ms = expf(M - s);
                M = s;
                for (int d = 0; d < D; d++) {
                    if (v16) {
                        acc16[d] = oxl_fp32_to_fp16(oxl_fp16_to_fp32(acc16[d]) * ms);
                    } else {
                        acc[d] *= ms;
                    }
                }
            } else {
                vs = expf(s - M);
            }
            if (v16) {
                const uint16_t *vp = attn_value(t, &it, p);
                for (int d = 0; d < D; d++) {
                    acc16[d] = oxl_fp32_to_fp16(fmaf(oxl_fp16_to_fp32(vp[d]), vs, oxl_fp16_to_fp32(acc16[d])));
                }
            } else {
                const float *vp = attn_value(t, &it, p);
                for (int d = 0; d < D; d++) {
                    acc[d] = fmaf(vp[d], vs, acc[d]);
                }
            }
            S = S * ms + vs;
        }
        const float s_inv = S == 0.0f ? 0.0f : 1.0f / S;
        for (int d = 0; d < D; d++) {
            it.out[d] = (v16 ? oxl_fp16_to_fp32(acc16[d]) : acc[d]) * s_inv;
        }
    }
}

void oxl_attention(oxl_ctx *ctx, int il, const oxl_ubatch *ub, const float *q, float *out, int n_head,
                   int n_head_kv, int head_dim, float scale, float *scores) {
    attn_task t = {
        .ctx = ctx, .il = il, .ub = ub, .q = q, .out = out, .n_head = n_head,
        .n_head_kv = n_head_kv, .head_dim = head_dim, .scale = scale, .scores = scores,
    };
    oxl_pool_run(ctx->pool, ctx->params.flash_attn == OXL_FLASH_ATTN_OFF ? attn_unfused : attn_flash, &t);
}
