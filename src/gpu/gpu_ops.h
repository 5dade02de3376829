/* Recording the op shaders of generated/gpu: one function per shader family, each filling the push
 * constants that the shader's spec row declares (gen/spec.py GPU_*_PUSH; the runtime checks the
 * size) and computing the workgroups. Offsets and strides count elements of the binding's type
 * (floats; halves for f16 data). Each returns 0, or -1 with err. */
#ifndef OXL_GPU_OPS_H
#define OXL_GPU_OPS_H

#include "gpu.h"

#include <stdbool.h>

/* y[i] = a[i] + b[i % nb] ("add"), a[i] * b[i % nb] ("mul") for i < n; ("scale") y[i] = a[i] * s,
 * ("softcap") y[i] = tanh(a[i] / s) * s (b unused). y may be a. */
int oxl_gpu_binary(oxl_gpu *g, const char *op, oxl_gpu_buf *a, uint32_t a_off, oxl_gpu_buf *b, uint32_t b_off,
                   uint32_t nb, oxl_gpu_buf *y, uint32_t y_off, uint32_t n, float s, oxl_error *err);

/* y = norm(x) * w + b over n columns of d floats ("rms_norm" or "norm"); w (w_rows rows of d; column
 * c takes row c % w_rows) and b may be NULL. y may be x. */
int oxl_gpu_norm(oxl_gpu *g, bool rms, oxl_gpu_buf *x, uint32_t x_off, oxl_gpu_buf *w, uint32_t w_off, uint32_t w_rows,
                 oxl_gpu_buf *b, uint32_t b_off, oxl_gpu_buf *y, uint32_t y_off, uint32_t d, uint32_t n, float eps,
                 oxl_error *err);

/* RoPE in place: shader rope_norm / rope_neox / rope_multi; n_tok tokens of n_head heads at x_off +
 * j * x_tok + h * head_dim; cs holds n_dims floats per token from cs_off (oxl_rope_cos_sin). */
int oxl_gpu_rope(oxl_gpu *g, const char *shader, oxl_gpu_buf *x, uint32_t x_off, uint32_t x_tok, oxl_gpu_buf *cs,
                 uint32_t cs_off, uint32_t n_dims, uint32_t head_dim, uint32_t n_head, uint32_t n_tok, bool fused,
                 oxl_error *err);

/* y = act(g) [* u] over n_rows rows of n values: shader glu_swiglu, glu_geglu or gelu (u unused). */
typedef struct oxl_gpu_glu_push {
    uint32_t n, n_rows, g_off, g_row, u_off, u_row, y_off, y_row;
} oxl_gpu_glu_push;
int oxl_gpu_glu(oxl_gpu *g, const char *shader, oxl_gpu_buf *gb, oxl_gpu_buf *ub, oxl_gpu_buf *yb,
                const oxl_gpu_glu_push *pc, oxl_error *err);

/* f32 -> f16 or bf16 ("quantize_f16", "quantize_bf16"): n elements, y_off even. */
int oxl_gpu_quantize(oxl_gpu *g, const char *shader, oxl_gpu_buf *x, uint32_t x_off, oxl_gpu_buf *y, uint32_t y_off,
                     uint32_t n, oxl_error *err);

/* Cache rows (set_rows_f16, or set_rows_f32 with f32): column j of x (d floats at x_off + j * x_row)
 * into row rows[row0 + j] of dst (dst_off + row * dst_row halves or floats); for f16 d, dst_off,
 * dst_row even. */
int oxl_gpu_set_rows(oxl_gpu *g, bool f32, oxl_gpu_buf *x, uint32_t x_off, uint32_t x_row, oxl_gpu_buf *rows,
                     uint32_t row0, oxl_gpu_buf *dst, uint32_t dst_off, uint32_t dst_row, uint32_t d, uint32_t n,
                     oxl_error *err);

/* y = softmax(x * scale) per row of d floats, n rows. */
int oxl_gpu_soft_max(oxl_gpu *g, oxl_gpu_buf *x, uint32_t x_off, oxl_gpu_buf *y, uint32_t y_off, uint32_t d, uint32_t n,
                     float scale, oxl_error *err);

/* Flash attention over an f16 cache (flash_attn_f16), or with f32 an f32 one (flash_attn_f32; the
 * shader's comment); k_*, v_* in halves or floats. flags: 1 soft-cap (scale
 * then already divided by softcap), 2 ALiBi (aux[h] = slope), 4 sinks (aux[n_head + h]). tok: 4 ints per
 * token (row0, lo, n_kv, pos). aux may be NULL without flags 2 and 4. */
typedef struct oxl_gpu_flash_push {
    uint32_t head_dim, n_head, n_head_kv, n_tok, q_off, q_tok, k_off, k_row, v_off, v_row, o_off, o_tok, flags;
    float scale, softcap;
} oxl_gpu_flash_push;
#define OXL_GPU_FLASH_MAX_HEAD_DIM 512
int oxl_gpu_flash_attn(oxl_gpu *g, bool f32, oxl_gpu_buf *q, oxl_gpu_buf *k, oxl_gpu_buf *v, oxl_gpu_buf *o,
                       oxl_gpu_buf *aux, oxl_gpu_buf *tok, const oxl_gpu_flash_push *pc, oxl_error *err);

#endif
