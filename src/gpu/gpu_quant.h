/* The weight formats' shaders of generated/gpu (templates/gpu/{mul_mat_q,dequant_q,quantize_q8}
 * .comp.j2 and vk's mul_mat.comp.j2): recording them with their push constants and workgroups, and
 * mul_mat from f32 activations for any weight format the device has, with the activations first
 * converted into the format's partner as the CPU's vec_dot pairs them (f16 -> f16, bf16 -> bf16,
 * q4_0/q5_0/q8_0/iq4_nl/mxfp4/nvfp4/q1_0 -> q8_0, q4_1/q5_1 -> q8_1, K-quants and iq4_xs -> q8_K).
 * Offsets and strides: bytes for blocks (and for W of every format, as the mul_mat convention has
 * them), floats for f32 data. Each returns 0, or -1 with err. */
#ifndef OXL_GPU_QUANT_H
#define OXL_GPU_QUANT_H

#include "gpu.h"
#include "oxl_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this build has mul_mat_<t> and the quantize shader of t's partner. */
bool oxl_gpu_mul_mat_supported(oxl_type t);

/* Bytes of scratch oxl_gpu_mul_mat_f32 needs for ncols columns of K activations against weights of
 * format t: 0 for f32 (the activations are read as they are), else ncols rows of t's partner. */
size_t oxl_gpu_mul_mat_scratch(oxl_type t, uint32_t K, uint32_t ncols);

/* The fewest columns for which oxl_gpu_mul_mat_f32 takes mul_mat_tiled_<t> (tiles of rows x columns
 * through shared memory, each weight block read once per tile) over mul_mat_<t> (a few columns per
 * workgroup, each weight block read again for every column group). */
#define OXL_GPU_TILED_MIN_COLS 8

/* Records Y (nrows, ncols) = W (K, nrows) . X (K, ncols): W of format t, row r at w_off + r * w_row
 * bytes; X f32, column c at x_off + c * x_col floats; Y column c at y_off + c * y_col floats. X goes
 * through quantize_<partner> into scratch (oxl_gpu_mul_mat_scratch bytes from its start; unused
 * for f32), then mul_mat_<t> (oxl_gpu_mul_mat), or mul_mat_tiled_<t> from OXL_GPU_TILED_MIN_COLS
 * columns on. K a multiple of t's and its partner's block. */
int oxl_gpu_mul_mat_f32(oxl_gpu *g, oxl_type t, oxl_gpu_buf *w, uint32_t w_off, uint32_t w_row, oxl_gpu_buf *x,
                        uint32_t x_off, uint32_t x_col, oxl_gpu_buf *scratch, oxl_gpu_buf *y, uint32_t y_off,
                        uint32_t y_col, uint32_t nrows, uint32_t ncols, uint32_t K, oxl_error *err);

/* quantize_<p> (p = q8_0, q8_1 or q8_K): ncols columns of K floats (column c at x_off + c * x_col
 * floats) into blocks of p, column c at y_off + c * y_col bytes; bytes equal to the CPU's activation
 * quantizer. Any byte offsets: neighbouring bytes are kept. */
int oxl_gpu_quantize_q8(oxl_gpu *g, oxl_type p, oxl_gpu_buf *x, uint32_t x_off, uint32_t x_col, oxl_gpu_buf *y,
                        uint32_t y_off, uint32_t y_col, uint32_t K, uint32_t ncols, oxl_error *err);

/* dequant_<t>: nrows rows of K elements (row r at w_off + r * w_row bytes) to f32 (row r at
 * y_off + r * y_row floats), bit for bit the CPU's dequant. */
int oxl_gpu_dequant(oxl_gpu *g, oxl_type t, oxl_gpu_buf *w, uint32_t w_off, uint32_t w_row, oxl_gpu_buf *y,
                    uint32_t y_off, uint32_t y_row, uint32_t K, uint32_t nrows, oxl_error *err);

#endif
