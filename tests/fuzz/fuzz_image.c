/* libFuzzer harness for the image decoders (src/image/image_decode.c): the input is a file's bytes
 * given to oxl_image_load (PNG, JPEG or WebP by their magic bytes, anything else refused). An
 * accepted image must have sides of 1 .. 32768 pixels, at most OXL_IMAGE_MAX_PIXELS, and its
 * bitmap readable to the end; a rejection must come with a message naming "image". Seeds:
 * tests/fuzz/corpus/image/ (tests/fuzz/make_image_corpus.sh). */
#include "image.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    oxl_error err = {{0}};
    oxl_image *im = oxl_image_load(data, size, &err);
    if (!im) {
        CHECK(strncmp(err.msg, "image: ", 7) == 0);
        return 0;
    }
    const int32_t w = oxl_image_width(im), h = oxl_image_height(im);
    CHECK(w >= 1 && h >= 1 && w <= 32768 && h <= 32768 && (int64_t)w * h <= OXL_IMAGE_MAX_PIXELS);
    /* one byte per page and the last one: the whole bitmap is mapped (a full pass over 64 Mi pixels
     * would cost the fuzzer seconds) */
    const uint8_t *rgb = oxl_image_rgb(im);
    const size_t n = (size_t)w * (size_t)h * 3;
    unsigned sum = rgb[n - 1];
    for (size_t i = 0; i < n; i += 4096) {
        sum += rgb[i];
    }
    g_sink = sum;
    oxl_image_free(im);
    return 0;
}
