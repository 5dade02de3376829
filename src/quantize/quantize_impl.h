/* Internal to the reference quantizers (src/quantize/): the per-format row functions collected in
 * quantize.c's table (the rounding helpers and scale searches are quantize_search.h's). */
#ifndef OXL_QUANTIZE_IMPL_H
#define OXL_QUANTIZE_IMPL_H

#include "quantize_search.h"

#include <stdint.h>

/* One row of ne0 floats into its blocks; imatrix is NULL or ne0 weights. */
typedef void (*oxl_quantize_row_fn)(const float *x, void *y, int64_t ne0, const float *imatrix);

/* Row functions of quantize_k.c (K-quants and q8_K), quantize_legacy.c and quantize_iq.c. */
void oxl_quantize_row_q4_1(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q5_0(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q5_1(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q8_1(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q2_K(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q3_K(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q4_K(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q5_K(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q6_K(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_q8_K(const float *x, void *y, int64_t ne0, const float *imatrix);
void oxl_quantize_row_iq4_nl(const float *x, void *y, int64_t ne0, const float *imatrix);

#endif
