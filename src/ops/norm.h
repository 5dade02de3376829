/* Layer norms as llama.cpp's build_norm evaluates them (ggml_rms_norm / ggml_norm, then ggml_mul and
 * ggml_add), in ggml's accumulation order. Activations are column-major batches: a (d, n) buffer
 * holds n tokens of d floats each. */
#ifndef OXL_NORM_H
#define OXL_NORM_H

#include "matmul.h"

#include <stdint.h>

typedef enum oxl_norm_kind {
    OXL_NORM_RMS,   /* x / sqrt(mean(x^2) + eps)          (ggml_rms_norm) */
    OXL_NORM_LAYER, /* (x - mean) / sqrt(var(x) + eps)    (ggml_norm) */
} oxl_norm_kind;

/* y = norm(x) * w + b for each of n columns of length d, as llama.cpp's build_norm: the norm in
 * ggml's accumulation order (sums in double), then ggml_mul by w and ggml_add of b. w and b may be
 * NULL (or unbound); a 2-D w of (d, r) gives column c the weights of row c % r (per-head weights
 * broadcast over tokens). x and y may alias. */
void oxl_norm(oxl_norm_kind kind, const float *x, const oxl_tensor *w, const oxl_tensor *b, float *y, int64_t d,
              int64_t n, float eps);

#endif
