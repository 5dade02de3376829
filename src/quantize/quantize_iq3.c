/* Reference quantizers of IQ3_XXS and IQ3_S (ggml/src/ggml-quants.c: quantize_row_iq3_xxs_impl and
 * quantize_row_iq3_s_impl, through quantize_iq3_xxs / quantize_iq3_s with or without importance
 * weights). Each sub-block of 32 values is quantized to odd levels 2l + 1 (l in 0..7) in groups of
 * 4 that must be points of the format's grid (src/quantize/iq3_grid.h), with sign bits apart and a
 * 4-bit sub-block scale under the block's fp16 scale. The arithmetic follows ggml's expression
 * order so the bytes are identical. Where ggml aborts (a grid search that finds no point, which
 * only weights overflowing to infinity reach), these take the first neighbour instead. */
#include "quantize_impl.h"

#include "iq3_grid.h"
#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define OXL_IQ3_KMAXQ 8
/* IQ3_XXS: below this a sub-block's largest value counts as zero (ggml's GROUP_MAX_EPS_IQ3_XXS) */
#define OXL_GROUP_MAX_EPS_IQ3_XXS 1e-8f

/* iq3_find_best_neighbour: among the grid points listed for an off-grid quadruple, the one nearest
 * x at this scale in the weighted squared distance; L gets its levels. */
static int oxl_iq3_best_neighbour(const oxl_iq3_grid *g, const uint16_t *neighbours, const float *xval,
                                  const float *weight, float scale, int8_t *L) {
    const int num = neighbours[0];
    float best_d2 = FLT_MAX;
    int grid_index = -1;
    for (int j = 1; j <= num; j++) {
        const int8_t *pg = g->points[neighbours[j]];
        float d2 = 0;
        for (int i = 0; i < 4; i++) {
            const float q = pg[i];
            const float diff = scale * q - xval[i];
            d2 += weight[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            grid_index = neighbours[j];
        }
    }
    if (grid_index < 0) {
        grid_index = neighbours[1];
    }
    const int8_t *pg = g->points[grid_index];
    for (int i = 0; i < 4; i++) {
        L[i] = (int8_t)((pg[i] - 1) / 2);
    }
    return grid_index;
}

/* The grid index of the quadruple of levels L[0..4), or, off the grid, of its best neighbour at
 * this scale (L then gets that neighbour's levels). *on_grid says which. */
static int oxl_iq3_grid_index(const oxl_iq3_grid *g, const float *xval, const float *waux, float scale, int8_t *L,
                              bool *on_grid) {
    int u = 0;
    for (int i = 0; i < 4; i++) {
        u |= L[i] << (3 * i);
    }
    const int grid_index = g->map[u];
    *on_grid = grid_index >= 0;
    if (grid_index >= 0) {
        return grid_index;
    }
    return oxl_iq3_best_neighbour(g, g->neighbours - g->map[u] - 1, xval, waux, scale, L);
}

static void oxl_iq3_levels(float id, const float *xval, int8_t *L) {
    for (int i = 0; i < 4; i++) {
        const int l = oxl_nearest_int(0.5f * (id * xval[i] - 1));
        L[i] = (int8_t)oxl_imax(0, oxl_imin(OXL_IQ3_KMAXQ - 1, l));
    }
}

static void oxl_iq3_sums(const float *weight, const float *xval, const int8_t *L, float *sumqx, float *sumq2) {
    float sx = 0, s2 = 0;
    for (int i = 0; i < 32; i++) {
        const float w = weight[i];
        const float q = 2 * L[i] + 1;
        sx += w * xval[i] * q;
        s2 += w * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* The scale search of one sub-block of 32 (|x| in xval, weights, their square roots in waux, the
 * largest value max): 2 ntry + 1 trial inverse scales (15 + 0.2 is) / max, each giving levels
 * nearest 0.5 (id x - 1) snapped to the grid, the best by sum(w q x)^2 / sum(w q^2); then, if a
 * group was off the grid, the levels again at the best scale (IQ3_XXS: only the groups that were
 * off it; IQ3_S: all) and a last least-squares scale. Returns the scale, L the levels. */
static float oxl_iq3_search(const oxl_iq3_grid *g, const float *xval, const float *weight, const float *waux, float max,
                            int ntry, bool xxs, int8_t *L) {
    int8_t Laux[32];
    bool is_on_grid[8], is_on_grid_aux[8];
    float best = 0;
    float scale = max / (2 * OXL_IQ3_KMAXQ - 1);
    for (int k = 0; k < 8; k++) {
        is_on_grid[k] = xxs;
    }
    for (int is = -ntry; is <= ntry; is++) {
        const float id = (2 * OXL_IQ3_KMAXQ - 1 + is * 0.2f) / max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 8; k++) {
            oxl_iq3_levels(id, xval + 4 * k, Laux + 4 * k);
            oxl_iq3_grid_index(g, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k, &is_on_grid_aux[k]);
        }
        float sumqx, sumq2;
        oxl_iq3_sums(weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 32);
            memcpy(is_on_grid, is_on_grid_aux, sizeof is_on_grid);
        }
    }
    int n_not_ongrid = 0;
    for (int k = 0; k < 8; k++) {
        n_not_ongrid += !is_on_grid[k];
    }
    if (n_not_ongrid > 0 && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 8; k++) {
            if (xxs && is_on_grid[k]) {
                continue;
            }
            int8_t Lk[4];
            bool on;
            oxl_iq3_levels(id, xval + 4 * k, Lk);
            const int grid_index = oxl_iq3_grid_index(g, xval + 4 * k, waux + 4 * k, scale, Lk, &on);
            for (int i = 0; i < 4; i++) {
                L[4 * k + i] = (int8_t)((g->points[grid_index][i] - 1) / 2);
            }
        }
        float sumqx, sumq2;
        oxl_iq3_sums(weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0) {
            scale = sumqx / sumq2;
        }
    }
    return scale;
}

/* The grid index of levels that the search left on the grid (0 if they were not: unreachable) */
static int oxl_iq3_final_index(const oxl_iq3_grid *g, const int8_t *L) {
    int u = 0;
    for (int i = 0; i < 4; i++) {
        u |= L[i] << (3 * i);
    }
    return g->map[u] >= 0 ? g->map[u] : 0;
}

/* ggml's sub-block weights: qw[i] * sqrt(sigma2 + x[i]^2) with an imatrix (sigma2 = twice the
 * block's mean square), else x[i]^2; waux = their square roots */
static void oxl_iq3_weights(const float *xb, const float *qw, float sigma2, float *weight, float *waux) {
    for (int i = 0; i < 32; i++) {
        weight[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
    }
    for (int i = 0; i < 32; i++) {
        waux[i] = sqrtf(weight[i]);
    }
}

static float oxl_iq3_sigma2(const float *xbl) {
    float sumx2 = 0;
    for (int i = 0; i < 256; i++) {
        sumx2 += xbl[i] * xbl[i];
    }
    return 2 * sumx2 / 256;
}

/* quantize_row_iq3_xxs_impl (grid of 256): signs in 7-bit fields of even parity (an odd count of
 * negative values flips the sign of the one of least weighted square), 8-bit grid indices, the
 * sub-block scale in the top 4 bits of each sub-block's 32-bit sign word. */
void oxl_quantize_row_iq3_xxs(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    const oxl_iq3_grid *g = oxl_iq3_grid_get(256);
    oxl_block_iq3_xxs *y = vy;
    const int64_t nbl = ne0 / OXL_QK_IQ3_XXS;
    if (g == NULL) { /* unreachable: the grid's sizes are fixed by the tables (tests/unit) */
        memset(y, 0, (size_t)nbl * sizeof *y);
        return;
    }
    for (int64_t ibl = 0; ibl < nbl; ibl++) {
        uint8_t q3[96];
        uint32_t scales_and_signs[8] = {0};
        float scales[8];
        memset(q3, 0, sizeof q3);
        y[ibl].d = oxl_fp32_to_fp16(0.f);
        float max_scale = 0;
        const float *xbl = x + 256 * ibl;
        const float sigma2 = oxl_iq3_sigma2(xbl);
        for (int ib = 0; ib < 8; ib++) {
            const float *xb = xbl + 32 * ib;
            float weight[32], waux[32], xval[32];
            int8_t L[32];
            uint8_t block_signs[4];
            oxl_iq3_weights(xb, imatrix ? imatrix + 256 * ibl + 32 * ib : NULL, sigma2, weight, waux);
            for (int k = 0; k < 4; k++) {
                int nflip = 0;
                uint8_t s = 0;
                for (int i = 0; i < 8; i++) {
                    if (xb[8 * k + i] >= 0) {
                        xval[8 * k + i] = xb[8 * k + i];
                    } else {
                        xval[8 * k + i] = -xb[8 * k + i];
                        nflip++;
                        s |= (uint8_t)(1u << i);
                    }
                }
                if (nflip % 2) {
                    int imin = 0;
                    float min = weight[8 * k + imin] * xb[8 * k + imin] * xb[8 * k + imin];
                    for (int i = 1; i < 8; i++) {
                        const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                        if (ax < min) {
                            min = ax;
                            imin = i;
                        }
                    }
                    xval[8 * k + imin] = -xval[8 * k + imin];
                    s ^= (uint8_t)(1u << imin);
                }
                block_signs[k] = s & 127;
            }
            float max = xval[0];
            for (int i = 1; i < 32; i++) {
                max = max > xval[i] ? max : xval[i];
            }
            memset(L, 0, sizeof L);
            if (max < OXL_GROUP_MAX_EPS_IQ3_XXS) {
                scales[ib] = 0;
                continue;
            }
            float scale = oxl_iq3_search(g, xval, weight, waux, max, 15, true, L);
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 4; k++) {
                    block_signs[k] = (uint8_t)(~block_signs[k] & 127);
                }
            }
            for (int k = 0; k < 8; k++) {
                q3[8 * ib + k] = (uint8_t)oxl_iq3_final_index(g, L + 4 * k);
            }
            scales_and_signs[ib] = block_signs[0] | (uint32_t)block_signs[1] << 7 | (uint32_t)block_signs[2] << 14 |
                                   (uint32_t)block_signs[3] << 21;
            scales[ib] = scale;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        if (!max_scale) {
            memset(y[ibl].qs, 0, sizeof y[ibl].qs);
            continue;
        }
        const float d = max_scale / 31;
        y[ibl].d = oxl_fp32_to_fp16(d * 1.0125f);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ib++) {
            int l = oxl_nearest_int(0.5f * (id * scales[ib] - 1));
            l = oxl_imax(0, oxl_imin(15, l));
            scales_and_signs[ib] |= (uint32_t)l << 28;
        }
        for (int ib = 0; ib < 8; ib++) {
            for (int b = 0; b < 4; b++) {
                q3[64 + 4 * ib + b] = (uint8_t)(scales_and_signs[ib] >> (8 * b));
            }
        }
        memcpy(y[ibl].qs, q3, sizeof q3);
    }
}

/* quantize_row_iq3_s_impl (grid of 512, block_size 32): 8-bit signs, grid indices of 9 bits (the
 * ninth in qh), two 4-bit sub-block scales a byte. As in ggml, a sub-block whose values are all zero
 * does not advance the qs and signs positions: the next sub-block's bytes take its place. */
void oxl_quantize_row_iq3_s(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    const oxl_iq3_grid *g = oxl_iq3_grid_get(512);
    oxl_block_iq3_s *y = vy;
    const int64_t nbl = ne0 / OXL_QK_IQ3_S;
    if (g == NULL) { /* unreachable: the grid's sizes are fixed by the tables (tests/unit) */
        memset(y, 0, (size_t)nbl * sizeof *y);
        return;
    }
    for (int64_t ibl = 0; ibl < nbl; ibl++) {
        memset(&y[ibl], 0, sizeof y[ibl]);
        y[ibl].d = oxl_fp32_to_fp16(0.f);
        uint8_t *qs = y[ibl].qs;
        uint8_t *qh = y[ibl].qh;
        uint8_t *signs = y[ibl].signs;
        float scales[8];
        float max_scale = 0;
        const float *xbl = x + 256 * ibl;
        const float sigma2 = oxl_iq3_sigma2(xbl);
        for (int ib = 0; ib < 8; ib++) {
            const float *xb = xbl + 32 * ib;
            float weight[32], waux[32], xval[32];
            int8_t L[32];
            uint8_t block_signs[4];
            oxl_iq3_weights(xb, imatrix ? imatrix + 256 * ibl + 32 * ib : NULL, sigma2, weight, waux);
            for (int k = 0; k < 4; k++) {
                uint8_t s = 0;
                for (int i = 0; i < 8; i++) {
                    if (xb[8 * k + i] >= 0) {
                        xval[8 * k + i] = xb[8 * k + i];
                    } else {
                        xval[8 * k + i] = -xb[8 * k + i];
                        s |= (uint8_t)(1u << i);
                    }
                }
                block_signs[k] = s;
            }
            float max = xval[0];
            for (int i = 1; i < 32; i++) {
                max = max > xval[i] ? max : xval[i];
            }
            memset(L, 0, sizeof L);
            if (!max) {
                scales[ib] = 0;
                continue;
            }
            float scale = oxl_iq3_search(g, xval, weight, waux, max, 9, false, L);
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 4; k++) {
                    block_signs[k] = (uint8_t)~block_signs[k];
                }
            }
            for (int k = 0; k < 8; k++) {
                const int grid_index = oxl_iq3_final_index(g, L + 4 * k);
                qs[k] = (uint8_t)(grid_index & 255);
                qh[(ib * 8 + k) / 8] |= (uint8_t)((grid_index >> 8) << ((ib * 8 + k) % 8));
            }
            qs += 8;
            memcpy(signs, block_signs, 4);
            signs += 4;
            scales[ib] = scale;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        if (!max_scale) {
            continue;
        }
        const float d = max_scale / 31;
        y[ibl].d = oxl_fp32_to_fp16(d * 1.033f);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ib += 2) {
            const int l1 = oxl_imax(0, oxl_imin(15, oxl_nearest_int(0.5f * (id * scales[ib + 0] - 1))));
            const int l2 = oxl_imax(0, oxl_imin(15, oxl_nearest_int(0.5f * (id * scales[ib + 1] - 1))));
            y[ibl].scales[ib / 2] = (uint8_t)(l1 | (l2 << 4));
        }
    }
}
