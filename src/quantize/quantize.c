/* Reference quantizers (ggml/src/ggml-quants.c and ggml.c): one row function per format in a
 * table; the arithmetic follows ggml's expression order so the bytes are identical. The formats
 * q8_0, q4_0, f16, bf16 are here; q4_1, q5_0, q5_1, q8_1 in quantize_legacy.c, the K-quants and
 * q8_K in quantize_k.c, iq4_nl in quantize_iq.c, the shared scale searches in quantize_search.c. */
#include "quantize.h"

#include "errors.h"
#include "iq_grid.h"
#include "quantize_impl.h"
#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <math.h>
#include <string.h>

/* quantize_row_q8_0_ref: d = amax/127, q = round(x / d) (roundf: ties away from zero) */
void oxl_quantize_row_q8_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
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
            y[ib].qs[j] = oxl_trunc_i8(roundf(xb[j] * id));
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
            const uint8_t q0 = (uint8_t)oxl_imin(15, oxl_trunc_i8(xb[j] * id + 8.5f));
            const uint8_t q1 = (uint8_t)oxl_imin(15, oxl_trunc_i8(xb[j + OXL_QK_Q4_0 / 2] * id + 8.5f));
            y[ib].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

/* quantize_row_q4_0_impl: with an imatrix, weights qw[j] * sqrt(sigma2 + x[j]^2) where sigma2 is
 * the row's mean square, and the scale search of make_qx_quants */
void oxl_quantize_row_q4_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
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

void oxl_quantize_row_f32(const float *x, void *y, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    memcpy(y, x, (size_t)ne0 * sizeof(float));
}

void oxl_quantize_row_f16(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    uint16_t *y = vy;
    for (int64_t i = 0; i < ne0; i++) {
        y[i] = oxl_fp32_to_fp16(x[i]);
    }
}

void oxl_quantize_row_bf16(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    uint16_t *y = vy;
    for (int64_t i = 0; i < ne0; i++) {
        y[i] = oxl_fp32_to_bf16(x[i]);
    }
}

/* Every format with a reference quantizer, from the spec (generated/oxl_quantizers.inc). */
static const struct {
    oxl_quantize_row_fn row;
    bool uses_imatrix, requires_imatrix;
} oxl_quantizers[OXL_TYPE_COUNT] = {
#define OXL_QUANTIZER(name, NAME, uses_imatrix, requires_imatrix)                                                      \
    [OXL_TYPE_##NAME] = {oxl_quantize_row_##name, uses_imatrix, requires_imatrix},
#include "oxl_quantizers.inc"
#undef OXL_QUANTIZER
};

bool oxl_quantize_supported(oxl_type t) { return (unsigned)t < OXL_TYPE_COUNT && oxl_quantizers[t].row != NULL; }

bool oxl_quantize_uses_imatrix(oxl_type t) { return oxl_quantize_supported(t) && oxl_quantizers[t].uses_imatrix; }

bool oxl_quantize_requires_imatrix(oxl_type t) {
    /* ggml_quantize_requires_imatrix: ggml's quantizers of these assert without one (the spec's
     * imatrix_required) */
    return oxl_quantize_supported(t) && oxl_quantizers[t].requires_imatrix;
}

int oxl_quantize_rows(oxl_type t, const float *x, void *y, int64_t nrows, int64_t ne0, const float *imatrix,
                      oxl_error *err) {
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    if (tr == NULL || !oxl_quantize_supported(t)) {
        return oxl_err_set(err, "quantize: no reference quantizer for type %s (id %d)", tr ? tr->name : "unknown",
                           (int)t);
    }
    if (ne0 <= 0 || nrows < 0 || ne0 % tr->blck_size != 0) {
        return oxl_err_set(err, "quantize %s: row length %lld is not a positive multiple of the block size %lld",
                           tr->name, (long long)ne0, (long long)tr->blck_size);
    }
    if (imatrix == NULL && oxl_quantize_requires_imatrix(t)) {
        return oxl_err_set(err, "quantize %s: this type requires an importance matrix", tr->name);
    }
    if (oxl_iq_grid_uses(t) && oxl_iq_grid_get(t) == NULL) {
        return oxl_err_set(err, "quantize %s: out of memory building the grid tables", tr->name);
    }
    const size_t row_size = oxl_row_size(t, ne0);
    for (int64_t r = 0; r < nrows; r++) {
        const float *xr = x + r * ne0;
        for (int64_t j = 0; j < ne0; j++) {
            if (!isfinite(xr[j])) {
                return oxl_err_set(err, "quantize %s: row %lld column %lld holds %g (not finite)", tr->name,
                                   (long long)r, (long long)j, (double)xr[j]);
            }
        }
        oxl_quantizers[t].row(xr, (uint8_t *)y + (size_t)r * row_size, ne0, imatrix);
    }
    return 0;
}
