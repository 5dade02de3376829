/* Reference quantizers of the K-quant formats (super-blocks of 256) and the activation format q8_K
 * (ggml/src/ggml-quants.c: quantize_row_<type>_ref without an importance matrix, and
 * quantize_row_<type>_impl with one, as quantize_<type> chooses). */
#include "quantize_impl.h"

#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <math.h>

#define OXL_QK_K 256

/* Packs 2-bit levels of a 256 super-block: byte l of each 32-byte group holds levels l, l+32,
 * l+64, l+96 of its 128 (q2_K, q3_K low bits). */
static void oxl_pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < OXL_QK_K; j += 128) {
        for (int l = 0; l < 32; l++) {
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

static float oxl_sum_x2(const float *x, int n) {
    float s = 0.0f;
    for (int l = 0; l < n; l++) {
        s += x[l] * x[l];
    }
    return s;
}

/* ---- q2_K: 16 groups of 16, 2-bit levels, 4-bit scales and mins ---- */

/* Final levels from the stored scales: nearest (x + m)/d in [0, 3]; groups whose scale is 0 keep
 * the levels of the search (ggml's `if (!d) continue`). */
static void oxl_q2_K_requantize(const float *x, const oxl_block_q2_K *b, uint8_t *L) {
    const float dall = oxl_fp16_to_fp32(b->d), mall = oxl_fp16_to_fp32(b->dmin);
    for (int j = 0; j < OXL_QK_K / 16; j++) {
        const float d = dall * (b->scales[j] & 0xF);
        if (d == 0.0f) {
            continue;
        }
        const float dm = mall * (b->scales[j] >> 4);
        for (int ii = 0; ii < 16; ii++) {
            L[16 * j + ii] = (uint8_t)oxl_imax(0, oxl_imin(3, oxl_nearest_int((x[16 * j + ii] + dm) / d)));
        }
    }
}

static void oxl_q2_K_block_ref(const float *x, oxl_block_q2_K *y) {
    uint8_t L[OXL_QK_K], Laux[16];
    float weights[16], mins[OXL_QK_K / 16], scales[OXL_QK_K / 16];
    const float q4scale = 15.0f;
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < OXL_QK_K / 16; j++) {
        for (int l = 0; l < 16; l++) {
            weights[l] = fabsf(x[16 * j + l]);
        }
        scales[j] = oxl_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale) {
            max_scale = scales[j];
        }
        if (mins[j] > max_min) {
            max_min = mins[j];
        }
    }
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < OXL_QK_K / 16; j++) {
            y->scales[j] = (uint8_t)oxl_nearest_int(iscale * scales[j]);
        }
        y->d = oxl_fp32_to_fp16(max_scale / q4scale);
    } else {
        memset(y->scales, 0, sizeof y->scales);
        y->d = oxl_fp32_to_fp16(0.0f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < OXL_QK_K / 16; j++) {
            y->scales[j] |= (uint8_t)((unsigned)oxl_nearest_int(iscale * mins[j]) << 4);
        }
        y->dmin = oxl_fp32_to_fp16(max_min / q4scale);
    } else {
        y->dmin = oxl_fp32_to_fp16(0.0f);
    }
    oxl_q2_K_requantize(x, y, L);
    oxl_pack_2bit(L, y->qs);
}

static void oxl_q2_K_block_imatrix(const float *x, oxl_block_q2_K *y, const float *qw_block) {
    uint8_t L[OXL_QK_K], Laux[16], Ls[OXL_QK_K / 16], Lm[OXL_QK_K / 16];
    float mins[OXL_QK_K / 16], scales[OXL_QK_K / 16], sw[OXL_QK_K / 16], weight[16];
    memset(sw, 0, sizeof sw);
    const float sigma2 = oxl_sum_x2(x, OXL_QK_K) / OXL_QK_K;
    for (int j = 0; j < OXL_QK_K / 16; j++) {
        const float *qw = qw_block + 16 * j;
        for (int l = 0; l < 16; l++) {
            weight[l] = qw[l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
        }
        for (int l = 0; l < 16; l++) {
            sw[j] += weight[l];
        }
        scales[j] =
            oxl_make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
    const float dm = oxl_make_qp_quants(OXL_QK_K / 16, 15, scales, Ls, sw);
    const float mm = oxl_make_qp_quants(OXL_QK_K / 16, 15, mins, Lm, sw);
    y->d = oxl_fp32_to_fp16(dm);
    y->dmin = oxl_fp32_to_fp16(mm);
    for (int j = 0; j < OXL_QK_K / 16; j++) {
        y->scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    }
    oxl_q2_K_requantize(x, y, L);
    oxl_pack_2bit(L, y->qs);
}

void oxl_quantize_row_q2_K(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q2_K *y = vy;
    for (int64_t i = 0; i < ne0 / OXL_QK_K; i++) {
        if (imatrix) {
            oxl_q2_K_block_imatrix(x + i * OXL_QK_K, &y[i], imatrix + i * OXL_QK_K);
        } else {
            oxl_q2_K_block_ref(x + i * OXL_QK_K, &y[i]);
        }
    }
}

/* ---- q3_K: 16 groups of 16, 3-bit levels (2 low bits in qs, the high bit in hmask), 6-bit
 * signed scales packed in 12 bytes ---- */

/* Stores the 6-bit scale l (0..63) of group j. */
static void oxl_q3_K_set_scale(uint8_t *scales, int j, int l) {
    if (j < 8) {
        scales[j] = (uint8_t)(l & 0xF);
    } else {
        scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
    }
    scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
}

/* Final levels from the stored scales, then the hmask/qs packing. */
static void oxl_q3_K_finish(const float *x, oxl_block_q3_K *y, int8_t *L) {
    const float dall = oxl_fp16_to_fp32(y->d);
    for (int j = 0; j < OXL_QK_K / 16; j++) {
        int8_t sc = (int8_t)(j < 8 ? y->scales[j] & 0xF : y->scales[j - 8] >> 4);
        sc = (int8_t)((sc | (((y->scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
        const float d = dall * sc;
        if (d == 0.0f) {
            continue;
        }
        for (int ii = 0; ii < 16; ii++) {
            const int l = oxl_imax(-4, oxl_imin(3, oxl_nearest_int(x[16 * j + ii] / d)));
            L[16 * j + ii] = (int8_t)(l + 4);
        }
    }
    memset(y->hmask, 0, sizeof y->hmask);
    int m = 0;
    uint8_t hm = 1;
    uint8_t Lu[OXL_QK_K];
    for (int j = 0; j < OXL_QK_K; j++) {
        int l = L[j];
        if (l > 3) {
            y->hmask[m] |= hm;
            l -= 4;
        }
        Lu[j] = (uint8_t)l;
        if (++m == OXL_QK_K / 8) {
            m = 0;
            hm = (uint8_t)(hm << 1);
        }
    }
    oxl_pack_2bit(Lu, y->qs);
}

static void oxl_q3_K_block_ref(const float *x, oxl_block_q3_K *y) {
    int8_t L[OXL_QK_K];
    float scales[OXL_QK_K / 16];
    float max_scale = 0.0f, amax = 0.0f;
    for (int j = 0; j < OXL_QK_K / 16; j++) {
        scales[j] = oxl_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
        const float scale = fabsf(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }
    memset(y->scales, 0, sizeof y->scales);
    if (max_scale != 0.0f) {
        const float iscale = -32.0f / max_scale;
        for (int j = 0; j < OXL_QK_K / 16; j++) {
            const int8_t l = (int8_t)oxl_nearest_int(iscale * scales[j]);
            oxl_q3_K_set_scale(y->scales, j, oxl_imax(-32, oxl_imin(31, l)) + 32);
        }
        y->d = oxl_fp32_to_fp16(1 / iscale);
    } else {
        y->d = oxl_fp32_to_fp16(0.0f);
    }
    oxl_q3_K_finish(x, y, L);
}

static void oxl_q3_K_block_imatrix(const float *x, oxl_block_q3_K *y, const float *qw_block) {
    int8_t L[OXL_QK_K], Ls[OXL_QK_K / 16];
    float scales[OXL_QK_K / 16], weight[16], sw[OXL_QK_K / 16];
    const float sigma2 = 2 * oxl_sum_x2(x, OXL_QK_K) / OXL_QK_K;
    for (int j = 0; j < OXL_QK_K / 16; j++) {
        const float *qw = qw_block + 16 * j;
        for (int l = 0; l < 16; l++) {
            weight[l] = qw[l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
        }
        float sumw = 0.0f;
        for (int l = 0; l < 16; l++) {
            sumw += weight[l];
        }
        sw[j] = sumw;
        scales[j] = oxl_make_qx_quants(16, 4, x + 16 * j, L + 16 * j, weight);
    }
    memset(y->scales, 0, sizeof y->scales);
    const float d_block = oxl_make_qx_quants(OXL_QK_K / 16, 32, scales, Ls, sw);
    for (int j = 0; j < OXL_QK_K / 16; j++) {
        oxl_q3_K_set_scale(y->scales, j, Ls[j]);
    }
    y->d = oxl_fp32_to_fp16(d_block);
    oxl_q3_K_finish(x, y, L);
}

void oxl_quantize_row_q3_K(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q3_K *y = vy;
    for (int64_t i = 0; i < ne0 / OXL_QK_K; i++) {
        if (imatrix) {
            oxl_q3_K_block_imatrix(x + i * OXL_QK_K, &y[i], imatrix + i * OXL_QK_K);
        } else {
            oxl_q3_K_block_ref(x + i * OXL_QK_K, &y[i]);
        }
    }
}

/* ---- q4_K and q5_K: 8 groups of 32, 6-bit scales and mins packed in 12 bytes ---- */

static void oxl_k4_set_scale_min(uint8_t *scales, int j, uint8_t ls, uint8_t lm) {
    if (j < 4) {
        scales[j] = ls;
        scales[j + 4] = lm;
    } else {
        scales[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
        scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
        scales[j - 0] |= (uint8_t)((lm >> 4) << 6);
    }
}

static void oxl_k4_get_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

/* The group scales and mins of a q4_K/q5_K super-block with levels in [0, nmax] (15 or 31): the
 * search of the reference path (make_qkx2_quants, then scales rounded to 6 bits of the largest) or
 * of the imatrix path (make_qkx3_quants, then make_qp_quants over the scales). Stores d, dmin and
 * the 12 scale bytes, then the final levels in L. */
static void oxl_k45_block(const float *x, const float *qw_block, int nmax, uint16_t *d_out, uint16_t *dmin_out,
                          uint8_t *packed, uint8_t *L) {
    uint8_t Laux[32];
    float weights[32], mins[OXL_QK_K / 32], scales[OXL_QK_K / 32];
    if (qw_block == NULL) {
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < OXL_QK_K / 32; j++) {
            const float av_x = sqrtf(oxl_sum_x2(x + 32 * j, 32) / 32);
            for (int l = 0; l < 32; l++) {
                weights[l] = av_x + fabsf(x[32 * j + l]);
            }
            scales[j] = oxl_make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                             nmax == 15 ? -1.0f : -0.5f, 0.1f, nmax == 15 ? 20 : 15, false);
            if (scales[j] > max_scale) {
                max_scale = scales[j];
            }
            if (mins[j] > max_min) {
                max_min = mins[j];
            }
        }
        const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
        const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        for (int j = 0; j < OXL_QK_K / 32; j++) {
            const uint8_t ls = (uint8_t)oxl_nearest_int(inv_scale * scales[j]);
            const uint8_t lm = (uint8_t)oxl_nearest_int(inv_min * mins[j]);
            oxl_k4_set_scale_min(packed, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
        }
        *d_out = oxl_fp32_to_fp16(max_scale / 63.0f);
        *dmin_out = oxl_fp32_to_fp16(max_min / 63.0f);
    } else {
        uint8_t Ls[OXL_QK_K / 32], Lm[OXL_QK_K / 32];
        float sw[OXL_QK_K / 32];
        const float sigma2 = 2 * oxl_sum_x2(x, OXL_QK_K) / OXL_QK_K;
        for (int j = 0; j < OXL_QK_K / 32; j++) {
            const float *qw = qw_block + 32 * j;
            for (int l = 0; l < 32; l++) {
                weights[l] = qw[l] * sqrtf(sigma2 + x[32 * j + l] * x[32 * j + l]);
            }
            float sumw = 0.0f;
            for (int l = 0; l < 32; l++) {
                sumw += weights[l];
            }
            sw[j] = sumw;
            scales[j] = oxl_make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f,
                                             36, false);
        }
        const float d_block = oxl_make_qp_quants(OXL_QK_K / 32, 63, scales, Ls, sw);
        const float m_block = oxl_make_qp_quants(OXL_QK_K / 32, 63, mins, Lm, sw);
        for (int j = 0; j < OXL_QK_K / 32; j++) {
            /* make_qp_quants keeps levels <= 63 except a negative one, which wraps as a byte: q5_K
             * clamps that to 63, q4_K stores it as it is */
            const bool clamp = nmax == 31;
            oxl_k4_set_scale_min(packed, j, clamp && Ls[j] > 63 ? 63 : Ls[j], clamp && Lm[j] > 63 ? 63 : Lm[j]);
        }
        *d_out = oxl_fp32_to_fp16(d_block);
        *dmin_out = oxl_fp32_to_fp16(m_block);
    }
    const float dall = oxl_fp16_to_fp32(*d_out), mall = oxl_fp16_to_fp32(*dmin_out);
    for (int j = 0; j < OXL_QK_K / 32; j++) {
        uint8_t sc, m;
        oxl_k4_get_scale_min(j, packed, &sc, &m);
        const float d = dall * sc;
        if (d == 0.0f) {
            continue;
        }
        const float dm = mall * m;
        for (int ii = 0; ii < 32; ii++) {
            L[32 * j + ii] = (uint8_t)oxl_imax(0, oxl_imin(nmax, oxl_nearest_int((x[32 * j + ii] + dm) / d)));
        }
    }
}

void oxl_quantize_row_q4_K(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q4_K *y = vy;
    for (int64_t i = 0; i < ne0 / OXL_QK_K; i++) {
        uint8_t L[OXL_QK_K];
        memset(y[i].scales, 0, sizeof y[i].scales);
        oxl_k45_block(x + i * OXL_QK_K, imatrix ? imatrix + i * OXL_QK_K : NULL, 15, &y[i].d, &y[i].dmin, y[i].scales,
                      L);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < OXL_QK_K; j += 64) {
            for (int l = 0; l < 32; l++) {
                q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
            }
            q += 32;
        }
    }
}

void oxl_quantize_row_q5_K(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q5_K *y = vy;
    for (int64_t i = 0; i < ne0 / OXL_QK_K; i++) {
        uint8_t L[OXL_QK_K];
        memset(y[i].scales, 0, sizeof y[i].scales);
        oxl_k45_block(x + i * OXL_QK_K, imatrix ? imatrix + i * OXL_QK_K : NULL, 31, &y[i].d, &y[i].dmin, y[i].scales,
                      L);
        uint8_t *qh = y[i].qh, *ql = y[i].qs;
        memset(qh, 0, sizeof y[i].qh);
        uint8_t m1 = 1, m2 = 2;
        for (int n = 0; n < OXL_QK_K; n += 64) {
            for (int j = 0; j < 32; j++) {
                int l1 = L[n + j], l2 = L[n + j + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
            ql += 32;
        }
    }
}

/* ---- q6_K: 16 groups of 16, 6-bit levels (4 low bits in ql, 2 high in qh), int8 scales ---- */

void oxl_quantize_row_q6_K(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_q6_K *y = vy;
    for (int64_t i = 0; i < ne0 / OXL_QK_K; i++, x += OXL_QK_K) {
        int8_t L[OXL_QK_K];
        float scales[OXL_QK_K / 16];
        float max_scale = 0.0f, max_abs_scale = 0.0f;
        for (int ib = 0; ib < OXL_QK_K / 16; ib++) {
            /* the imatrix path weights by the importance alone (no sigma2 term) */
            const float *qw = imatrix ? imatrix + OXL_QK_K * i + 16 * ib : NULL;
            const float scale = oxl_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, qw);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) {
                max_abs_scale = fabsf(scale);
                max_scale = scale;
            }
        }
        if (max_abs_scale < OXL_GROUP_MAX_EPS) {
            memset(&y[i], 0, sizeof y[i]);
            y[i].d = oxl_fp32_to_fp16(0.0f);
            continue;
        }
        const float iscale = -128.0f / max_scale;
        y[i].d = oxl_fp32_to_fp16(1 / iscale);
        for (int ib = 0; ib < OXL_QK_K / 16; ib++) {
            y[i].scales[ib] = (int8_t)oxl_imin(127, oxl_nearest_int(iscale * scales[ib]));
        }
        const float dall = oxl_fp16_to_fp32(y[i].d);
        for (int j = 0; j < OXL_QK_K / 16; j++) {
            const float d = dall * y[i].scales[j];
            if (d == 0.0f) {
                continue;
            }
            for (int ii = 0; ii < 16; ii++) {
                const int l = oxl_imax(-32, oxl_imin(31, oxl_nearest_int(x[16 * j + ii] / d)));
                L[16 * j + ii] = (int8_t)(l + 32);
            }
        }
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < OXL_QK_K; j += 128) {
            for (int l = 0; l < 32; l++) {
                const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l + 0] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                  ((L[j + l + 96] >> 4) << 6));
            }
            ql += 64;
            qh += 32;
        }
    }
}

/* ---- q8_K (activation format; no imatrix): d = max / -127 as a float, q = nearest(x/d) <= 127,
 * bsums = sums of 16 levels. An all-zero block is all zero (ggml leaves its bsums unwritten). ---- */

void oxl_quantize_row_q8_K(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    oxl_block_q8_K *y = vy;
    for (int64_t i = 0; i < ne0 / OXL_QK_K; i++, x += OXL_QK_K) {
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < OXL_QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < OXL_QK_K; j++) {
            y[i].qs[j] = (int8_t)oxl_imin(127, oxl_nearest_int(iscale * x[j]));
        }
        for (int j = 0; j < OXL_QK_K / 16; j++) {
            int sum = 0;
            for (int ii = 0; ii < 16; ii++) {
                sum += y[i].qs[j * 16 + ii];
            }
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}
