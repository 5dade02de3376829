/* Reference quantizers (ggml/src/ggml-quants.c and ggml.c): one row function per format in a
 * table; the arithmetic follows ggml's expression order so the bytes are identical. */
#include "quantize.h"

#include "error.h"
#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <math.h>
#include <string.h>

/* One row of ne0 floats; imatrix is NULL or ne0 weights. */
typedef void (*oxl_quantize_row_fn)(const float *x, void *y, int64_t ne0, const float *imatrix);

/* ggml's MIN/MAX-free helpers */
static inline int oxl_imin(int a, int b) { return a < b ? a : b; }
static inline int oxl_imax(int a, int b) { return a > b ? a : b; }

/* Round to nearest (ties to even) for |v| <= 2^22 by adding 1.5 * 2^23 (ggml's nearest_int). */
static inline int oxl_nearest_int(float v) {
    const float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* quantize_row_q8_0_ref: d = amax/127, q = round(x / d) (roundf: ties away from zero) */
static void oxl_quantize_row_q8_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix; /* ggml's quantize_q8_0 ignores it */
    oxl_block_q8_0 *y = vy;
    for (int64_t ib = 0; ib < ne0 / OXL_QK_Q8_0; ib++) {
        const float *xb = x + ib * OXL_QK_Q8_0;
        float amax = 0.0f;
        for (int j = 0; j < OXL_QK_Q8_0; j++) {
            amax = fmaxf(amax, fabsf(xb[j]));
        }
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[ib].d = oxl_fp32_to_fp16(d);
        for (int j = 0; j < OXL_QK_Q8_0; j++) {
            y[ib].qs[j] = (int8_t)roundf(xb[j] * id);
        }
    }
}

/* quantize_row_q4_0_ref: d = (the value of largest magnitude) / -8, q = trunc(x/d + 8.5) <= 15 */
static void oxl_quantize_row_q4_0_plain(const float *x, oxl_block_q4_0 *y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / OXL_QK_Q4_0; ib++) {
        const float *xb = x + ib * OXL_QK_Q4_0;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < OXL_QK_Q4_0; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[ib].d = oxl_fp32_to_fp16(d);
        for (int j = 0; j < OXL_QK_Q4_0 / 2; j++) {
            const int q0 = oxl_imin(15, (int)(xb[j] * id + 8.5f));
            const int q1 = oxl_imin(15, (int)(xb[j + OXL_QK_Q4_0 / 2] * id + 8.5f));
            y[ib].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

/* make_qx_quants with rmse_type 1 and weights w: levels L in [0, 2 nmax) minimising the weighted
 * error over 19 candidate scales around -nmax/max; returns the scale. */
static float oxl_make_qx_quants(int n, int nmax, const float *x, int8_t *L, const float *w) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < 1e-15f) { /* all zero */
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = oxl_imax(-nmax, oxl_imin(nmax - 1, oxl_nearest_int(iscale * x[i])));
        L[i] = (int8_t)(l + nmax);
        sumlx += w[i] * x[i] * l;
        suml2 += w[i] * l * l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) {
            continue;
        }
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = oxl_imax(-nmax, oxl_imin(nmax - 1, oxl_nearest_int(iscale * x[i])));
            sumlx += w[i] * x[i] * l;
            suml2 += w[i] * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                L[i] = (int8_t)(nmax + oxl_imax(-nmax, oxl_imin(nmax - 1, oxl_nearest_int(iscale * x[i]))));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* quantize_row_q4_0_impl: with an imatrix, weights qw[j] * sqrt(sigma2 + x[j]^2) where sigma2 is
 * the row's mean square, and the scale search of make_qx_quants */
static void oxl_quantize_row_q4_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q4_0 *y = vy;
    if (imatrix == NULL) {
        oxl_quantize_row_q4_0_plain(x, y, ne0);
        return;
    }
    float sum_x2 = 0.0f;
    for (int64_t j = 0; j < ne0; j++) {
        sum_x2 += x[j] * x[j];
    }
    const float sigma2 = sum_x2 / ne0;
    for (int64_t ib = 0; ib < ne0 / OXL_QK_Q4_0; ib++) {
        const float *xb = x + ib * OXL_QK_Q4_0;
        const float *qw = imatrix + ib * OXL_QK_Q4_0;
        float weight[OXL_QK_Q4_0];
        int8_t L[OXL_QK_Q4_0];
        for (int j = 0; j < OXL_QK_Q4_0; j++) {
            weight[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
        }
        y[ib].d = oxl_fp32_to_fp16(oxl_make_qx_quants(OXL_QK_Q4_0, 8, xb, L, weight));
        for (int j = 0; j < OXL_QK_Q4_0 / 2; j++) {
            y[ib].qs[j] = (uint8_t)(L[j] | (L[j + OXL_QK_Q4_0 / 2] << 4));
        }
    }
}

static void oxl_quantize_row_f32(const float *x, void *y, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    memcpy(y, x, (size_t)ne0 * sizeof(float));
}

static void oxl_quantize_row_f16(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    uint16_t *y = vy;
    for (int64_t i = 0; i < ne0; i++) {
        y[i] = oxl_fp32_to_fp16(x[i]);
    }
}

static void oxl_quantize_row_bf16(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    uint16_t *y = vy;
    for (int64_t i = 0; i < ne0; i++) {
        y[i] = oxl_fp32_to_bf16(x[i]);
    }
}

static const struct {
    oxl_quantize_row_fn row;
    bool uses_imatrix;
} oxl_quantizers[OXL_TYPE_COUNT] = {
    [OXL_TYPE_F32] = {oxl_quantize_row_f32, false},
    [OXL_TYPE_F16] = {oxl_quantize_row_f16, false},
    [OXL_TYPE_BF16] = {oxl_quantize_row_bf16, false},
    [OXL_TYPE_Q8_0] = {oxl_quantize_row_q8_0, false},
    [OXL_TYPE_Q4_0] = {oxl_quantize_row_q4_0, true},
};

bool oxl_quantize_supported(oxl_type t) {
    return (unsigned)t < OXL_TYPE_COUNT && oxl_quantizers[t].row != NULL;
}

bool oxl_quantize_uses_imatrix(oxl_type t) {
    return oxl_quantize_supported(t) && oxl_quantizers[t].uses_imatrix;
}

int oxl_quantize_rows(oxl_type t, const float *x, void *y, int64_t nrows, int64_t ne0,
                      const float *imatrix, oxl_error *err) {
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    if (tr == NULL || !oxl_quantize_supported(t)) {
        return oxl_err_set(err, "quantize: no reference quantizer for type %s (id %d)",
                           tr ? tr->name : "unknown", (int)t);
    }
    if (ne0 <= 0 || nrows < 0 || ne0 % tr->blck_size != 0) {
        return oxl_err_set(err, "quantize %s: row length %lld is not a positive multiple of the block size %lld",
                           tr->name, (long long)ne0, (long long)tr->blck_size);
    }
    const size_t row_size = oxl_row_size(t, ne0);
    for (int64_t r = 0; r < nrows; r++) {
        const float *xr = x + r * ne0;
        for (int64_t j = 0; j < ne0; j++) {
            if (!isfinite(xr[j])) {
                return oxl_err_set(err, "quantize %s: row %lld column %lld holds %g (not finite)",
                                   tr->name, (long long)r, (long long)j, (double)xr[j]);
            }
        }
        oxl_quantizers[t].row(xr, (uint8_t *)y + (size_t)r * row_size, ne0, imatrix);
    }
    return 0;
}
