/* The public mmproj options and framing text (include/oxillama.h): oxl_mmproj_load_params with
 * llama.cpp's image_min_tokens / image_max_tokens (mtmd_context_params), checked by the size of the
 * image they give, and oxl_mmproj_image_text, the text mtmd_tokenize puts around each image
 * (golden/mm/README.md: Qwen2-VL's <|vision_start|> / <|vision_end|>, nothing for LLaVA). */
#include "oxillama.h"

#include <criterion/criterion.h>
#include <string.h>

#define MM OXL_SOURCE_DIR "/golden/mm/"
#define ARCH OXL_SOURCE_DIR "/golden/arch/"

/* The rows and the tile grid of golden/mm/image.png under pair (text, mmproj) with params p. */
static void encode(const char *text, const char *mmproj, const oxl_mmproj_params *p, int32_t *rows, int32_t *gx,
                   int32_t *gy) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(text, &mp, &err);
    cr_assert(m, "%s", err.msg);
    oxl_mmproj *mm = oxl_mmproj_load_params(mmproj, m, p, &err);
    cr_assert(mm, "%s", err.msg);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 256;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    oxl_image *img = oxl_image_load_file(MM "image.png", &err);
    cr_assert(ctx && img, "%s", err.msg);
    oxl_image_embd *e = oxl_image_encode(ctx, mm, img, &err);
    cr_assert(e, "%s", err.msg);
    *rows = oxl_image_embd_n_tokens(e);
    oxl_image_embd_tile(e, oxl_image_embd_n_tiles(e) - 1, NULL, gx, gy);
    oxl_image_embd_free(e);
    oxl_image_free(img);
    oxl_ctx_free(ctx);
    oxl_mmproj_free(mm);
    oxl_model_free(m);
}

/* The 44x30 image with align 28 (patch 14 x merge 2), llama.cpp's calc_size_preserved_ratio:
 * defaults (8..4096 tokens): 112x84, a 4x3 grid (golden/mm/README.md); min 64 tokens (50176
 * pixels > the rounded 56x28): beta = sqrt(50176 / 1320) = 6.16540, h = ceil(30 beta / 28) x 28 =
 * 196, w = ceil(44 beta / 28) x 28 = 280: 10x7; min 2, max 4 tokens: 56x28 lies within
 * [1568, 3136] pixels: 2x1. */
Test(mm_params_api, qwen2vl_token_limits) {
    int32_t rows, gx, gy;
    encode(ARCH "qwen2vl.gguf", MM "qwen2vl.mmproj.gguf", NULL, &rows, &gx, &gy);
    cr_expect(rows == 12 && gx == 4 && gy == 3, "default: %d rows, %dx%d", rows, gx, gy);
    const oxl_mmproj_params min64 = {64, 0};
    encode(ARCH "qwen2vl.gguf", MM "qwen2vl.mmproj.gguf", &min64, &rows, &gx, &gy);
    cr_expect(rows == 70 && gx == 10 && gy == 7, "min 64: %d rows, %dx%d", rows, gx, gy);
    const oxl_mmproj_params max4 = {2, 4};
    encode(ARCH "qwen2vl.gguf", MM "qwen2vl.mmproj.gguf", &max4, &rows, &gx, &gy);
    cr_expect(rows == 2 && gx == 2 && gy == 1, "min 2 max 4: %d rows, %dx%d", rows, gx, gy);
}

/* LLaVA-1.5's fixed 42x42 image (9 rows) ignores the limits, as llama.cpp does. */
Test(mm_params_api, mlp_ignores_limits) {
    int32_t rows, gx, gy;
    const oxl_mmproj_params min64 = {64, 128};
    encode(ARCH "llama.gguf", MM "llava15.mmproj.gguf", &min64, &rows, &gx, &gy);
    cr_expect(rows == 9, "%d rows", rows);
}

Test(mm_params_api, limits_that_cannot_hold) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(ARCH "qwen2vl.gguf", &mp, &err);
    cr_assert(m, "%s", err.msg);
    const oxl_mmproj_params bad = {100, 50};
    cr_expect_null(oxl_mmproj_load_params(MM "qwen2vl.mmproj.gguf", m, &bad, &err));
    cr_expect(strstr(err.msg, "image_max_tokens 50") && strstr(err.msg, "image_min_tokens 100"), "%s", err.msg);
    oxl_model_free(m);
}

Test(mm_params_api, image_frame) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *q = oxl_model_load(ARCH "qwen2vl.gguf", &mp, &err);
    oxl_model *l = oxl_model_load(ARCH "llama.gguf", &mp, &err);
    cr_assert(q && l, "%s", err.msg);
    oxl_mmproj *mq = oxl_mmproj_load(MM "qwen2vl.mmproj.gguf", q, &err);
    oxl_mmproj *ml = oxl_mmproj_load(MM "llava15.mmproj.gguf", l, &err);
    cr_assert(mq && ml, "%s", err.msg);
    const char *b = NULL, *e = NULL;
    oxl_mmproj_image_text(mq, &b, &e);
    cr_expect_str_eq(b, "<|vision_start|>");
    cr_expect_str_eq(e, "<|vision_end|>");
    oxl_mmproj_image_text(ml, &b, &e);
    cr_expect_str_eq(b, "");
    cr_expect_str_eq(e, "");
    oxl_mmproj_image_text(NULL, &b, &e);
    cr_expect_str_eq(b, "");
    cr_expect_str_eq(e, "");
    oxl_mmproj_free(mq);
    oxl_mmproj_free(ml);
    oxl_model_free(q);
    oxl_model_free(l);
}
