/* libFuzzer harness for the mmproj loader and the vision tower (src/mm/clip.c).
 *
 * The input is a GGUF file opened from memory and loaded as an mmproj (oxl_clip_load_gguf). When it is
 * accepted, small square tiles of constant pixels are encoded on one thread and the embeddings read:
 * sides of 1 to 3 times patch x merge (mlp: up to as many patches as the position embedding allows;
 * the qwen mergers: 2x2-patch groups; gemma3: the one grid its position embedding fits, the others
 * refused). Every rejection must come with a message. Seeds: tests/fuzz/corpus/clip/ (tiny towers of
 * tests/fuzz/make_corpus.py). */
#include "clip.h"
#include "gguf.h"
#include "pool.h"

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

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static oxl_pool *g_pool;
static volatile float g_sink;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    oxl_error err = {0};
    g_pool = oxl_pool_new(1, &err);
    if (!g_pool) {
        fprintf(stderr, "fuzz_clip: %s\n", err.msg);
        abort();
    }
    return 0;
}

/* Encodes a side x side tile of constant pixels; failures need a message. */
static void encode(const oxl_clip *clip, int32_t side) {
    oxl_error err = {0};
    const int32_t n_tok = oxl_clip_n_tokens(clip, side, side);
    const int32_t n_out = oxl_clip_n_embd_out(clip);
    CHECK(n_tok >= 1 && n_out >= 1);
    float *px = malloc((size_t)side * side * 3 * sizeof(float));
    float *out = malloc((size_t)n_out * n_tok * sizeof(float));
    CHECK(px && out);
    for (size_t i = 0; i < (size_t)side * side * 3; i++) {
        px[i] = (float)(i % 7) * 0.25f - 0.75f;
    }
    oxl_mm_tile tile = {.w = side, .h = side, .pixels = px, .grid_x = n_tok, .grid_y = 1, .n_tokens = n_tok};
    if (oxl_clip_encode(clip, &tile, out, g_pool, &err) == 0) {
        float s = 0;
        for (size_t i = 0; i < (size_t)n_out * n_tok; i++) {
            s += out[i];
        }
        g_sink = s;
    } else {
        CHECK(err.msg[0] != '\0');
    }
    free(px);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(data, size, "fuzz.mmproj", &err);
    if (!g) {
        CHECK(err.msg[0] != '\0');
        return 0;
    }
    oxl_clip *clip = oxl_clip_load_gguf(g, &err);
    if (!clip) {
        CHECK(err.msg[0] != '\0');
        return 0;
    }
    const int32_t p = oxl_clip_patch_size(clip);
    /* bound the work a crafted patch size or merge factor could ask for */
    const int32_t m = oxl_clip_merge(clip);
    if (p <= 64 && m <= 8) {
        for (int32_t k = 1; k <= 3; k++) {
            encode(clip, p * m * k);
        }
    }
    oxl_clip_free(clip);
    return 0;
}
