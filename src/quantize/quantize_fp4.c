/* Reference quantizers of the FP4 formats (ggml/src/ggml-quants.c quantize_row_mxfp4_ref,
 * quantize_row_nvfp4_ref): 4-bit E2M1 codes indexing oxl_kvalues_fp4 (the E2M1 values doubled,
 * generated/oxl_quant_tables.h from ggml's tables) under one scale per block, E8M0 (MXFP4, 32
 * elements) or UE4M3 (NVFP4, 16). ggml's quantize_mxfp4 / quantize_nvfp4 ignore importance weights,
 * and so do these. The arithmetic follows ggml's expression order so the bytes are identical. */
#include "quantize_impl.h"

#include "oxl_blocks.h"
#include "oxl_fp16.h"
#include "oxl_quant_tables.h"

#include <math.h>

/* best_index_mxfp4: the first code whose value times d is nearest x (a linear search, ties to the
 * lower code) */
static uint8_t oxl_fp4_best_index(float x, float d) {
    int best = 0;
    float best_err = fabsf(oxl_kvalues_fp4[0] * d - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf(oxl_kvalues_fp4[i] * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

/* (uint8_t)f for ggml's float f = floorf(log2f(amax)) - 2 + 127, as its x86-64 build converts it:
 * to int32 by truncation (an out-of-range or NaN value gives INT32_MIN), then the low byte. */
static uint8_t oxl_fp4_e8m0_byte(float f) {
    if (!(f > -2147483648.0f && f < 2147483648.0f)) {
        return 0;
    }
    return (uint8_t)(uint32_t)(int32_t)f;
}

void oxl_quantize_row_mxfp4(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    oxl_block_mxfp4 *y = vy;
    for (int64_t ib = 0; ib < ne0 / OXL_QK_MXFP4; ib++) {
        const float *xb = x + ib * OXL_QK_MXFP4;
        float amax = 0.0f;
        for (int j = 0; j < OXL_QK_MXFP4; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
            }
        }
        const uint8_t e = amax > 0.0f ? oxl_fp4_e8m0_byte(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = oxl_e8m0_to_fp32_half(e);
        y[ib].e = e;
        for (int j = 0; j < OXL_QK_MXFP4 / 2; j++) {
            const uint8_t x0 = oxl_fp4_best_index(xb[j], d);
            const uint8_t x1 = oxl_fp4_best_index(xb[j + OXL_QK_MXFP4 / 2], d);
            y[ib].qs[j] = (uint8_t)(x0 | (x1 << 4));
        }
    }
}

void oxl_quantize_row_nvfp4(const float *x, void *vy, int64_t ne0, const float *imatrix) {
    (void)imatrix;
    oxl_block_nvfp4 *y = vy;
    for (int64_t ib = 0; ib < ne0 / OXL_QK_NVFP4; ib++) {
        for (int s = 0; s < 4; s++) {
            const float *xb = x + ib * OXL_QK_NVFP4 + s * 16;
            float amax = 0.0f;
            for (int j = 0; j < 16; j++) {
                if (amax < fabsf(xb[j])) {
                    amax = fabsf(xb[j]);
                }
            }
            /* amax / 6 maps the largest E2M1 value (6) to amax */
            const uint8_t ue = oxl_fp32_to_ue4m3(amax / 6.0f);
            y[ib].d[s] = ue;
            const float d = oxl_ue4m3_to_fp32_half(ue);
            for (int j = 0; j < 8; j++) {
                const uint8_t x0 = oxl_fp4_best_index(xb[j], d);
                const uint8_t x1 = oxl_fp4_best_index(xb[j + 8], d);
                y[ib].qs[s * 8 + j] = (uint8_t)(x0 | (x1 << 4));
            }
        }
    }
}
