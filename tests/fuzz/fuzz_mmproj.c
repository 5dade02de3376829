/* libFuzzer harness for the mmproj preprocessing parameters (src/mm/mm_params.c), the image
 * preprocessing they drive (mm_preprocess.c) and the prompt chunking (mm_chunks.c).
 *
 * Input: [u8 width][u8 height][u8 images][u16 prompt length][prompt][GGUF]. The GGUF is read as an
 * mmproj; when its parameters are accepted, a width x height image (1 + byte % 64 pixels per side,
 * pixel bytes from the input) is preprocessed, and the prompt is split into chunks for
 * images % 4 copies of it with models/stories260K.gguf's tokenizer. Invariants trap when broken: a
 * rejection always has a message; every tile has pixels, a positive size and token count, and the
 * chunks' positions add up. */
#include "gguf.h"
#include "image.h"
#include "mm_chunks.h"
#include "mm_params.h"
#include "mm_preprocess.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

static oxl_model *g_model;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Keeps a run fast: larger resized images are legal but slow to fuzz through. */
static int64_t work_pixels(const oxl_mm_params *p) {
    int64_t px = (int64_t)p->image_size * p->image_size;
    for (int32_t i = 0; i < p->n_pinpoints; i++) {
        const int64_t q = (int64_t)p->pinpoints[i][0] * p->pinpoints[i][1];
        px = q > px ? q : px;
    }
    return p->kind == OXL_MM_PREP_DYN ? p->max_pixels : px;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 5) {
        return 0;
    }
    if (!g_model) {
        oxl_error err = {0};
        oxl_model_params mp = oxl_model_default_params();
        g_model = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &err);
        CHECK(g_model != NULL);
    }
    const int32_t w = 1 + data[0] % 64, h = 1 + data[1] % 64, n_images = data[2] % 4;
    size_t plen = (size_t)data[3] | (size_t)data[4] << 8;
    plen = plen < size - 5 ? plen : size - 5;
    const char *prompt = (const char *)data + 5;
    const uint8_t *file = data + 5 + plen;
    const size_t file_size = size - 5 - plen;

    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(file, file_size, "fuzz.mmproj", &err);
    if (!g) {
        CHECK(err.msg[0] != '\0');
        return 0;
    }
    oxl_mm_params p;
    const oxl_mm_limits limits = {.min_tokens = data[0] % 3 == 0 ? data[1] : 0};
    if (oxl_mm_params_read(g, &limits, &p, &err) != 0) {
        CHECK(err.msg[0] != '\0');
        oxl_gguf_close(g);
        return 0;
    }
    oxl_gguf_close(g);
    CHECK(p.image_size > 0 && p.patch_size > 0 && p.n_merge > 0);
    if (work_pixels(&p) > (1 << 20)) {
        return 0;
    }
    uint8_t *rgb = malloc((size_t)w * h * 3);
    CHECK(rgb != NULL);
    for (size_t i = 0; i < (size_t)w * h * 3; i++) {
        rgb[i] = data[i % size] ^ (uint8_t)(i * 37);
    }
    oxl_image *image = oxl_image_from_rgb(rgb, w, h, &err);
    free(rgb);
    CHECK(image != NULL);
    oxl_mm_tiles tiles;
    if (oxl_mm_preprocess(&p, image, &tiles, &err) != 0) {
        CHECK(err.msg[0] != '\0' && tiles.n == 0 && tiles.tiles == NULL);
        oxl_image_free(image);
        return 0;
    }
    oxl_image_free(image);
    CHECK(tiles.n >= 1);
    for (int32_t i = 0; i < tiles.n; i++) {
        const oxl_mm_tile *t = &tiles.tiles[i];
        CHECK(t->pixels && t->w > 0 && t->h > 0 && t->n_tokens > 0 && t->grid_x > 0 && t->grid_y > 0);
        CHECK((int64_t)t->grid_x * t->grid_y == t->n_tokens);
    }
    oxl_mm_tiles images[3] = {tiles, tiles, tiles};
    oxl_mm_chunks chunks;
    const oxl_mm_prompt opt = {.images_first = data[2] & 4, .add_special = data[2] & 8, .parse_special = data[2] & 16};
    if (oxl_mm_tokenize(g_model, &p, prompt, plen, images, n_images, &opt, &chunks, &err) != 0) {
        CHECK(err.msg[0] != '\0' && chunks.n == 0 && chunks.chunks == NULL);
    } else {
        int64_t n_tokens = 0, n_pos = 0;
        for (int32_t i = 0; i < chunks.n; i++) {
            const oxl_mm_chunk *c = &chunks.chunks[i];
            CHECK(c->pos0 == n_pos && c->n_tokens > 0 && c->n_pos > 0);
            CHECK(c->type == OXL_MM_CHUNK_TEXT ? c->tokens != NULL : c->tile >= 0 && c->tile < tiles.n);
            n_tokens += c->n_tokens;
            n_pos += c->n_pos;
        }
        CHECK(n_tokens == chunks.n_tokens && n_pos == chunks.n_pos);
        int32_t *seq = malloc(sizeof *seq * (size_t)(chunks.n_tokens ? chunks.n_tokens : 1) * 6);
        CHECK(seq != NULL);
        oxl_mm_chunks_sequence(&chunks, seq, seq + chunks.n_tokens, seq + 2 * (size_t)chunks.n_tokens);
        free(seq);
        oxl_mm_chunks_free(&chunks);
    }
    oxl_mm_tiles_free(&tiles);
    return 0;
}
