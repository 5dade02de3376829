/* oxl_image: the bitmap type and its accessors (image.h; the public part in include/oxillama.h). */
#include "image.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

oxl_image *oxl_image_adopt(uint8_t *rgb, int32_t w, int32_t h) {
    oxl_image *im = malloc(sizeof *im);
    if (!im) {
        free(rgb);
        return NULL;
    }
    im->w = w;
    im->h = h;
    im->rgb = rgb;
    return im;
}

oxl_image *oxl_image_from_rgb(const uint8_t *rgb, int32_t w, int32_t h, oxl_error *err) {
    if (w <= 0 || h <= 0 || (int64_t)w * h > OXL_IMAGE_MAX_PIXELS) {
        oxl_err_set(err, "image: %d x %d pixels is out of range (1 .. %lld pixels)", (int)w, (int)h,
                    (long long)OXL_IMAGE_MAX_PIXELS);
        return NULL;
    }
    if (!rgb) {
        oxl_err_set(err, "image: no pixel data");
        return NULL;
    }
    const size_t n = (size_t)w * (size_t)h * 3;
    uint8_t *copy = malloc(n);
    oxl_image *im = copy ? oxl_image_adopt(copy, w, h) : NULL;
    if (!im) {
        oxl_err_set(err, "image: out of memory for %d x %d pixels", (int)w, (int)h);
        return NULL;
    }
    memcpy(copy, rgb, n);
    return im;
}

int32_t oxl_image_width(const oxl_image *im) { return im ? im->w : 0; }
int32_t oxl_image_height(const oxl_image *im) { return im ? im->h : 0; }
const uint8_t *oxl_image_rgb(const oxl_image *im) { return im ? im->rgb : NULL; }

void oxl_image_free(oxl_image *im) {
    if (im) {
        free(im->rgb);
        free(im);
    }
}
