/* Reference quantizers of the 1-bit I-quants (ggml/src/ggml-quants.c quantize_iq1_s and
 * quantize_iq1_m): groups of 8 values in {-1, 0, 1} (plus a shift of +-0.125) that must be an entry
 * of the 2048-entry grid oxl_iq1s_grid; a group off the grid goes to the nearest entry of its
 * neighbour list (iq_grid.h, ggml's iq2xs_init_impl). The arithmetic follows ggml's expression
 * order so the bytes are identical. iq1_s needs importance weights (oxl_quantize_rows refuses a
 * NULL imatrix, as ggml asserts); iq1_m falls back to x^2 weights without them. */
#include "quantize_impl.h"

#include "iq_grid.h"
#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define OXL_IQ1S_DELTA 0.125f
#define OXL_IQ1M_DELTA 0.125f
#define OXL_GROUP_MAX_EPS_IQ1_S 1e-12f
#define OXL_GROUP_MAX_EPS_IQ1_M 1e-7f
#define OXL_IQ1S_BLOCK 32
#define OXL_IQ1M_BLOCK 16
#define OXL_IQ1_QK 256

static inline float oxl_fmaxf_ggml(float a, float b) { return a > b ? a : b; }

/* The order ggml's qsort (glibc's stable merge sort) puts a block's values in, by value: idx[j] is
 * the position of the j-th smallest, equal values keeping their positions' order. */
static void oxl_iq1_sort(const float *xb, int n, int *idx) {
    for (int j = 0; j < n; j++) {
        int k = j;
        while (k > 0 && xb[idx[k - 1]] > xb[j]) {
            idx[k] = idx[k - 1];
            k--;
        }
        idx[k] = j;
    }
}

/* the level l (0..2) of byte j of a grid entry in 2l+1 form */
static inline int oxl_iq1_level(uint64_t g, int j) { return (((int)(g >> (8 * j)) & 0xff) - 1) / 2; }

/* iq1_find_best_neighbour2: the entry of the neighbour list nb nearest to x (weights w) when its
 * levels l are the values xg[l] times scale; its levels go to L[0..8). ggml's search of the whole
 * grid after an empty result cannot happen with finite input (every distance is below FLT_MAX) and
 * reads past its arrays there; the first neighbour stands in for it. */
static int oxl_iq1_best_neighbour(const uint16_t *nb, const uint64_t *grid, const float *x, const float *w, float scale,
                                  const float *xg, int8_t *L) {
    const int n = nb[0];
    float best = FLT_MAX;
    int index = -1;
    for (int j = 1; j <= n; j++) {
        const uint64_t g = grid[nb[j]];
        float d2 = 0;
        for (int i = 0; i < 8; i++) {
            const float q = xg[oxl_iq1_level(g, i)];
            const float diff = scale * q - x[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            index = nb[j];
        }
    }
    if (index < 0) {
        index = nb[1];
    }
    for (int i = 0; i < 8; i++) {
        L[i] = (int8_t)oxl_iq1_level(grid[index], i);
    }
    return index;
}

/* The grid index of the 8 levels L[0..8) (lattice point sum L[j] << 2j), or the best neighbour's
 * (then L is rewritten); *on_grid cleared when the point is not an entry. */
static int oxl_iq1_grid_index(const oxl_iq_grid *g, int8_t *L, const float *x, const float *w, float scale,
                              const float *xg, bool *on_grid) {
    uint16_t u = 0;
    for (int j = 0; j < 8; j++) {
        u |= (uint16_t)(L[j] << 2 * j);
    }
    const int m = g->map[u];
    if (m >= 0) {
        return m;
    }
    *on_grid = false;
    return oxl_iq1_best_neighbour(g->neighbours - m - 1, g->grid, x, w, scale, xg, L);
}

/* quantize_row_iq1_s_impl: per sub-block of 32 the exact best split of the sorted values into the
 * levels -1, 0, 1 with shift +0.125 or -0.125 (largest sum(w q x)^2 / sum(w q^2)), groups of 8
 * rounded onto the grid, then 3-bit sub-block scales of max_scale / 15 (d stored times 1.125). */
void oxl_quantize_row_iq1_s(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    const oxl_iq_grid *g = oxl_iq_grid_get(OXL_TYPE_IQ1_S);
    oxl_block_iq1_s *y = vy;
    const int bs = OXL_IQ1S_BLOCK;
    const float x_p[3] = {-1 + OXL_IQ1S_DELTA, OXL_IQ1S_DELTA, 1 + OXL_IQ1S_DELTA};
    const float x_m[3] = {-1 - OXL_IQ1S_DELTA, -OXL_IQ1S_DELTA, 1 - OXL_IQ1S_DELTA};
    float scales[OXL_IQ1_QK / OXL_IQ1S_BLOCK], weight[OXL_IQ1S_BLOCK];
    float sumx[OXL_IQ1S_BLOCK + 1], sumw[OXL_IQ1S_BLOCK + 1];
    int idx[OXL_IQ1S_BLOCK];
    int8_t L[OXL_IQ1S_BLOCK], shifts[OXL_IQ1_QK / OXL_IQ1S_BLOCK];
    uint16_t index[OXL_IQ1S_BLOCK / 8];
    if (g == NULL || imatrix == NULL) {
        memset(vy, 0, (size_t)(ne0 / OXL_IQ1_QK) * sizeof(oxl_block_iq1_s));
        return; /* oxl_quantize_rows refuses both before calling */
    }
    for (int64_t ibl = 0; ibl < ne0 / OXL_IQ1_QK; ibl++) {
        y[ibl].d = oxl_fp32_to_fp16(0.f);
        memset(y[ibl].qs, 0, sizeof y[ibl].qs);
        memset(y[ibl].qh, 0, sizeof y[ibl].qh);
        float max_scale = 0;
        const float *xbl = x + OXL_IQ1_QK * ibl;
        float sumx2 = 0;
        for (int i = 0; i < OXL_IQ1_QK; i++) {
            sumx2 += xbl[i] * xbl[i];
        }
        const float sigma2 = 2 * sumx2 / OXL_IQ1_QK;
        for (int ib = 0; ib < OXL_IQ1_QK / bs; ib++) {
            const float *xb = xbl + bs * ib;
            const float *qw = imatrix + OXL_IQ1_QK * ibl + bs * ib;
            for (int i = 0; i < bs; i++) {
                weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
            }
            float max = fabsf(xb[0]);
            for (int i = 1; i < bs; i++) {
                max = oxl_fmaxf_ggml(max, fabsf(xb[i]));
            }
            if (max < OXL_GROUP_MAX_EPS_IQ1_S) {
                scales[ib] = 0;
                shifts[ib] = 1;
                continue;
            }
            oxl_iq1_sort(xb, bs, idx);
            sumx[0] = sumw[0] = 0;
            for (int j = 0; j < bs; j++) {
                const int i = idx[j];
                sumx[j + 1] = sumx[j] + weight[i] * xb[i];
                sumw[j + 1] = sumw[j] + weight[i];
            }
            float best_score = -FLT_MAX, scale = max;
            int besti1 = -1, besti2 = -1, best_shift = 0;
            for (int i1 = 0; i1 <= bs; i1++) {
                for (int i2 = i1; i2 <= bs; i2++) {
                    float sumqx =
                        (sumx[i1] - sumx[0]) * x_p[0] + (sumx[i2] - sumx[i1]) * x_p[1] + (sumx[bs] - sumx[i2]) * x_p[2];
                    float sumq2 = (sumw[i1] - sumw[0]) * x_p[0] * x_p[0] + (sumw[i2] - sumw[i1]) * x_p[1] * x_p[1] +
                                  (sumw[bs] - sumw[i2]) * x_p[2] * x_p[2];
                    if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        best_shift = 1;
                    }
                    sumqx =
                        (sumx[i1] - sumx[0]) * x_m[0] + (sumx[i2] - sumx[i1]) * x_m[1] + (sumx[bs] - sumx[i2]) * x_m[2];
                    sumq2 = (sumw[i1] - sumw[0]) * x_m[0] * x_m[0] + (sumw[i2] - sumw[i1]) * x_m[1] * x_m[1] +
                            (sumw[bs] - sumw[i2]) * x_m[2] * x_m[2];
                    if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        best_shift = -1;
                    }
                }
            }
            if (besti1 < 0 || besti2 < 0 || best_shift == 0) {
                scales[ib] = 0;
                shifts[ib] = 1;
                continue;
            }
            for (int j = 0; j < bs; j++) {
                L[idx[j]] = (int8_t)(j < besti1 ? 0 : j < besti2 ? 1 : 2);
            }
            if (scale < 0) {
                for (int j = 0; j < bs; j++) {
                    L[j] = (int8_t)(2 - L[j]);
                }
                scale = -scale;
                best_shift = -best_shift;
            }
            bool all_on_grid = true;
            const float *xx = best_shift == 1 ? x_p : x_m;
            for (int k = 0; k < bs / 8; k++) {
                index[k] =
                    (uint16_t)oxl_iq1_grid_index(g, L + 8 * k, xb + 8 * k, weight + 8 * k, scale, xx, &all_on_grid);
            }
            if (!all_on_grid) {
                float sumqx = 0, sumq2 = 0;
                for (int k = 0; k < bs / 8; k++) {
                    for (int j = 0; j < 8; j++) {
                        const float w = weight[8 * k + j];
                        const float q = xx[oxl_iq1_level(g->grid[index[k]], j)];
                        sumqx += w * q * xb[8 * k + j];
                        sumq2 += w * q * q;
                    }
                }
                if (sumqx > 0 && sumq2 > 0) {
                    scale = sumqx / sumq2;
                }
            }
            uint16_t h = 0;
            for (int k = 0; k < bs / 8; k++) {
                y[ibl].qs[(bs / 8) * ib + k] = (uint8_t)(index[k] & 255);
                h |= (uint16_t)((index[k] >> 8) << 3 * k);
            }
            y[ibl].qh[ib] = h;
            scales[ib] = scale;
            shifts[ib] = (int8_t)best_shift;
            max_scale = oxl_fmaxf_ggml(max_scale, scale);
        }
        if (!max_scale) {
            continue;
        }
        const float d = max_scale / 15;
        y[ibl].d = oxl_fp32_to_fp16(d * 1.125f);
        const float id = 1 / d;
        for (int ib = 0; ib < OXL_IQ1_QK / bs; ib++) {
            int l = oxl_nearest_int(0.5f * (id * scales[ib] - 1));
            l = oxl_imax(0, oxl_imin(7, l));
            if (shifts[ib] == -1) {
                l |= 8;
            }
            y[ibl].qh[ib] |= (uint16_t)(l << 12);
        }
    }
}

/* The shift table of group k (0, 1) of a sub-block of 16 whose shift pattern is s (0: +,+ 1: +,-
 * 2: -,+ 3: -,-) */
static inline const float *oxl_iq1_m_shift(int s, int k, const float *x_p, const float *x_m) {
    return k == 0 ? (s < 2 ? x_p : x_m) : (s % 2 == 0 ? x_p : x_m);
}

/* quantize_row_iq1_m_impl: per sub-block of 16 the exact best split into -1, 0, 1 with one shift
 * sign per group of 8 (four patterns), groups rounded onto the grid, 3-bit scales of max_scale / 15,
 * then the super-block scale refitted by least squares (stored times 1.1125, as an fp16 spread over
 * the top nibbles of the four scale words). Weights qw * sqrt(sigma2 + x^2), or x^2 without them. */
void oxl_quantize_row_iq1_m(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    const oxl_iq_grid *g = oxl_iq_grid_get(OXL_TYPE_IQ1_M);
    oxl_block_iq1_m *y = vy;
    const int bs = OXL_IQ1M_BLOCK;
    const float x_p[3] = {-1 + OXL_IQ1M_DELTA, OXL_IQ1M_DELTA, 1 + OXL_IQ1M_DELTA};
    const float x_m[3] = {-1 - OXL_IQ1M_DELTA, -OXL_IQ1M_DELTA, 1 - OXL_IQ1M_DELTA};
    const uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
    float scales[OXL_IQ1_QK / OXL_IQ1M_BLOCK], weight[OXL_IQ1M_BLOCK];
    int idx[OXL_IQ1M_BLOCK];
    int8_t L[OXL_IQ1M_BLOCK], shifts[OXL_IQ1_QK / OXL_IQ1M_BLOCK];
    uint16_t index[OXL_IQ1M_BLOCK / 8];
    float sumqx[4], sumq2[4];
    if (g == NULL) {
        memset(vy, 0, (size_t)(ne0 / OXL_IQ1_QK) * sizeof(oxl_block_iq1_m));
        return; /* oxl_quantize_rows refuses before calling */
    }
    for (int64_t ibl = 0; ibl < ne0 / OXL_IQ1_QK; ibl++) {
        memset(y[ibl].qs, 0, sizeof y[ibl].qs);
        memset(y[ibl].qh, 0, sizeof y[ibl].qh);
        memset(y[ibl].scales, 0, sizeof y[ibl].scales);
        float max_scale = 0;
        const float *xbl = x + OXL_IQ1_QK * ibl;
        float sumx2 = 0;
        for (int i = 0; i < OXL_IQ1_QK; i++) {
            sumx2 += xbl[i] * xbl[i];
        }
        const float sigma2 = 2 * sumx2 / OXL_IQ1_QK;
        for (int ib = 0; ib < OXL_IQ1_QK / bs; ib++) {
            const float *xb = xbl + bs * ib;
            for (int i = 0; i < bs; i++) {
                weight[i] =
                    imatrix ? imatrix[OXL_IQ1_QK * ibl + bs * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
            }
            float max = fabsf(xb[0]);
            for (int i = 1; i < bs; i++) {
                max = oxl_fmaxf_ggml(max, fabsf(xb[i]));
            }
            if (max < OXL_GROUP_MAX_EPS_IQ1_M) {
                scales[ib] = 0;
                shifts[ib] = 0;
                continue;
            }
            oxl_iq1_sort(xb, bs, idx);
            float best_score = -FLT_MAX, scale = max;
            int besti1 = -1, besti2 = -1, best_k = -1;
            for (int i1 = 0; i1 <= bs; i1++) {
                for (int i2 = i1; i2 <= bs; i2++) {
                    memset(sumqx, 0, sizeof sumqx);
                    memset(sumq2, 0, sizeof sumq2);
                    for (int j = 0; j < bs; j++) {
                        const int i = idx[j];
                        const int lv = j < i1 ? 0 : j < i2 ? 1 : 2;
                        /* patterns 0, 1 shift the first group by +, 2, 3 by -; the second group
                         * has + in 0, 2 and - in 1, 3 */
                        const int a = i < bs / 2 ? 1 : 2, b = i < bs / 2 ? 2 : 1;
                        sumqx[0] += weight[i] * x_p[lv] * xb[i];
                        sumqx[a] += weight[i] * x_p[lv] * xb[i];
                        sumqx[b] += weight[i] * x_m[lv] * xb[i];
                        sumqx[3] += weight[i] * x_m[lv] * xb[i];
                        sumq2[0] += weight[i] * x_p[lv] * x_p[lv];
                        sumq2[a] += weight[i] * x_p[lv] * x_p[lv];
                        sumq2[b] += weight[i] * x_m[lv] * x_m[lv];
                        sumq2[3] += weight[i] * x_m[lv] * x_m[lv];
                    }
                    for (int k = 0; k < 4; k++) {
                        if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
                            scale = sumqx[k] / sumq2[k];
                            best_score = scale * sumqx[k];
                            besti1 = i1;
                            besti2 = i2;
                            best_k = k;
                        }
                    }
                }
            }
            if (besti1 < 0 || besti2 < 0 || best_k < 0) {
                scales[ib] = 0;
                shifts[ib] = 0;
                continue;
            }
            for (int j = 0; j < bs; j++) {
                L[idx[j]] = (int8_t)(j < besti1 ? 0 : j < besti2 ? 1 : 2);
            }
            if (scale < 0) {
                for (int j = 0; j < bs; j++) {
                    L[j] = (int8_t)(2 - L[j]);
                }
                scale = -scale;
                best_k = 3 - best_k;
            }
            bool all_on_grid = true;
            for (int k = 0; k < bs / 8; k++) {
                index[k] = (uint16_t)oxl_iq1_grid_index(g, L + 8 * k, xb + 8 * k, weight + 8 * k, scale,
                                                        oxl_iq1_m_shift(best_k, k, x_p, x_m), &all_on_grid);
            }
            if (!all_on_grid) {
                float sumqx_f = 0, sumq2_f = 0;
                for (int k = 0; k < bs / 8; k++) {
                    const float *xx = oxl_iq1_m_shift(best_k, k, x_p, x_m);
                    for (int j = 0; j < 8; j++) {
                        const float w = weight[8 * k + j];
                        const float q = xx[oxl_iq1_level(g->grid[index[k]], j)];
                        sumqx_f += w * q * xb[8 * k + j];
                        sumq2_f += w * q * q;
                    }
                }
                if (sumqx_f > 0 && sumq2_f > 0) {
                    scale = sumqx_f / sumq2_f;
                }
            }
            y[ibl].qs[2 * ib + 0] = (uint8_t)(index[0] & 255);
            y[ibl].qs[2 * ib + 1] = (uint8_t)(index[1] & 255);
            y[ibl].qh[ib] = (uint8_t)((index[0] >> 8) | ((index[1] >> 8) << 4));
            scales[ib] = scale;
            shifts[ib] = (int8_t)best_k;
            max_scale = oxl_fmaxf_ggml(max_scale, scale);
        }
        if (!max_scale) {
            continue;
        }
        uint16_t sc[4] = {0, 0, 0, 0};
        float d = max_scale / 15;
        const float id = 1 / d;
        float sumqx_f = 0, sumq2_f = 0;
        for (int ib = 0; ib < OXL_IQ1_QK / bs; ib++) {
            int l = oxl_nearest_int(0.5f * (id * scales[ib] - 1));
            l = oxl_imax(0, oxl_imin(7, l));
            sc[ib / 4] |= (uint16_t)(l << 3 * (ib % 4));
            y[ibl].qh[ib] |= masks[shifts[ib]];
            const float *xb = xbl + bs * ib;
            for (int i = 0; i < bs; i++) {
                weight[i] =
                    imatrix ? imatrix[OXL_IQ1_QK * ibl + bs * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
            }
            for (int k = 0; k < bs / 8; k++) {
                const float *xx = oxl_iq1_m_shift(shifts[ib], k, x_p, x_m);
                const uint64_t e = g->grid[y[ibl].qs[2 * ib + k] + ((y[ibl].qh[ib] << (8 - 4 * k)) & 0x700)];
                for (int j = 0; j < 8; j++) {
                    const float w = weight[8 * k + j];
                    const float q = xx[oxl_iq1_level(e, j)] * (2 * l + 1);
                    sumqx_f += w * q * xb[8 * k + j];
                    sumq2_f += w * q * q;
                }
            }
        }
        if (sumq2_f > 0) {
            d = sumqx_f / sumq2_f;
        }
        const uint16_t s = oxl_fp32_to_fp16(d * 1.1125f);
        sc[0] |= (uint16_t)((s & 0x000f) << 12);
        sc[1] |= (uint16_t)((s & 0x00f0) << 8);
        sc[2] |= (uint16_t)((s & 0x0f00) << 4);
        sc[3] |= (uint16_t)(s & 0xf000);
        for (int w = 0; w < 4; w++) {
            y[ibl].scales[2 * w] = (uint8_t)(sc[w] & 0xff);
            y[ibl].scales[2 * w + 1] = (uint8_t)(sc[w] >> 8);
        }
    }
}
