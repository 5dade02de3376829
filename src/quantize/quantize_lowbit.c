/* Reference quantizers of the ternary formats tq1_0 and tq2_0 (blocks of 256, one f16 scale: the
 * block's largest magnitude) and of the sign/2-bit formats q1_0 (blocks of 128) and q2_0 (blocks
 * of 64) (ggml/src/ggml-quants.c: quantize_row_<type>_ref). None of them uses importance weights:
 * ggml's quantize_<type> ignores them, so the imatrix argument is unused. */
#include "quantize_impl.h"

#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <math.h>
#include <string.h>

/* The largest |x| of n values from 0, as ggml's MAX(amax, |x|) (a NaN |x| replaces it). */
static float oxl_amax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

/* One ternary digit of x: round(x * id) + 1 (-1, 0, 1 -> 0, 1, 2), rounding halves away from zero. */
static int oxl_trit(float x, float id) { return (int)lroundf(x * id) + 1; }

/* 5 trits in one byte, first trit most significant, as a fraction of 243 rounded up to 256ths */
static uint8_t oxl_pack_trits(const int *t, int count) {
    uint8_t q = 0;
    for (int n = 0; n < count; n++) {
        q = (uint8_t)(q * 3 + t[n]);
    }
    for (int n = count; n < 5; n++) {
        q = (uint8_t)(q * 3); /* fewer than 5: the first trit still goes to the top */
    }
    return (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
}

/* tq1_0: d = max |x|; bytes 0..31 hold 5 trits each of elements m + 32 n (n = 0..4) of the first
 * 160, bytes 32..47 of elements 160 + m + 16 n, qh[j] 4 trits of elements 240 + j + 4 m. */
void oxl_quantize_row_tq1_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    oxl_block_tq1_0 *y = vy;
    for (int64_t ib = 0; ib < ne0 / 256; ib++) {
        const float *xb = x + ib * 256;
        const float d = oxl_amax(xb, 256);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[ib].d = oxl_fp32_to_fp16(d);
        int t[5];
        for (int m = 0; m < 32; m++) {
            for (int n = 0; n < 5; n++) {
                t[n] = oxl_trit(xb[m + 32 * n], id);
            }
            y[ib].qs[m] = oxl_pack_trits(t, 5);
        }
        for (int m = 0; m < 16; m++) {
            for (int n = 0; n < 5; n++) {
                t[n] = oxl_trit(xb[160 + m + 16 * n], id);
            }
            y[ib].qs[32 + m] = oxl_pack_trits(t, 5);
        }
        for (int j = 0; j < 4; j++) {
            for (int m = 0; m < 4; m++) {
                t[m] = oxl_trit(xb[240 + j + 4 * m], id);
            }
            y[ib].qh[j] = oxl_pack_trits(t, 4);
        }
    }
}

/* tq2_0: d = max |x|; per 128 elements, byte m of its 32 holds elements m + 32 n in bit pairs 2 n,
 * each round(x / d) + 1 (its low 2 bits) */
void oxl_quantize_row_tq2_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    oxl_block_tq2_0 *y = vy;
    for (int64_t ib = 0; ib < ne0 / 256; ib++) {
        const float *xb = x + ib * 256;
        const float d = oxl_amax(xb, 256);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[ib].d = oxl_fp32_to_fp16(d);
        for (int h = 0; h < 2; h++) {
            for (int m = 0; m < 32; m++) {
                unsigned q = 0;
                for (int n = 0; n < 4; n++) {
                    q += ((unsigned)oxl_trit(xb[128 * h + m + 32 * n], id) & 3u) << (2 * n);
                }
                y[ib].qs[32 * h + m] = (uint8_t)q;
            }
        }
    }
}

/* q1_0: d = mean |x| over the 128 (summed in order), bit j set when x[j] >= 0 */
void oxl_quantize_row_q1_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    oxl_block_q1_0 *y = vy;
    for (int64_t ib = 0; ib < ne0 / 128; ib++) {
        const float *xb = x + ib * 128;
        float sum_abs = 0.0f;
        for (int j = 0; j < 128; j++) {
            sum_abs += fabsf(xb[j]);
        }
        y[ib].d = oxl_fp32_to_fp16(sum_abs / 128);
        memset(y[ib].qs, 0, sizeof y[ib].qs);
        for (int j = 0; j < 128; j++) {
            if (xb[j] >= 0.0f) {
                y[ib].qs[j / 8] |= (uint8_t)(1u << (j % 8));
            }
        }
    }
}

/* q2_0: d = max |x| (first largest), q = round(x / d) + 1 clamped to 0..3 (levels -1, 0, 1, 2),
 * element j in bit pair 2 (j % 4) of byte j / 4 */
void oxl_quantize_row_q2_0(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    oxl_block_q2_0 *y = vy;
    for (int64_t ib = 0; ib < ne0 / 64; ib++) {
        const float *xb = x + ib * 64;
        float amax = 0.0f;
        for (int j = 0; j < 64; j++) {
            const float a = fabsf(xb[j]);
            if (a > amax) {
                amax = a;
            }
        }
        const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
        y[ib].d = oxl_fp32_to_fp16(amax);
        memset(y[ib].qs, 0, sizeof y[ib].qs);
        for (int j = 0; j < 64; j++) {
            int q = (int)roundf(xb[j] * id) + 1;
            q = q < 0 ? 0 : q > 3 ? 3 : q;
            y[ib].qs[j / 4] |= (uint8_t)(q << (2 * (j % 4)));
        }
    }
}
