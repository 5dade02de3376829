/* Decoded images: 8-bit RGB bitmaps, the input of the vision side (src/mm).
 *
 * An oxl_image is what llama.cpp's mtmd_bitmap holds for an image: width x height pixels, three
 * bytes (R, G, B) each, row-major from the top-left pixel, no padding between rows. The decoders
 * (PNG, JPEG; image_decode.c) and oxl_image_from_rgb make them; the public accessors are in
 * include/oxillama.h. */
#ifndef OXL_IMAGE_H
#define OXL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "oxillama.h"

struct oxl_image {
    int32_t w, h;
    uint8_t *rgb; /* [3, w, h] in ggml order: rgb[(y * w + x) * 3 + c] */
};

/* An image that takes ownership of rgb (malloc'd, 3 * w * h bytes). NULL when memory is short
 * (rgb is then freed). */
oxl_image *oxl_image_adopt(uint8_t *rgb, int32_t w, int32_t h);

#endif
