/* Decoding image embeddings (oxl_batch.embd, oxl_decode_image_embd) with llama.cpp's positions,
 * against libmtmd's goldens (golden/mm/<variant>.golden.gguf, provenance in golden/mm/README.md):
 * the prompt is decoded chunk by chunk as the golden lays it out (text chunks as token ids, image
 * chunks from the golden's image.K.embd, the projector output llama.cpp fed to llama_decode), every
 * row's logits kept, F32 K/V cache, flash attention off, then the 8 greedy steps. Checked: the logits
 * of every prompt row and greedy step within 1e-5 of llama.cpp's (the golden README's numpy model
 * reproduces them within 2.6e-6), every row's argmax, the greedy tokens, and the rope position
 * before each chunk and greedy step (oxl_seq_pos_next) against the golden's chunk_pos0, n_pos and
 * greedy_pos. For Qwen2-VL (M-RoPE) the image tokens' 2D positions are what the logits from the
 * image on depend on (golden README: plain sequential positions move them by 2.57).
 *
 * The ctests mm-embd-<isa> (tests/cli/mm_embd_tests.cmake) run this suite under every ISA cap. */
#include "gguf.h"
#include "oxillama.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MM OXL_SOURCE_DIR "/golden/mm/"
#define ARCH OXL_SOURCE_DIR "/golden/arch/"

enum { N_GREEDY = 8 };
static const float TOL = 1e-5f;

/* One golden file: its tensors as the test reads them. */
typedef struct golden {
    oxl_gguf *g;
    int32_t n_vocab, n_embd, n_chunks, n_tokens, n_pos;
    bool mrope;
    const int32_t *chunk_type, *chunk_n_tokens, *chunk_pos0, *chunk_grid_x, *chunk_grid_y, *tokens, *pos;
    const int32_t *greedy, *greedy_pos;
    const float *logits, *greedy_logits; /* (n_vocab, n_tokens), (n_vocab, 8) */
} golden;

static int64_t gint(const oxl_gguf *g, const char *key) {
    oxl_error err = {0};
    int64_t v = -1;
    cr_assert_eq(oxl_gguf_get_int(g, key, &v, &err), 1, "golden key %s: %s", key, err.msg);
    return v;
}

/* Tensor name of type (0 f32, 26 i32) with n elements. */
static const void *gtensor(const oxl_gguf *g, const char *name, uint32_t type, int64_t n) {
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, name);
    cr_assert_not_null(t, "golden tensor %s is missing", name);
    cr_assert_eq(t->type, type, "golden tensor %s has type %u", name, t->type);
    cr_assert_eq(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3], n, "golden tensor %s has %lld elements, not %lld", name,
                 (long long)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]), (long long)n);
    return t->data;
}

static golden golden_open(const char *variant) {
    char path[512];
    snprintf(path, sizeof path, MM "%s.golden.gguf", variant);
    oxl_error err = {0};
    golden gd = {.g = oxl_gguf_open(path, &err)};
    cr_assert_not_null(gd.g, "%s", err.msg);
    const oxl_gguf *g = gd.g;
    gd.n_vocab = (int32_t)gint(g, "golden.n_vocab");
    gd.n_embd = (int32_t)gint(g, "golden.n_embd");
    gd.n_chunks = (int32_t)gint(g, "golden.n_chunks");
    gd.n_tokens = (int32_t)gint(g, "golden.n_tokens");
    gd.n_pos = (int32_t)gint(g, "golden.n_pos");
    cr_assert_eq(oxl_gguf_get_bool(g, "golden.use_mrope", &gd.mrope, &err), 1, "golden.use_mrope: %s", err.msg);
    cr_assert_eq(gint(g, "golden.n_greedy"), N_GREEDY);
    gd.chunk_type = gtensor(g, "chunk_type", 26, gd.n_chunks);
    gd.chunk_n_tokens = gtensor(g, "chunk_n_tokens", 26, gd.n_chunks);
    gd.chunk_pos0 = gtensor(g, "chunk_pos0", 26, gd.n_chunks);
    gd.chunk_grid_x = gtensor(g, "chunk_grid_x", 26, gd.n_chunks);
    gd.chunk_grid_y = gtensor(g, "chunk_grid_y", 26, gd.n_chunks);
    gd.tokens = gtensor(g, "tokens", 26, gd.n_tokens);
    gd.pos = gtensor(g, "pos", 26, (int64_t)gd.n_tokens * (gd.mrope ? 4 : 1));
    gd.greedy = gtensor(g, "greedy", 26, N_GREEDY);
    gd.greedy_pos = gtensor(g, "greedy_pos", 26, N_GREEDY);
    gd.logits = gtensor(g, "logits", 0, (int64_t)gd.n_vocab * gd.n_tokens);
    gd.greedy_logits = gtensor(g, "greedy_logits", 0, (int64_t)gd.n_vocab * N_GREEDY);
    return gd;
}

/* image.K.embd: (n_embd, n) embeddings of image chunk K. */
static const float *golden_embd(const golden *gd, int k, int32_t n) {
    char name[64];
    snprintf(name, sizeof name, "image.%d.embd", k);
    return gtensor(gd->g, name, 0, (int64_t)gd->n_embd * n);
}

static oxl_model *load(const char *file) {
    char path[512];
    snprintf(path, sizeof path, ARCH "%s", file);
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(path, &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    return m;
}

static oxl_ctx *new_ctx(const oxl_model *m, int32_t n_ctx, int32_t n_batch) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_threads = 2;
    cp.type_k = OXL_KV_F32;
    cp.type_v = OXL_KV_F32;
    cp.flash_attn = OXL_FLASH_ATTN_OFF;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    return ctx;
}

static int32_t argmax(const float *v, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++) {
        best = v[i] > v[best] ? i : best;
    }
    return best;
}

/* Logits of row i of the last decode against the golden column want (n_vocab floats). */
static void check_row(const oxl_ctx *ctx, int32_t i, const float *want, int32_t n_vocab, const char *what, int32_t at,
                      float tol) {
    const float *got = oxl_get_logits(ctx, i);
    cr_assert_not_null(got, "%s %d: no logits", what, at);
    float worst = 0.0f;
    for (int32_t v = 0; v < n_vocab; v++) {
        const float d = fabsf(got[v] - want[v]);
        worst = d > worst || isnan(d) ? d : worst;
    }
    cr_assert(worst <= tol, "%s %d: logits differ from llama.cpp's by up to %g (tolerance %g)", what, at, worst, tol);
    cr_assert_eq(argmax(got, n_vocab), argmax(want, n_vocab), "%s %d: argmax %d, llama.cpp's %d", what, at,
                 argmax(got, n_vocab), argmax(want, n_vocab));
}

/* Decodes chunk c (starting at sequence index i, image chunk number k) with every row's logits. */
static void decode_chunk(oxl_ctx *ctx, const golden *gd, int32_t c, int32_t i, int k) {
    oxl_error err = {0};
    const int32_t n = gd->chunk_n_tokens[c];
    if (gd->chunk_type[c] == 0) {
        cr_assert_eq(oxl_decode(ctx, gd->tokens + i, n, true, &err), 0, "chunk %d: %s", c, err.msg);
    } else {
        cr_assert_eq(oxl_decode_image_embd(ctx, 0, golden_embd(gd, k, n), n, gd->chunk_grid_x[c], gd->chunk_grid_y[c],
                                           true, &err),
                     0, "chunk %d: %s", c, err.msg);
    }
}

/* The whole prompt, chunk by chunk, each chunk's rows checked; returns the token after the prompt. */
static oxl_token run_prompt(oxl_ctx *ctx, const golden *gd, float tol) {
    int k = 0;
    for (int32_t c = 0, i = 0; c < gd->n_chunks; c++) {
        const int32_t n = gd->chunk_n_tokens[c];
        cr_assert_eq(oxl_seq_n_past(ctx, 0), i);
        cr_assert_eq(oxl_seq_pos_next(ctx, 0), gd->chunk_pos0[c], "chunk %d: next position %d, llama.cpp's %d", c,
                     oxl_seq_pos_next(ctx, 0), gd->chunk_pos0[c]);
        /* the position each row starts from: the golden's t (section 0) of the chunk's first row */
        cr_assert_eq(gd->pos[i], gd->chunk_pos0[c]);
        decode_chunk(ctx, gd, c, i, k);
        k += gd->chunk_type[c] != 0;
        for (int32_t j = 0; j < n; j++) {
            check_row(ctx, j, gd->logits + (size_t)(i + j) * gd->n_vocab, gd->n_vocab, "prompt row", i + j, tol);
        }
        i += n;
    }
    cr_assert_eq(oxl_seq_n_past(ctx, 0), gd->n_tokens);
    cr_assert_eq(oxl_seq_pos_next(ctx, 0), gd->n_pos, "after the prompt: next position %d, llama.cpp's n_pos %d",
                 oxl_seq_pos_next(ctx, 0), gd->n_pos);
    return (oxl_token)argmax(oxl_get_logits(ctx, -1), gd->n_vocab);
}

/* The 8 greedy steps after the prompt, each fed back with one decode. */
static void run_greedy(oxl_ctx *ctx, const golden *gd, oxl_token tok, float tol) {
    oxl_error err = {0};
    for (int s = 0; s < N_GREEDY; s++) {
        cr_assert_eq(tok, gd->greedy[s], "greedy step %d: token %d, llama.cpp's %d", s, tok, gd->greedy[s]);
        cr_assert_eq(oxl_seq_pos_next(ctx, 0), gd->greedy_pos[s], "greedy step %d: position %d, llama.cpp's %d", s,
                     oxl_seq_pos_next(ctx, 0), gd->greedy_pos[s]);
        cr_assert_eq(oxl_decode(ctx, &tok, 1, false, &err), 0, "%s", err.msg);
        check_row(ctx, 0, gd->greedy_logits + (size_t)s * gd->n_vocab, gd->n_vocab, "greedy step", s, tol);
        tok = (oxl_token)argmax(oxl_get_logits(ctx, -1), gd->n_vocab);
    }
}

static void check_variant_tol(const char *variant, const char *text_model, int32_t n_batch, float tol) {
    golden gd = golden_open(variant);
    oxl_model *m = load(text_model);
    cr_assert_eq(oxl_model_n_embd(m), gd.n_embd);
    cr_assert_eq(oxl_model_n_vocab(m), gd.n_vocab);
    oxl_ctx *ctx = new_ctx(m, 64, n_batch);
    run_greedy(ctx, &gd, run_prompt(ctx, &gd, tol), tol);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd.g);
}

static void check_variant(const char *variant, const char *text_model, int32_t n_batch) {
    check_variant_tol(variant, text_model, n_batch, TOL);
}

Test(mm_embd, llava15) { check_variant("llava15", "llama.gguf", 64); }
Test(mm_embd, llava_next) { check_variant("llava-next", "llama.gguf", 64); }
Test(mm_embd, qwen2vl) { check_variant("qwen2vl", "qwen2vl.gguf", 64); }
Test(mm_embd, qwen25vl) { check_variant("qwen25vl", "qwen2vl.gguf", 64); }
/* Gemma 3: the image decoded non-causally, its embeddings unscaled (gemma3 scales token rows only).
 * The bound is the text model's own: golden/arch's gemma3 logits differ from llama.cpp's by 1.02e-4
 * of their range (its sliding-window attention's summation order; golden/arch/tolerances.tsv), and
 * here by up to 1.15e-4 (measured on every ISA cap); 4.6e-4 is four times that. A causal image or
 * scaled embeddings move the logits by far more (the argmax checks catch them: mm_embd/gemma3*). */
Test(mm_embd, gemma3) { check_variant_tol("gemma3", "gemma3.gguf", 64, 4.6e-4f); }

/* An image split over passes of 5 rows (mtmd_helper_decode_image_chunk splits by n_batch): each
 * pass's tokens keep their place on the grid. */
Test(mm_embd, qwen2vl_small_batches) { check_variant("qwen2vl", "qwen2vl.gguf", 5); }

/* The image's M-RoPE positions as the golden lists them: token j of a grid_x-wide grid at
 * (p0, p0 + j / grid_x, p0 + j % grid_x, 0), the formula oxl_decode_image_embd applies. */
Test(mm_embd, qwen2vl_golden_positions) {
    golden gd = golden_open("qwen2vl");
    cr_assert(gd.mrope);
    for (int32_t c = 0, i = 0; c < gd.n_chunks; i += gd.chunk_n_tokens[c], c++) {
        for (int32_t j = 0; j < gd.chunk_n_tokens[c]; j++) {
            const int32_t p0 = gd.chunk_pos0[c], gx = gd.chunk_grid_x[c];
            const bool img = gd.chunk_type[c] != 0;
            const int32_t want[4] = {img ? p0 : p0 + j, img ? p0 + j / gx : p0 + j, img ? p0 + j % gx : p0 + j, 0};
            for (int s = 0; s < 4; s++) {
                cr_assert_eq(gd.pos[(size_t)s * gd.n_tokens + i + j], want[s], "row %d section %d", i + j, s);
            }
        }
    }
    oxl_gguf_close(gd.g);
}

/* Truncating back to the end of the image and decoding the text again gives the same logits, bit
 * for bit; truncating into the image keeps the lag of the images before it only. */
Test(mm_embd, qwen2vl_truncate) {
    golden gd = golden_open("qwen2vl");
    oxl_model *m = load("qwen2vl.gguf");
    oxl_ctx *ctx = new_ctx(m, 64, 64);
    run_prompt(ctx, &gd, TOL);
    const int32_t last = gd.n_chunks - 1, n = gd.chunk_n_tokens[last], row = gd.n_tokens - n;
    cr_assert_eq(gd.chunk_type[last], 0);
    float *first = malloc(sizeof(float) * (size_t)gd.n_vocab * (size_t)n);
    for (int32_t j = 0; j < n; j++) {
        memcpy(first + (size_t)j * gd.n_vocab, oxl_get_logits(ctx, j), sizeof(float) * (size_t)gd.n_vocab);
    }
    oxl_seq_truncate(ctx, 0, row);
    cr_assert_eq(oxl_seq_n_past(ctx, 0), row);
    cr_assert_eq(oxl_seq_pos_next(ctx, 0), gd.chunk_pos0[last]);
    decode_chunk(ctx, &gd, last, row, 0);
    for (int32_t j = 0; j < n; j++) {
        cr_assert_eq(memcmp(first + (size_t)j * gd.n_vocab, oxl_get_logits(ctx, j), sizeof(float) * (size_t)gd.n_vocab),
                     0, "row %d after truncation differs", row + j);
    }
    cr_assert_eq(oxl_seq_pos_next(ctx, 0), gd.n_pos);
    /* into the image (rows 14..25): its rows kept count as text rows, no earlier image lags */
    const int32_t img_row = gd.chunk_n_tokens[0];
    oxl_seq_truncate(ctx, 0, img_row + 5);
    cr_assert_eq(oxl_seq_pos_next(ctx, 0), img_row + 5);
    oxl_seq_truncate(ctx, 0, 0);
    cr_assert_eq(oxl_seq_pos_next(ctx, 0), 0);
    free(first);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd.g);
}

/* Refused requests are named errors that decode nothing. */
Test(mm_embd, errors) {
    golden gd = golden_open("qwen2vl");
    oxl_model *m = load("qwen2vl.gguf");
    oxl_ctx *ctx = new_ctx(m, 32, 32);
    oxl_error err = {0};
    const float *embd = golden_embd(&gd, 0, 12);
    const oxl_token tok[2] = {1, 2};
    const int32_t pos[2] = {0, 1}, seq[2] = {0, 0};

    oxl_batch b = {.n_tokens = 2, .token = tok, .pos = pos, .seq_id = seq, .embd = embd};
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), -1);
    cr_assert(strstr(err.msg, "both token ids and embeddings"), "%s", err.msg);
    b.token = NULL;
    b.embd = NULL;
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), -1);
    cr_assert(strstr(err.msg, "neither token ids nor embeddings"), "%s", err.msg);

    /* M-RoPE: the grid must hold the embeddings */
    cr_assert_eq(oxl_decode_image_embd(ctx, 0, embd, 12, 4, 4, true, &err), -1);
    cr_assert(strstr(err.msg, "grid 4 x 4 holds 16 tokens, not the 12"), "%s", err.msg);
    cr_assert_eq(oxl_decode_image_embd(ctx, 0, embd, 12, 0, 3, true, &err), -1);
    cr_assert_eq(oxl_decode_image_embd(ctx, 1, embd, 12, 4, 3, true, &err), -1);
    cr_assert(strstr(err.msg, "sequence 1"), "%s", err.msg);
    cr_assert_eq(oxl_seq_n_past(ctx, 0), 0);

    /* 25 rows used of 32: 12 more do not fit */
    oxl_token fill[25];
    for (int i = 0; i < 25; i++) {
        fill[i] = (oxl_token)(3 + i);
    }
    cr_assert_eq(oxl_decode(ctx, fill, 25, false, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_decode_image_embd(ctx, 0, embd, 12, 4, 3, true, &err), -1);
    cr_assert(strstr(err.msg, "12 embeddings do not fit sequence 0: it holds 25 of its 32 rows"), "%s", err.msg);
    cr_assert_eq(oxl_seq_n_past(ctx, 0), 25);
    cr_assert_eq(oxl_seq_pos_next(ctx, 0), 25);

    /* a sequence whose positions lag its rows is not saved */
    oxl_seq_truncate(ctx, 0, 2);
    cr_assert_eq(oxl_decode_image_embd(ctx, 0, embd, 12, 4, 3, true, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_seq_pos_next(ctx, 0), 2 + 4);
    oxl_token held[14] = {3, 4};
    for (int i = 2; i < 14; i++) {
        held[i] = 5;
    }
    const size_t size = oxl_state_seq_size(ctx, 0);
    void *buf = malloc(size);
    cr_assert_eq(oxl_state_seq_save_buf(ctx, 0, held, 14, buf, size, &err), -1);
    cr_assert(strstr(err.msg, "lag its rows by 8"), "%s", err.msg);
    free(buf);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd.g);
}

/* Families that read token ids beyond the embedding row refuse embeddings by name. */
Test(mm_embd, token_only_architectures) {
    static const char *const files[] = {"bert.gguf", "gemma3n.gguf"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        oxl_model *m = load(files[f]);
        oxl_ctx *ctx = new_ctx(m, 16, 16);
        oxl_error err = {0};
        float *embd = calloc((size_t)oxl_model_n_embd(m), sizeof(float));
        cr_assert_eq(oxl_decode_image_embd(ctx, 0, embd, 1, 1, 1, true, &err), -1, "%s", files[f]);
        cr_assert(strstr(err.msg, "takes token ids only"), "%s: %s", files[f], err.msg);
        cr_assert_eq(oxl_seq_n_past(ctx, 0), 0);
        free(embd);
        oxl_ctx_free(ctx);
        oxl_model_free(m);
    }
}

/* Without M-RoPE (LLaVA's llama) an image takes its rows as positions: no lag, grid unchecked, and
 * the sequence saves. */
Test(mm_embd, llama_rows_are_positions) {
    golden gd = golden_open("llava15");
    oxl_model *m = load("llama.gguf");
    oxl_ctx *ctx = new_ctx(m, 32, 32);
    oxl_error err = {0};
    cr_assert_eq(oxl_decode_image_embd(ctx, 0, golden_embd(&gd, 0, 9), 9, 3, 7, false, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_seq_pos_next(ctx, 0), 9);
    oxl_token held[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const size_t size = oxl_state_seq_size(ctx, 0);
    void *buf = malloc(size);
    cr_assert_gt(oxl_state_seq_save_buf(ctx, 0, held, 9, buf, size, &err), 0, "%s", err.msg);
    free(buf);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd.g);
}

/* Row 0's logits after decoding BOS then four embeddings (the last one's values set to last_val)
 * on gemma3, through oxl_decode_image_embd (an image: llama.cpp decodes Gemma 3's images with causal
 * attention off) or a plain embedding batch (causal); n_batch 16 or 2 (the image in two passes).
 * out: the first image token's n_vocab logits. */
static void gemma3_first_image_row(bool image, float last_val, int32_t n_batch, float *out) {
    oxl_model *m = load("gemma3.gguf");
    oxl_ctx *ctx = new_ctx(m, 32, n_batch);
    oxl_error err = {0};
    const int32_t E = oxl_model_n_embd(m), V = oxl_model_n_vocab(m);
    cr_assert_eq(V, 512);
    float *embd = malloc(sizeof(float) * (size_t)(4 * E));
    for (int32_t i = 0; i < 4 * E; i++) {
        embd[i] = i >= 3 * E ? last_val : (float)((i * 37) % 17) / 8.0f - 1.0f;
    }
    const oxl_token bos = 2;
    cr_assert_eq(oxl_decode(ctx, &bos, 1, false, &err), 0, "%s", err.msg);
    if (image) {
        cr_assert_eq(oxl_decode_image_embd(ctx, 0, embd, 4, 4, 1, true, &err), 0, "%s", err.msg);
    } else {
        const int32_t pos[4] = {1, 2, 3, 4}, seq[4] = {0, 0, 0, 0};
        const int8_t keep[4] = {1, 1, 1, 1};
        const oxl_batch b = {.n_tokens = 4, .pos = pos, .seq_id = seq, .logits = keep, .embd = embd};
        cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
    }
    memcpy(out, oxl_get_logits(ctx, 0), sizeof(float) * (size_t)V);
    free(embd);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}

/* Gemma 3's images attend non-causally (mtmd_decode_use_non_causal, llama_set_causal_attn(false)):
 * the first image token sees the last one, so changing the last embedding moves the first row's
 * logits, while a plain embedding batch stays causal and leaves them bit for bit; an image split
 * over passes (n_batch 2) is non-causal within each pass only, as llama.cpp's ubatches, so its first
 * row then does not see the last token either. */
Test(mm_embd, gemma3_images_are_non_causal) {
    float a[512], b[512];
    gemma3_first_image_row(true, 0.5f, 16, a);
    gemma3_first_image_row(true, -2.0f, 16, b);
    double d = 0;
    for (int i = 0; i < 512; i++) {
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
    }
    cr_expect_gt(d, 1e-3, "non-causal image: row 0 moved by %g only", d);
    gemma3_first_image_row(false, 0.5f, 16, a);
    gemma3_first_image_row(false, -2.0f, 16, b);
    cr_expect_eq(memcmp(a, b, sizeof a), 0, "a causal embedding batch: row 0 must not see a later token");
    gemma3_first_image_row(true, 0.5f, 2, a);
    gemma3_first_image_row(true, -2.0f, 2, b);
    cr_expect_eq(memcmp(a, b, sizeof a), 0, "an image in passes of 2: row 0 must not see the second pass");
}
