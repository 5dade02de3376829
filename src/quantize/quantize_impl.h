/* Internal to the reference quantizers (src/quantize/): the per-format row functions collected in
 * quantize.c's table (the rounding helpers and scale searches are quantize_search.h's). */
#ifndef OXL_QUANTIZE_IMPL_H
#define OXL_QUANTIZE_IMPL_H

#include "quantize_search.h"

#include <stdint.h>

/* One row of ne0 floats into its blocks; imatrix is NULL or ne0 weights. */
typedef void (*oxl_quantize_row_fn)(const float *x, void *y, int64_t ne0, const float *imatrix);

/* The row function of every format with a reference quantizer, one per spec entry with
 * quantizer=True (generated/oxl_quantizers.inc): oxl_quantize_row_<format> in quantize.c (f32, f16,
 * bf16, q8_0, q4_0), quantize_legacy.c (q4_1, q5_0, q5_1, q8_1), quantize_k.c (K-quants, q8_K) or
 * quantize_iq.c (I-quants), quantize_iq3.c (IQ3_XXS, IQ3_S) or quantize_fp4.c (mxfp4, nvfp4). */
#define OXL_QUANTIZER(name, NAME, uses_imatrix, requires_imatrix)                                                      \
    void oxl_quantize_row_##name(const float *x, void *y, int64_t ne0, const float *imatrix);
#include "oxl_quantizers.inc"
#undef OXL_QUANTIZER

#endif
