/* Reference quantizers of the I-quant formats (ggml/src/ggml-quants.c): iq4_nl, whose 4-bit codes
 * index the 16 non-linear values oxl_kvalues_iq4nl (generated/oxl_quant_tables.h, from ggml's
 * tables), and iq4_xs, the same codes in super-blocks of 256 with 6-bit block scales. The
 * arithmetic follows ggml's expression order so the bytes are identical. */
#include "quantize.h"
#include "quantize_impl.h"

#include "oxl_blocks.h"
#include "oxl_fp16.h"
#include "oxl_quant_tables.h"

#include <math.h>
#include <string.h>

/* best_index_int8: the index of the value of the sorted table val[0..n) nearest to x (the lower
 * one on a tie of distances is the upper one, as ggml compares); x beyond either end clamps. */
static int oxl_nearest_value_index(int n, const int8_t *val, float x) {
    if (x <= val[0]) {
        return 0;
    }
    if (x >= val[n - 1]) {
        return n - 1;
    }
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < val[mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return x - val[hi - 1] < val[hi] - x ? hi - 1 : hi;
}

/* The weighted sums of a trial inverse scale id: codes nearest id * x, sum of w q x and of w q^2. */
static void oxl_iq4_nl_trial(const float *xb, const float *weight, float id, float *sumqx, float *sumq2) {
    float sx = 0.0f, s2 = 0.0f;
    for (int j = 0; j < 32; j++) {
        const float q = oxl_kvalues_iq4nl[oxl_nearest_value_index(16, oxl_kvalues_iq4nl, id * xb[j])];
        const float w = weight[j];
        sx += w * q * xb[j];
        s2 += w * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* sigma2 of quantize_row_iq4_nl_impl: twice the mean square of the n values of a super-block */
static float oxl_iq4_sigma2(const float *x, int n) {
    float sigma2 = 0.0f;
    for (int j = 0; j < n; j++) {
        sigma2 += x[j] * x[j];
    }
    return sigma2 * (2.f / n);
}

/* The scale of one block of 32 (quantize_row_iq4_nl_impl's block loop, ntry 7): weights qw[j] *
 * sqrt(sigma2 + x[j]^2) or x[j]^2; 0 when no |x| reaches OXL_GROUP_MAX_EPS, else a first scale from
 * the value of largest magnitude over the table's most negative value, refined by least squares,
 * then the best of 15 trial scales (itry + values[0]) / max by sum(w q x)^2 / sum(w q^2). */
static float oxl_iq4_block_scale(const float *xb, const float *qw, float sigma2) {
    const int8_t *values = oxl_kvalues_iq4nl;
    const int ntry = 7;
    float weight[32];
    for (int j = 0; j < 32; j++) {
        weight[j] = qw ? qw[j] * sqrtf(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
    }
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++) {
        const float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < OXL_GROUP_MAX_EPS) {
        return 0.0f;
    }
    float sumqx, sumq2;
    oxl_iq4_nl_trial(xb, weight, 1 / (-max / values[0]), &sumqx, &sumq2);
    float d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; itry++) {
        oxl_iq4_nl_trial(xb, weight, (itry + values[0]) / max, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* One block of 32 as codes nearest id * x, packed: byte j holds element j (low nibble) and j + 16 */
static void oxl_iq4_block_codes(const float *xb, float id, uint8_t *qs) {
    uint8_t L[32];
    for (int j = 0; j < 32; j++) {
        L[j] = (uint8_t)oxl_nearest_value_index(16, oxl_kvalues_iq4nl, id * xb[j]);
    }
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
    }
}

/* quantize_iq4_nl: each block of 32 on its own (super block = block), with the imatrix's 32 weights
 * of that block if given; d = the block's scale, codes nearest x / d. */
void oxl_quantize_row_iq4_nl(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_iq4_nl *y = vy;
    for (int64_t ib = 0; ib < ne0 / OXL_QK_IQ4_NL; ib++) {
        const float *xb = x + ib * OXL_QK_IQ4_NL;
        const float scale =
            oxl_iq4_block_scale(xb, imatrix ? imatrix + ib * OXL_QK_IQ4_NL : NULL, oxl_iq4_sigma2(xb, OXL_QK_IQ4_NL));
        y[ib].d = oxl_fp32_to_fp16(scale);
        oxl_iq4_block_codes(xb, scale != 0.0f ? 1 / scale : 0.0f, y[ib].qs);
    }
}

/* quantize_iq4_xs: super-blocks of 256, each block of 32 scaled as IQ4_NL's (sigma2 of the whole
 * super-block); d = -(the block scale of largest magnitude) / 32, each block's scale the nearest
 * integer l of its scale / d in [-32, 31] (stored + 32: low 4 bits in scales_l, high 2 in scales_h),
 * codes nearest x / (d l) with d in float (not its f16). */
void oxl_quantize_row_iq4_xs(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    oxl_block_iq4_xs *y = vy;
    for (int64_t ibl = 0; ibl < ne0 / OXL_QK_IQ4_XS; ibl++) {
        const float *xs = x + ibl * OXL_QK_IQ4_XS;
        const float *qws = imatrix ? imatrix + ibl * OXL_QK_IQ4_XS : NULL;
        const float sigma2 = oxl_iq4_sigma2(xs, OXL_QK_IQ4_XS);
        float scales[OXL_QK_IQ4_XS / 32];
        float max_scale = 0.0f, amax_scale = 0.0f;
        for (int ib = 0; ib < OXL_QK_IQ4_XS / 32; ib++) {
            scales[ib] = oxl_iq4_block_scale(xs + 32 * ib, qws ? qws + 32 * ib : NULL, sigma2);
            if (fabsf(scales[ib]) > amax_scale) {
                amax_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }
        oxl_block_iq4_xs *b = &y[ibl];
        const float d = -max_scale / 32;
        b->d = oxl_fp32_to_fp16(d);
        b->scales_h = 0;
        const float id = d != 0.0f ? 1 / d : 0.f;
        for (int ib = 0; ib < OXL_QK_IQ4_XS / 32; ib++) {
            const int l = oxl_imax(-32, oxl_imin(31, oxl_nearest_int(id * scales[ib])));
            const float dl = d * l;
            oxl_iq4_block_codes(xs + 32 * ib, dl != 0.0f ? 1 / dl : 0.f, b->qs + 16 * ib);
            const unsigned u = (unsigned)(l + 32);
            if (ib % 2 == 0) {
                b->scales_l[ib / 2] = (uint8_t)(u & 0xf);
            } else {
                b->scales_l[ib / 2] |= (uint8_t)((u & 0xf) << 4);
            }
            b->scales_h |= (uint16_t)((u >> 4) << 2 * ib);
        }
    }
}

/* quantize_row_iq4_nl_ref: what ggml's set_rows writes into an iq4_nl KV cache (ggml-cpu's
 * from_float, quantize_row_iq4_nl). quantize_row_iq4_nl_impl with ntry -1 and no importance
 * weights, which is not quantize_iq4_nl's search: the first scale is max / values[0] (the sign
 * the other way round), its codes are kept, no trial scale follows, and the block's scale is the
 * least-squares sum(w q x) / sum(w q^2) of those codes (weights x^2). A block under
 * OXL_GROUP_MAX_EPS gets scale 0 and keeps the previous block's codes (ggml's L buffer; the first
 * block's are those nearest 0): with scale 0 they dequantize to 0 whatever they are. */
void oxl_quantize_row_iq4_nl_ref(const float *x, void *vy, int64_t ne0) {
    const int8_t *values = oxl_kvalues_iq4nl;
    oxl_block_iq4_nl *y = vy;
    uint8_t L[OXL_QK_IQ4_NL];
    memset(L, (uint8_t)oxl_nearest_value_index(16, values, 0.0f), sizeof L);
    for (int64_t ib = 0; ib < ne0 / OXL_QK_IQ4_NL; ib++) {
        const float *xb = x + ib * OXL_QK_IQ4_NL;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < OXL_QK_IQ4_NL; j++) {
            const float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        float scale = 0.0f;
        if (amax >= OXL_GROUP_MAX_EPS) {
            const float id = 1 / (max / values[0]);
            float sumqx = 0.0f, sumq2 = 0.0f;
            for (int j = 0; j < OXL_QK_IQ4_NL; j++) {
                L[j] = (uint8_t)oxl_nearest_value_index(16, values, id * xb[j]);
                const float q = values[L[j]];
                const float w = xb[j] * xb[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            scale = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        }
        y[ib].d = oxl_fp32_to_fp16(scale);
        for (int j = 0; j < OXL_QK_IQ4_NL / 2; j++) {
            y[ib].qs[j] = (uint8_t)(L[j] | (L[j + OXL_QK_IQ4_NL / 2] << 4));
        }
    }
}
