/* Reference quantizers of the legacy 32-element formats q4_1, q5_0, q5_1 and the activation format
 * q8_1 (ggml/src/ggml-quants.c: quantize_row_<type>_ref, and quantize_row_<type>_impl when an
 * importance matrix is given). */
#include "quantize_impl.h"

#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <float.h>
#include <math.h>

/* The row's mean square, sigma2 of ggml's legacy imatrix weights qw[j] * sqrt(sigma2 + x[j]^2). */
static float oxl_row_sigma2(const float *x, int64_t ne0) {
    float sum_x2 = 0.0f;
    for (int64_t j = 0; j < ne0; j++) {
        sum_x2 += x[j] * x[j];
    }
    return sum_x2 / ne0;
}

static void oxl_imatrix_weights(const float *xb, const float *qw, float sigma2, float *weight) {
    for (int j = 0; j < 32; j++) {
        weight[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
    }
}

/* Packs 32 five-bit levels: low nibbles in qs (j | j+16 << 4), fifth bits in the 32-bit qh. */
static void oxl_pack_q5(const uint8_t *L, uint8_t *qs, uint8_t *qh_out) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
        qh |= ((L[j] & 0x10u) >> 4) << j;
        qh |= ((L[j + 16] & 0x10u) >> 4) << (j + 16);
    }
    const uint8_t b[4] = {(uint8_t)qh, (uint8_t)(qh >> 8), (uint8_t)(qh >> 16), (uint8_t)(qh >> 24)};
    memcpy(qh_out, b, 4);
}

/* min/max of a block of 32 (ggml starts from FLT_MAX / -FLT_MAX) */
static void oxl_block_min_max(const float *xb, float *min, float *max) {
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        if (xb[j] < *min) {
            *min = xb[j];
        }
        if (xb[j] > *max) {
            *max = xb[j];
        }
    }
}

/* q4_1: d = (max - min)/15, m = min, q = trunc((x - min)/d + 0.5) <= 15; with an imatrix the
 * scale and minimum of make_qkx3_quants (nmax 15). */
void oxl_quantize_row_q4_1(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q4_1 *y = vy;
    const float sigma2 = imatrix ? oxl_row_sigma2(x, ne0) : 0.0f;
    for (int64_t ib = 0; ib < ne0 / 32; ib++) {
        const float *xb = x + ib * 32;
        uint8_t L[32];
        if (imatrix) {
            float weight[32], min;
            uint8_t Laux[32];
            oxl_imatrix_weights(xb, imatrix + ib * 32, sigma2, weight);
            const float d = oxl_make_qkx3_quants(32, 15, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
            y[ib].d = oxl_fp32_to_fp16(d);
            y[ib].m = oxl_fp32_to_fp16(-min);
        } else {
            float min, max;
            oxl_block_min_max(xb, &min, &max);
            const float d = (max - min) / 15;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            y[ib].d = oxl_fp32_to_fp16(d);
            y[ib].m = oxl_fp32_to_fp16(min);
            for (int j = 0; j < 32; j++) {
                L[j] = (uint8_t)oxl_imin(15, oxl_trunc_i8((xb[j] - min) * id + 0.5f));
            }
        }
        for (int j = 0; j < 16; j++) {
            y[ib].qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
        }
    }
}

/* q5_0: d = (the value of largest magnitude) / -16, q = trunc(x/d + 16.5) <= 31; with an imatrix
 * make_qx_quants (nmax 16). */
void oxl_quantize_row_q5_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q5_0 *y = vy;
    const float sigma2 = imatrix ? oxl_row_sigma2(x, ne0) : 0.0f;
    for (int64_t ib = 0; ib < ne0 / 32; ib++) {
        const float *xb = x + ib * 32;
        uint8_t L[32];
        if (imatrix) {
            float weight[32];
            int8_t Ls[32];
            oxl_imatrix_weights(xb, imatrix + ib * 32, sigma2, weight);
            y[ib].d = oxl_fp32_to_fp16(oxl_make_qx_quants(32, 16, xb, Ls, weight));
            for (int j = 0; j < 32; j++) {
                L[j] = (uint8_t)Ls[j];
            }
        } else {
            float amax = 0.0f, max = 0.0f;
            for (int j = 0; j < 32; j++) {
                if (amax < fabsf(xb[j])) {
                    amax = fabsf(xb[j]);
                    max = xb[j];
                }
            }
            const float d = max / -16;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            y[ib].d = oxl_fp32_to_fp16(d);
            for (int j = 0; j < 32; j++) {
                L[j] = (uint8_t)oxl_imin(31, oxl_trunc_i8(xb[j] * id + 16.5f));
            }
        }
        oxl_pack_q5(L, y[ib].qs, y[ib].qh);
    }
}

/* q5_1: d = (max - min)/31, m = min, q = trunc((x - min)/d + 0.5); with an imatrix
 * make_qkx3_quants (nmax 31). */
void oxl_quantize_row_q5_1(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q5_1 *y = vy;
    const float sigma2 = imatrix ? oxl_row_sigma2(x, ne0) : 0.0f;
    for (int64_t ib = 0; ib < ne0 / 32; ib++) {
        const float *xb = x + ib * 32;
        uint8_t L[32];
        if (imatrix) {
            float weight[32], min;
            uint8_t Laux[32];
            oxl_imatrix_weights(xb, imatrix + ib * 32, sigma2, weight);
            const float d = oxl_make_qkx3_quants(32, 31, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
            y[ib].d = oxl_fp32_to_fp16(d);
            y[ib].m = oxl_fp32_to_fp16(-min);
        } else {
            float min, max;
            oxl_block_min_max(xb, &min, &max);
            const float d = (max - min) / 31;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            y[ib].d = oxl_fp32_to_fp16(d);
            y[ib].m = oxl_fp32_to_fp16(min);
            for (int j = 0; j < 32; j++) {
                L[j] = oxl_trunc_u8((xb[j] - min) * id + 0.5f);
            }
        }
        oxl_pack_q5(L, y[ib].qs, y[ib].qh);
    }
}

/* q8_1 (an activation format; no imatrix): d = amax/127, q = round(x/d) (ties away from zero),
 * s = d * sum(q) (quantize_row_q8_1_ref). */
void oxl_quantize_row_q8_1(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    oxl_block_q8_1 *y = vy;
    for (int64_t ib = 0; ib < ne0 / 32; ib++) {
        const float *xb = x + ib * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            amax = fmaxf(amax, fabsf(xb[j]));
        }
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[ib].d = oxl_fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            y[ib].qs[j] = oxl_trunc_i8(roundf(xb[j] * id));
            sum += y[ib].qs[j];
        }
        y[ib].s = oxl_fp32_to_fp16(sum * d);
    }
}
