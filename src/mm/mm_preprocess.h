/* Image preprocessing as llama.cpp's libmtmd (tools/mtmd/mtmd-image.cpp): an oxl_image becomes the
 * tiles the vision tower encodes, each resized, letterboxed, cut and normalised bit for bit as
 * llama.cpp does it (golden/mm/README.md gives the arithmetic). */
#ifndef OXL_MM_PREPROCESS_H
#define OXL_MM_PREPROCESS_H

#include "image.h"
#include "mm.h"
#include "mm_params.h"

#include <stdint.h>

/* ---- the 8-bit resizes (img_tool); src and dst are RGB bytes [3, w, h], row-major ---- */

/* llama.cpp's bicubic (resize_bicubic, not PIL's): sample x = (int)(tx * j), tx = sw / dw in
 * float, no half-pixel offset; a cubic through the four neighbours along x (coefficients in double,
 * stored as float) for the four rows around y, then along y; rounded half away from zero, clamped
 * to 0..255. dst holds 3 * dw * dh bytes. */
void oxl_mm_resize_bicubic(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t dw, int32_t dh);

/* llama.cpp's bilinear (resize_bilinear, not PIL's): corner-aligned, x_ratio = (sw - 1) / (dw - 1)
 * in float (0 when dw = 1), lerp along x then y in float, truncated to uint8. dst holds 3 * dw * dh
 * bytes. */
void oxl_mm_resize_bilinear(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t dw, int32_t dh);

/* img_tool::resize with padding: keeps the aspect ratio (scale = min(tw / sw, th / sh) in float,
 * size min(ceil(s * scale), t)), resizes with algo and pastes the result centred (integer division)
 * on a tw x th canvas of colour pad; a same-size image is copied. dst holds 3 * tw * th bytes.
 * Writes the inner size and offset to inner (w, h, x, y) when inner is not NULL. Returns 0, or -1
 * with err when memory is short. */
int oxl_mm_letterbox(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t tw, int32_t th,
                     oxl_mm_resize algo, const uint8_t pad[3], int32_t inner[4], oxl_error *err);

/* Qwen2-VL's target size (img_tool::calc_size_preserved_ratio, transformers' smart_resize):
 * multiples of align with min_pixels <= w * h <= max_pixels where the rounding allows, float
 * arithmetic as llama.cpp. Returns 0, or -1 with err when the result exceeds
 * OXL_MM_MAX_SIDE / OXL_MM_MAX_TILE_PIXELS (an extreme aspect ratio). */
int oxl_mm_smart_size(int32_t w, int32_t h, int32_t align, int64_t min_pixels, int64_t max_pixels, int32_t *tw,
                      int32_t *th, oxl_error *err);

/* LLaVA-NeXT's pinpoint choice (select_best_resolution): the candidate with the largest effective
 * resolution min((int)(w * s) * (int)(h * s), w * h), s = min(cw / w, ch / h) in float, ties to the
 * smaller wasted area, exact ties to the earlier one. Returns its index (n > 0). */
int32_t oxl_mm_best_pinpoint(int32_t w, int32_t h, const int32_t (*pinpoints)[2], int32_t n);

/* ---- whole images ---- */

/* The tiles of one image, in the order mtmd encodes them (LLaVA-NeXT: the tiles row-major, then
 * the overview). */
typedef struct oxl_mm_tiles {
    oxl_mm_tile *tiles; /* [n] */
    int32_t n;
} oxl_mm_tiles;

/* Preprocesses image as mtmd's preprocessor for p (fixed-size letterbox, anyres tiles + overview,
 * or Qwen2-VL's dynamic resolution), normalises every tile ((v / 255 - mean) / std in float,
 * planar [w, h, 3]) and sets each tile's grid and token count as mtmd does: M-RoPE projectors
 * (w / (patch * merge)) x (h / (patch * merge)) merged tokens, otherwise n_tokens x 1 with
 * n_tokens = (w / patch) * (h / patch). On success out owns the tiles (oxl_mm_tiles_free). Returns
 * 0, or -1 with err (a size beyond OXL_MM_MAX_TILE_PIXELS, a tile smaller than a patch, memory). */
int oxl_mm_preprocess(const oxl_mm_params *p, const oxl_image *image, oxl_mm_tiles *out, oxl_error *err);

/* Frees the tiles and their pixels; zeroes *t. NULL is a no-op. */
void oxl_mm_tiles_free(oxl_mm_tiles *t);

#endif
