/* Reference (weight) quantization: what ggml_quantize_chunk (ggml/src/ggml.c) writes, byte for byte.
 * Scalar C, run once per tensor at conversion time; the activation quantizers used during
 * inference are the generated per-ISA kernels (src/kernels/kernels.h). */
#ifndef OXL_QUANTIZE_H
#define OXL_QUANTIZE_H

#include "oxillama.h"
#include "oxl_types.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether oxl_quantize_rows can write format t, and whether it then uses an importance matrix
 * (formats that ignore one, as ggml's q8_0 does, answer false). */
bool oxl_quantize_supported(oxl_type t);
bool oxl_quantize_uses_imatrix(oxl_type t);
/* Whether format t cannot be quantized without an importance matrix (ggml_quantize_requires_imatrix:
 * iq2_xxs, iq2_xs, iq1_s); oxl_quantize_rows refuses them with a NULL imatrix. */
bool oxl_quantize_requires_imatrix(oxl_type t);

/* Quantizes nrows rows of ne0 floats x (row-major, ne0 contiguous) into y, which holds
 * nrows * oxl_row_size(t, ne0) bytes. imatrix: NULL, or ne0 importance weights (one per column)
 * used by the formats that take one (ggml's quantize_<type> with quant_weights).
 * Reproduces ggml_quantize_chunk (ggml/src/ggml.c, ggml-quants.c): f32 copy, ggml_fp32_to_fp16_row,
 * ggml_fp32_to_bf16_row_ref, and for q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K
 * quantize_row_<type>_ref without an imatrix, quantize_row_<type>_impl with one (q8_0 ignores it);
 * the activation formats q8_1 and q8_K by quantize_row_<type>_ref (no imatrix). Without an
 * imatrix none of these formats takes the imatrix-capable _impl path: ggml's quantize_<type> calls
 * the _ref function whenever quant_weights is NULL (so rows are independent of each other).
 * Returns 0, or -1 with err set when t is not supported, ne0 is not a multiple of the block size,
 * t requires an imatrix and has none, or a row holds NaN/Inf (named by row and column). */
int oxl_quantize_rows(oxl_type t, const float *x, void *y, int64_t nrows, int64_t ne0, const float *imatrix,
                      oxl_error *err);

/* ggml's quantize_row_iq4_nl_ref (ne0 a multiple of 32): the rows ggml's set_rows writes into an
 * iq4_nl KV cache. Not oxl_quantize_rows' iq4_nl, which is quantize_iq4_nl's scale search (what
 * llama-quantize writes): this one keeps the codes of the first scale, max / -127. */
void oxl_quantize_row_iq4_nl_ref(const float *x, void *y, int64_t ne0);

#endif
