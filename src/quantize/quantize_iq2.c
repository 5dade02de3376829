/* Reference quantizers of the 2-bit I-quants (ggml/src/ggml-quants.c quantize_row_iq2_xxs_impl,
 * quantize_row_iq2_xs_impl, quantize_row_iq2_s_impl): groups of 8 magnitudes rounded to levels
 * l in 0..2 (values 2l+1) that must form a grid entry, the nearest entry by weighted distance when
 * they do not (iq_grid.h), signs kept apart, a scale per group of 32 (iq2_xxs) or 16 (iq2_xs,
 * iq2_s) chosen by weighted least squares among trial scales, then the scales as 4-bit multiples of
 * the super-block's largest / 31. The arithmetic follows ggml's expression order so the bytes are
 * identical. iq2_xxs and iq2_xs need importance weights: without them (ggml asserts) the row is
 * quantized with unit weights. */
#include "iq_grid.h"
#include "quantize_impl.h"

#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <math.h>
#include <string.h>

#define OXL_IQ2_KMAXQ 3
#define OXL_IQ2_S_GROUP_MAX_EPS 1e-8f

/* The lattice index of the levels L[0..8) (each 0..3). */
static inline int oxl_iq2_index(const int8_t *L) {
    int u = 0;
    for (int i = 0; i < 8; i++) {
        u |= L[i] << (2 * i);
    }
    return u;
}

/* Levels of the 8 magnitudes xval at inverse scale id (nearest_int(0.5 (id x - 1)) clamped to 0..2)
 * into L; when they are no grid entry, the levels of the grid entry nearest to xval at `scale`
 * (weights waux) replace them. Returns whether the rounded levels were on the grid. */
static bool oxl_iq2_round_group(const oxl_iq_grid *g, const float *xval, const float *waux, float id, float scale,
                                int8_t *L) {
    for (int i = 0; i < 8; i++) {
        const int l = oxl_nearest_int(0.5f * (id * xval[i] - 1));
        L[i] = (int8_t)oxl_imax(0, oxl_imin(OXL_IQ2_KMAXQ - 1, l));
    }
    const int u = oxl_iq2_index(L);
    if (g->map[u] >= 0) {
        return true;
    }
    const uint16_t *nb = g->neighbours - g->map[u] - 1;
    int8_t Lb[8];
    if (oxl_iq_grid_best_neighbour(nb, g->grid, xval, waux, scale, Lb) >= 0) {
        memcpy(L, Lb, 8);
    }
    return false;
}

/* sum w x q and sum w q^2 over n values with q = 2L + 1 */
static void oxl_iq2_sums(int n, const float *weight, const float *xval, const int8_t *L, float *sumqx, float *sumq2) {
    float sx = 0, s2 = 0;
    for (int i = 0; i < n; i++) {
        const float w = weight[i];
        const float q = (float)(2 * L[i] + 1);
        sx += w * xval[i] * q;
        s2 += w * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* Signs of the 8 values xb (bit i: xb[i] < 0) and their magnitudes in xval; with even_parity (iq2_xxs,
 * iq2_xs store 7 sign bits and an even count) an odd count flips the value of least w x^2 too. */
static uint8_t oxl_iq2_signs(const float *xb, const float *weight, bool even_parity, float *xval) {
    int nflip = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; i++) {
        if (xb[i] >= 0) {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            nflip++;
            s |= (uint8_t)(1 << i);
        }
    }
    if (even_parity && nflip % 2) {
        int imin = 0;
        float min = weight[imin] * xb[imin] * xb[imin];
        for (int i = 1; i < 8; i++) {
            const float ax = weight[i] * xb[i] * xb[i];
            if (ax < min) {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= (uint8_t)(1 << imin);
    }
    return even_parity ? s & 127 : s;
}

/* The weighted magnitudes' group of 32 of iq2_xxs: false for a group ggml skips (all zero, or no
 * positive first scale), else true with its scale (of either sign) and levels L (on the grid). */
static bool oxl_iq2_xxs_group(const oxl_iq_grid *g, const float *xval, const float *weight, const float *waux,
                              int8_t *L, float *scale_out) {
    float max = xval[0];
    for (int i = 1; i < 32; i++) {
        max = fmaxf(max, xval[i]);
    }
    memset(L, 0, 32);
    if (max < OXL_GROUP_MAX_EPS) {
        return false;
    }
    uint8_t Lq[32];
    float scale = oxl_make_qp_quants(32, OXL_IQ2_KMAXQ + 1, xval, Lq, weight);
    const float eff_max = scale * OXL_IQ2_KMAXQ;
    if (eff_max <= 0) {
        return false;
    }
    for (int i = 0; i < 32; i++) {
        L[i] = (int8_t)Lq[i];
    }
    float best = 0;
    int8_t Laux[32];
    for (int is = -6; is <= 6; is++) {
        const float id = (2 * OXL_IQ2_KMAXQ - 1 + is * 0.1f) / eff_max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 4; k++) {
            oxl_iq2_round_group(g, xval + 8 * k, waux + 8 * k, id, this_scale, Laux + 8 * k);
        }
        float sumqx, sumq2;
        oxl_iq2_sums(32, weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 32);
        }
    }
    if (scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 4; k++) {
            oxl_iq2_round_group(g, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k);
        }
        float sumqx, sumq2;
        oxl_iq2_sums(32, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0) {
            scale = sumqx / sumq2;
        }
    }
    *scale_out = scale;
    return true;
}

/* The weighted magnitudes' group of 16 of iq2_xs and iq2_s: false when its largest is below eps
 * (all zero), else true with its scale (of either sign) and levels L (on the grid). */
static bool oxl_iq2_group16(const oxl_iq_grid *g, const float *xval, const float *weight, const float *waux, float eps,
                            int8_t *L, float *scale_out) {
    float max = xval[0];
    for (int i = 1; i < 16; i++) {
        max = fmaxf(max, xval[i]);
    }
    memset(L, 0, 16);
    if (max < eps) {
        return false;
    }
    float best = 0;
    float scale = max / (2 * OXL_IQ2_KMAXQ - 1);
    bool on_grid[2] = {true, true}, on_grid_aux[2];
    int8_t Laux[16];
    for (int is = -9; is <= 9; is++) {
        const float id = (2 * OXL_IQ2_KMAXQ - 1 + is * 0.1f) / max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 2; k++) {
            on_grid_aux[k] = oxl_iq2_round_group(g, xval + 8 * k, waux + 8 * k, id, this_scale, Laux + 8 * k);
        }
        float sumqx, sumq2;
        oxl_iq2_sums(16, weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 16);
            on_grid[0] = on_grid_aux[0];
            on_grid[1] = on_grid_aux[1];
        }
    }
    if ((!on_grid[0] || !on_grid[1]) && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 2; k++) {
            if (!on_grid[k]) {
                oxl_iq2_round_group(g, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k);
            }
        }
        float sumqx, sumq2;
        oxl_iq2_sums(16, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0) {
            scale = sumqx / sumq2;
        }
    }
    *scale_out = scale;
    return true;
}

/* The grid entry of levels L (on the grid by construction; entry 0 otherwise, where ggml aborts). */
static int oxl_iq2_entry(const oxl_iq_grid *g, const int8_t *L) {
    const int e = g->map[oxl_iq2_index(L)];
    return e >= 0 ? e : 0;
}

/* The 4-bit code of a group scale: nearest_int(0.5 (scale / d - 1)) in 0..15 */
static inline int oxl_iq2_scale_code(float id, float scale) {
    return oxl_imax(0, oxl_imin(15, oxl_nearest_int(0.5f * (id * scale - 1))));
}

void oxl_quantize_row_iq2_xxs(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_iq2_xxs *y = vy;
    const int64_t nbl = ne0 / OXL_QK_IQ2_XXS;
    const oxl_iq_grid *g = oxl_iq_grid_get(OXL_TYPE_IQ2_XXS);
    if (g == NULL) {
        memset(y, 0, (size_t)nbl * sizeof *y);
        return;
    }
    for (int64_t ibl = 0; ibl < nbl; ibl++) {
        const float *xbl = x + OXL_QK_IQ2_XXS * ibl;
        uint32_t q2[2 * (OXL_QK_IQ2_XXS / 32)] = {0};
        float scales[OXL_QK_IQ2_XXS / 32];
        float max_scale = 0;
        float sumx2 = 0;
        for (int i = 0; i < OXL_QK_IQ2_XXS; i++) {
            sumx2 += xbl[i] * xbl[i];
        }
        const float sigma2 = sumx2 / OXL_QK_IQ2_XXS;
        for (int ib = 0; ib < OXL_QK_IQ2_XXS / 32; ib++) {
            const float *xb = xbl + 32 * ib;
            float weight[32], waux[32], xval[32];
            int8_t L[32];
            uint8_t block_signs[4];
            for (int i = 0; i < 32; i++) {
                const float qw = imatrix ? imatrix[OXL_QK_IQ2_XXS * ibl + 32 * ib + i] : 1.0f;
                weight[i] = qw * sqrtf(sigma2 + xb[i] * xb[i]);
            }
            for (int i = 0; i < 32; i++) {
                waux[i] = sqrtf(weight[i]);
            }
            for (int k = 0; k < 4; k++) {
                block_signs[k] = oxl_iq2_signs(xb + 8 * k, weight + 8 * k, true, xval + 8 * k);
            }
            float scale;
            if (!oxl_iq2_xxs_group(g, xval, weight, waux, L, &scale)) {
                scales[ib] = 0;
                continue;
            }
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 4; k++) {
                    block_signs[k] = (uint8_t)(~block_signs[k] & 127);
                }
            }
            for (int k = 0; k < 4; k++) {
                q2[2 * ib + 0] |= (uint32_t)oxl_iq2_entry(g, L + 8 * k) << (8 * k);
                q2[2 * ib + 1] |= (uint32_t)block_signs[k] << (7 * k);
            }
            scales[ib] = scale;
            max_scale = fmaxf(max_scale, scale);
        }
        y[ibl].d = oxl_fp32_to_fp16(0.f);
        if (!max_scale) {
            memset(y[ibl].qs, 0, sizeof y[ibl].qs);
            continue;
        }
        const float d = max_scale / 31;
        y[ibl].d = oxl_fp32_to_fp16(d);
        const float id = 1 / d;
        for (int ib = 0; ib < OXL_QK_IQ2_XXS / 32; ib++) {
            q2[2 * ib + 1] |= (uint32_t)oxl_iq2_scale_code(id, scales[ib]) << 28;
        }
        memcpy(y[ibl].qs, q2, sizeof y[ibl].qs);
    }
}

/* The 16-bit words (iq2_xs: grid index | 7 sign bits << 9) or bytes (iq2_s) of a super-block of
 * groups of 16: one group's scale and levels each, the signs kept apart; shared by iq2_xs and iq2_s. */
typedef struct {
    float scale;      /* >= 0 */
    int entry[2];     /* grid entries of the two groups of 8 */
    uint8_t signs[2]; /* their sign bits */
} oxl_iq2_group16_code;

/* Quantizes super-block xbl (iq2_xs: even_parity, sigma2 = mean square; iq2_s: 8 sign bits,
 * sigma2 = twice it, and x^2 + sigma2 / 4 weights without an imatrix) into codes[16]; returns the
 * largest group scale (0 when every group is zero: then codes are all zero). */
static float oxl_iq2_super16(const oxl_iq_grid *g, const float *xbl, const float *qwbl, bool xs,
                             oxl_iq2_group16_code codes[16]) {
    float sumx2 = 0;
    for (int i = 0; i < 256; i++) {
        sumx2 += xbl[i] * xbl[i];
    }
    const float sigma2 = xs ? sumx2 / 256 : 2 * sumx2 / 256;
    float max_scale = 0;
    for (int ib = 0; ib < 16; ib++) {
        const float *xb = xbl + 16 * ib;
        float weight[16], waux[16], xval[16];
        int8_t L[16];
        uint8_t block_signs[2];
        if (qwbl != NULL) {
            for (int i = 0; i < 16; i++) {
                weight[i] = qwbl[16 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
            }
        } else if (xs) {
            for (int i = 0; i < 16; i++) {
                weight[i] = 1.0f * sqrtf(sigma2 + xb[i] * xb[i]);
            }
        } else {
            for (int i = 0; i < 16; i++) {
                weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
            }
        }
        for (int i = 0; i < 16; i++) {
            waux[i] = sqrtf(weight[i]);
        }
        for (int k = 0; k < 2; k++) {
            block_signs[k] = oxl_iq2_signs(xb + 8 * k, weight + 8 * k, xs, xval + 8 * k);
        }
        memset(&codes[ib], 0, sizeof codes[ib]);
        float scale;
        if (!oxl_iq2_group16(g, xval, weight, waux, xs ? OXL_GROUP_MAX_EPS : OXL_IQ2_S_GROUP_MAX_EPS, L, &scale)) {
            continue;
        }
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 2; k++) {
                block_signs[k] = (uint8_t)(xs ? ~block_signs[k] & 127 : ~block_signs[k]);
            }
        }
        for (int k = 0; k < 2; k++) {
            codes[ib].entry[k] = oxl_iq2_entry(g, L + 8 * k);
            codes[ib].signs[k] = block_signs[k];
        }
        codes[ib].scale = scale;
        max_scale = fmaxf(max_scale, scale);
    }
    return max_scale;
}

void oxl_quantize_row_iq2_xs(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_iq2_xs *y = vy;
    const int64_t nbl = ne0 / OXL_QK_IQ2_XS;
    const oxl_iq_grid *g = oxl_iq_grid_get(OXL_TYPE_IQ2_XS);
    if (g == NULL) {
        memset(y, 0, (size_t)nbl * sizeof *y);
        return;
    }
    for (int64_t ibl = 0; ibl < nbl; ibl++) {
        oxl_iq2_group16_code codes[16];
        const float max_scale =
            oxl_iq2_super16(g, x + OXL_QK_IQ2_XS * ibl, imatrix ? imatrix + OXL_QK_IQ2_XS * ibl : NULL, true, codes);
        memset(&y[ibl], 0, sizeof y[ibl]);
        if (!max_scale) {
            continue;
        }
        for (int ib = 0; ib < 16; ib++) {
            for (int k = 0; k < 2; k++) {
                y[ibl].qs[2 * ib + k] = (uint16_t)(codes[ib].entry[k] | codes[ib].signs[k] << 9);
            }
        }
        const float d = max_scale / 31;
        y[ibl].d = oxl_fp32_to_fp16(d);
        const float id = 1 / d;
        for (int ib = 0; ib < 16; ib++) {
            const int l = oxl_iq2_scale_code(id, codes[ib].scale);
            y[ibl].scales[ib / 2] |= (uint8_t)(ib % 2 == 0 ? l : l << 4);
        }
    }
}

void oxl_quantize_row_iq2_s(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_iq2_s *y = vy;
    const int64_t nbl = ne0 / OXL_QK_IQ2_S;
    const oxl_iq_grid *g = oxl_iq_grid_get(OXL_TYPE_IQ2_S);
    if (g == NULL) {
        memset(y, 0, (size_t)nbl * sizeof *y);
        return;
    }
    for (int64_t ibl = 0; ibl < nbl; ibl++) {
        oxl_iq2_group16_code codes[16];
        const float max_scale =
            oxl_iq2_super16(g, x + OXL_QK_IQ2_S * ibl, imatrix ? imatrix + OXL_QK_IQ2_S * ibl : NULL, false, codes);
        memset(&y[ibl], 0, sizeof y[ibl]);
        /* every group's grid entry and signs are stored even when all scales are zero */
        for (int ib = 0; ib < 16; ib++) {
            for (int k = 0; k < 2; k++) {
                const int i8 = 2 * ib + k;
                y[ibl].qs[i8] = (uint8_t)(codes[ib].entry[k] & 255);
                y[ibl].qh[i8 / 4] |= (uint8_t)((codes[ib].entry[k] >> 8) << (2 * (i8 % 4)));
                y[ibl].qs[OXL_QK_IQ2_S / 8 + i8] = codes[ib].signs[k];
            }
        }
        if (!max_scale) {
            continue;
        }
        const float d = max_scale / 31;
        y[ibl].d = oxl_fp32_to_fp16(d * 0.9875f);
        const float id = 1 / d;
        for (int ib = 0; ib < 16; ib++) {
            const int l = oxl_iq2_scale_code(id, codes[ib].scale);
            y[ibl].scales[ib / 2] |= (uint8_t)(ib % 2 == 0 ? l : l << 4);
        }
    }
}
