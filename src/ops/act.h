/* Elementwise activations and arithmetic as ggml's CPU backend evaluates them (ggml_swiglu,
 * ggml_gelu, ggml_geglu_split, ggml_add, ggml_scale, the soft-cap's ggml_tanh). Activations are
 * column-major batches: a (d, n) buffer holds n tokens of d floats each. */
#ifndef OXL_ACT_H
#define OXL_ACT_H

#include "matmul.h"

#include <stdint.h>

/* g = silu(g) * u over n_rows rows of row values each, row by row as ggml_swiglu evaluates it
 * (ggml_vec_swiglu_f32: the generated swiglu kernel). */
void oxl_swiglu(float *g, const float *u, int64_t row, int64_t n_rows);
/* x = gelu(x) elementwise, through ggml's CPU table: x rounded to fp16, the tanh-approximation GELU of
 * that value rounded to fp16 (GGML_GELU_FP16); |x| >= 10 passes (0 below -10, x above 10). */
void oxl_gelu(float *x, int64_t n);
/* x = gelu_quick(x) = x sigmoid(1.702 x) elementwise, through ggml's CPU fp16 table as for oxl_gelu
 * (GGML_GELU_QUICK_FP16: input and table entry rounded to fp16; no clamp). */
void oxl_gelu_quick(float *x, int64_t n);
/* x = silu(x) = x / (1 + exp(-x)) elementwise (ggml_silu). */
void oxl_silu(float *x, int64_t n);
/* g = gelu(g) * u elementwise (ggml_geglu_split, the same fp16 table). */
void oxl_geglu(float *g, const float *u, int64_t n);
/* x = xielu(x) elementwise with the parameters as a model stores them (alpha_n, alpha_p before their
 * softplus), as ggml_xielu builds the op (ggml/src/ggml.c: softplus applied once, beta added to the
 * negative slope) and the CPU backend evaluates it (ggml-cpu/unary-ops.cpp, op_xielu):
 *   x > 0:  softplus(alpha_p) x^2 + beta x
 *   else:   (expm1(min(x, eps)) - x) (beta + softplus(alpha_n)) + beta x */
void oxl_xielu(float *x, int64_t n, float alpha_n, float alpha_p, float beta, float eps);

/* x += y elementwise. */
void oxl_add(float *x, const float *y, int64_t n);
/* y[:, j] += b for each of n columns of length d (b: (d) f32; unbound b does nothing). */
void oxl_add_bias(float *y, const oxl_tensor *b, int64_t d, int64_t n);
/* x *= s elementwise (ggml_scale). */
void oxl_scale(float *x, int64_t n, float s);
/* x = cap * tanh(x / cap) elementwise, as ggml_scale(1/cap), ggml_tanh, ggml_scale(cap). */
void oxl_softcap(float *x, int64_t n, float cap);

/* Activation sparsity by a Gaussian top-k (llama.cpp src/models/gemma3n.cpp, gaussian_topk): each of
 * n rows of d values keeps only what exceeds mean + std_mul * std (std with the d - 1 divisor),
 * x = relu(x - (mean + std_mul * std)), the statistics in ggml's order (ggml_mean, ggml_sum_rows
 * summing in double). */
void oxl_gaussian_topk(float *x, int64_t d, int64_t n, float std_mul);

/* oxl_gelu / oxl_geglu with the table entries as ggml's FMA-contracting build fills them (one fused
 * multiply-add in the tanh argument); the two differ in a few entries' last fp16 bit, which only a
 * graph as sensitive as gemma3n's shows. */
void oxl_gelu_fused(float *x, int64_t n);
void oxl_geglu_fused(float *g, const float *u, int64_t n);

#endif
