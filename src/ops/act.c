#include "act.h"

#include "kernels.h"
#include "oxl_fp16.h"

#include <math.h>

void oxl_swiglu(float *g, const float *u, int64_t row, int64_t n_rows) {
    /* ggml_vec_swiglu_f32 works on one row at a time (its vector SiLU on groups of 16, libm expf on
     * the rest), so the row boundaries decide which values take which path */
    const oxl_swiglu_fn swiglu = oxl_kernels_get()->swiglu[OXL_TYPE_F32];
    for (int64_t j = 0; j < n_rows; j++) {
        swiglu(row, g + j * row, g + j * row, u + j * row);
    }
}

/* GELU as ggml's CPU backend evaluates it (GGML_GELU_FP16): a 64K-entry fp16 table of the tanh
 * approximation, indexed by the fp16 rounding of the input. Computing the entry on the fly gives the
 * same value without the table. */
static float gelu_fp16(float x) {
    if (x <= -10.0f) {
        return 0.0f;
    }
    if (x >= 10.0f) {
        return x;
    }
    const float xh = oxl_fp16_to_fp32(oxl_fp32_to_fp16(x));
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    const float g = 0.5f * xh * (1.0f + tanhf(sqrt_2_over_pi * xh * (1.0f + 0.044715f * xh * xh)));
    return oxl_fp16_to_fp32(oxl_fp32_to_fp16(g));
}

void oxl_gelu(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        x[i] = gelu_fp16(x[i]);
    }
}

void oxl_geglu(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        g[i] = gelu_fp16(g[i]) * u[i];
    }
}

/* Quick GELU as ggml's CPU backend evaluates it (GGML_GELU_QUICK_FP16, ggml_vec_gelu_quick_f32): the
 * entry of a 64K fp16 table, x * 1 / (1 + exp(-1.702 x)) at the fp16 rounding of x, rounded to fp16; no
 * clamp. */
void oxl_gelu_quick(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float xh = oxl_fp16_to_fp32(oxl_fp32_to_fp16(x[i]));
        const float g = xh * (1.0f / (1.0f + expf(-1.702f * xh)));
        x[i] = oxl_fp16_to_fp32(oxl_fp32_to_fp16(g));
    }
}

/* SiLU as ggml_silu: x / (1 + exp(-x)). */
void oxl_silu(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        x[i] = x[i] / (1.0f + expf(-x[i]));
    }
}

/* ggml_compute_softplus_f32 (ggml-impl.h): the identity above 20. */
static float softplus(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

void oxl_xielu(float *x, int64_t n, float alpha_n, float alpha_p, float beta, float eps) {
    const float an = beta + softplus(alpha_n), ap = softplus(alpha_p);
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        if (v > 0.0f) {
            x[i] = ap * v * v + beta * v;
        } else {
            x[i] = (expm1f(fminf(v, eps)) - v) * an + beta * v;
        }
    }
}

void oxl_add(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        x[i] += y[i];
    }
}

void oxl_add_bias(float *y, const oxl_tensor *b, int64_t d, int64_t n) {
    if (!b || !b->data) {
        return;
    }
    const float *bd = b->data;
    for (int64_t j = 0; j < n; j++) {
        oxl_add(y + j * d, bd, d);
    }
}

void oxl_scale(float *x, int64_t n, float s) {
    for (int64_t i = 0; i < n; i++) {
        x[i] *= s;
    }
}

void oxl_softcap(float *x, int64_t n, float cap) {
    const float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; i++) {
        x[i] = tanhf(x[i] * inv) * cap;
    }
}

void oxl_gaussian_topk(float *x, int64_t d, int64_t n, float std_mul) {
    for (int64_t j = 0; j < n; j++) {
        float *r = x + j * d;
        /* ggml_mean: the row sum in double, rounded, then divided */
        double s = 0.0;
        for (int64_t i = 0; i < d; i++) {
            s += (double)r[i];
        }
        const float mean = (float)s / (float)d;
        /* ggml_sub, ggml_sqr (float), ggml_sum_rows (double), ggml_scale by 1/(d-1), ggml_sqrt */
        double s2 = 0.0;
        for (int64_t i = 0; i < d; i++) {
            const float t = r[i] - mean;
            const float t2 = t * t;
            s2 += (double)t2;
        }
        const float sd = sqrtf((float)s2 * (1.0f / (float)(d - 1)));
        const float sd_scaled = sd * std_mul;
        const float cutoff = mean + sd_scaled;
        for (int64_t i = 0; i < d; i++) {
            const float v = r[i] - cutoff;
            r[i] = v > 0.0f ? v : 0.0f;
        }
    }
}

/* The table entry as ggml's FMA-contracting build computes ggml_gelu_f32 when it fills the table:
 * 1 + 0.044715 x^2 as one fused step, fma(0.044715 x, x, 1). */
static float gelu_fp16_fused(float x) {
    if (x <= -10.0f) {
        return 0.0f;
    }
    if (x >= 10.0f) {
        return x;
    }
    const float xh = oxl_fp16_to_fp32(oxl_fp32_to_fp16(x));
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    const float g = 0.5f * xh * (1.0f + tanhf(sqrt_2_over_pi * xh * fmaf(0.044715f * xh, xh, 1.0f)));
    return oxl_fp16_to_fp32(oxl_fp32_to_fp16(g));
}

void oxl_gelu_fused(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        x[i] = gelu_fp16_fused(x[i]);
    }
}

void oxl_geglu_fused(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        g[i] = gelu_fp16_fused(g[i]) * u[i];
    }
}
