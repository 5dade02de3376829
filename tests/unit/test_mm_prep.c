/* The vision side's preprocessing and prompt chunks (src/mm: mm_params.c, mm_preprocess.c,
 * mm_chunks.c) on small hand-computed cases. Expected values follow the formulas of
 * golden/mm/README.md (llama.cpp's resize_bicubic / resize_bilinear, the letterbox, smart resize,
 * select_best_resolution, mtmd_tokenize), worked out by hand in float32 in the comments; the whole
 * pipeline is compared with llama.cpp's own outputs by ctest golden-mm. */
#include "gguf.h"
#include "gguf_craft.h"
#include "mm_chunks.h"
#include "mm_params.h"
#include "mm_preprocess.h"

#include <criterion/criterion.h>

#include <string.h>

#define MM_DIR OXL_SOURCE_DIR "/golden/mm/"
#define STORIES OXL_SOURCE_DIR "/models/stories260K.gguf"

/* A row of grey pixels (R = G = B = v[i]). */
static void grey_row(const uint8_t *v, int n, uint8_t *rgb) {
    for (int i = 0; i < n; i++) {
        rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = v[i];
    }
}

/* 4x1 -> 3x1: tx = 4/3 = 1.3333334f. Linear data stays linear: j = 1 samples x = 1, dx =
 * 0.33333337, a1 = 30, a2 = a3 = 0 -> 40.000001 -> 40. j = 2: x = 2, dx = 0.6666667, taps 30 60 90 90
 * (x + 2 clamped): d0 = -30, d2 = 30, d3 = 30, a1 = 35, a2 = 0, a3 = -5 -> 60 + 23.333334 - 1.4814816
 * = 81.85185 -> 82. One row: the cubic along y sees four equal values. */
Test(mm_resize, bicubic_linear_row) {
    const uint8_t v[4] = {0, 30, 60, 90};
    uint8_t src[12], dst[9];
    grey_row(v, 4, src);
    oxl_mm_resize_bicubic(src, 4, 1, dst, 3, 1);
    const uint8_t want[3] = {0, 40, 82};
    for (int i = 0; i < 9; i++) {
        cr_expect_eq(dst[i], want[i / 3], "pixel %d channel %d: %d, want %d", i / 3, i % 3, dst[i], want[i / 3]);
    }
}

/* 4x1 -> 8x1 over a step 0 0 253 253: tx = 0.5. j = 1 (x 0, dx .5): d0 = 0, d2 = 0, d3 = 253:
 * a1 = -42.166668, a2 = 0, a3 = 42.166668 -> -21.083334 + 5.2708335 = -15.8125 -> clamped to 0.
 * j = 3 (x 1, dx .5): d0 = 0, d2 = d3 = 253: a1 = 210.83333, a2 = 126.5, a3 = -84.333336 ->
 * 105.416664 + 31.625 - 10.541667 = 126.49999 in float -> 126 (in double the sum is 126.5 exactly
 * and would round to 127). j = 5 (x 2, dx .5): d0 = -253, d2 = d3 = 0 -> 268.8125 -> clamped 255. */
Test(mm_resize, bicubic_step_clamps_and_float_rounding) {
    const uint8_t v[4] = {0, 0, 253, 253};
    uint8_t src[12], dst[24];
    grey_row(v, 4, src);
    oxl_mm_resize_bicubic(src, 4, 1, dst, 8, 1);
    const uint8_t want[8] = {0, 0, 0, 126, 253, 255, 253, 253};
    for (int i = 0; i < 8; i++) {
        cr_expect_eq(dst[3 * i], want[i], "pixel %d: %d, want %d", i, dst[3 * i], want[i]);
    }
}

/* 2x2 -> 3x3, corner-aligned: x_ratio = y_ratio = (2 - 1) / (3 - 1) = 0.5. Source R:
 *   0 100
 *  50 201
 * (1,1): top = 0 + 100 * .5 = 50, bottom = 50 + 151 * .5 = 125.5, 50 + 75.5 * .5 = 87.75 -> 87
 * (truncated). (2,1): px = 1 -> x0 = x1 = 1: 100 + 101 * .5 = 150.5 -> 150. (1,2): y0 = y1 = 1:
 * 125.5 -> 125. Corners are the source corners. */
Test(mm_resize, bilinear_corner_aligned_truncated) {
    const uint8_t v[4] = {0, 100, 50, 201};
    uint8_t src[12], dst[27];
    grey_row(v, 4, src);
    oxl_mm_resize_bilinear(src, 2, 2, dst, 3, 3);
    const uint8_t want[9] = {0, 50, 100, 25, 87, 150, 50, 125, 201};
    for (int i = 0; i < 9; i++) {
        cr_expect_eq(dst[3 * i], want[i], "pixel (%d,%d): %d, want %d", i % 3, i / 3, dst[3 * i], want[i]);
    }
}

/* 4x2 into 6x6: scale = min(6/4, 6/2) = 1.5, inner min(ceil(6), 6) x min(ceil(3), 6) = 6x3 at
 * ((6 - 6) / 2, (6 - 3) / 2) = (0, 1); rows 0, 4 and 5 are the pad colour. */
Test(mm_resize, letterbox_geometry) {
    uint8_t src[24], dst[108];
    memset(src, 7, sizeof src);
    const uint8_t pad[3] = {122, 116, 104};
    int32_t inner[4];
    cr_assert_eq(oxl_mm_letterbox(src, 4, 2, dst, 6, 6, OXL_MM_RESIZE_BICUBIC, pad, inner, NULL), 0);
    cr_expect(inner[0] == 6 && inner[1] == 3 && inner[2] == 0 && inner[3] == 1, "inner %dx%d at (%d,%d)", inner[0],
              inner[1], inner[2], inner[3]);
    for (int y = 0; y < 6; y++) {
        const bool is_pad = y == 0 || y >= 4;
        for (int c = 0; c < 3; c++) {
            const uint8_t want = is_pad ? pad[c] : 7;
            cr_expect_eq(dst[(y * 6 + 2) * 3 + c], want, "row %d channel %d", y, c);
        }
    }
}

/* Qwen2-VL sizes, align 28, 8 .. 4096 tokens (6272 .. 3211264 pixels):
 * 44x30: round(30/28) = 1, round(44/28) = 2 -> 56x28 = 1568 < 6272: beta = sqrt(6272/1320) = 2.1797866,
 *   ceil(30 * beta / 28) = ceil(2.3355) = 3, ceil(44 * beta / 28) = ceil(3.4254) = 4 -> 112x84.
 * 4000x3000: 143 x 107 multiples = 4004x2996 > max: beta = sqrt(12e6 / 3211264) = 1.9331,
 *   floor(3000 / beta / 28) = floor(55.43) = 55, floor(4000 / beta / 28) = floor(73.90) = 73 -> 2044x1540.
 * 2000x1000: round(71.43) = 71, round(35.71) = 36 -> 1988x1008, within both bounds. */
Test(mm_resize, smart_size) {
    static const int32_t cases[][4] = {{44, 30, 112, 84}, {4000, 3000, 2044, 1540}, {2000, 1000, 1988, 1008}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t tw = 0, th = 0;
        oxl_error err = {0};
        cr_assert_eq(oxl_mm_smart_size(cases[i][0], cases[i][1], 28, 6272, 3211264, &tw, &th, &err), 0, "%s", err.msg);
        cr_expect(tw == cases[i][2] && th == cases[i][3], "%dx%d -> %dx%d, want %dx%d", cases[i][0], cases[i][1], tw,
                  th, cases[i][2], cases[i][3]);
    }
    /* 1 x 16M pixels: the dynamic size is far beyond the bound and refused, naming the sizes */
    int32_t tw, th;
    oxl_error err = {0};
    cr_expect_eq(oxl_mm_smart_size(16 * 1024 * 1024, 1, 28, 6272, 3211264, &tw, &th, &err), -1);
    cr_expect(strstr(err.msg, "dynamic resolution") != NULL, "%s", err.msg);
}

/* 44x30 over the LLaVA-NeXT file's pinpoints: effective / wasted = 532/1036, 1148/420, 1148/1204,
 * 532/1820, 1320/3384, 1320/4952: 84x56 (index 4) wins, 112x56 ties on effective with more waste. */
Test(mm_resize, best_pinpoint) {
    static const int32_t pp[6][2] = {{28, 56}, {56, 28}, {84, 28}, {28, 84}, {84, 56}, {112, 56}};
    cr_expect_eq(oxl_mm_best_pinpoint(44, 30, pp, 6), 4);
    /* exact ties keep the earlier candidate */
    static const int32_t twice[2][2] = {{56, 28}, {56, 28}};
    cr_expect_eq(oxl_mm_best_pinpoint(44, 30, twice, 2), 0);
}

static oxl_mm_params read_params(const char *name) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open(name, &err);
    cr_assert(g, "%s", err.msg);
    oxl_mm_params p;
    cr_assert_eq(oxl_mm_params_read(g, NULL, &p, &err), 0, "%s", err.msg);
    oxl_gguf_close(g);
    return p;
}

/* The golden mmproj files (golden/mm/README.md's key tables). */
Test(mm_params, golden_files) {
    const oxl_mm_params a = read_params(MM_DIR "llava15.mmproj.gguf");
    cr_expect(a.kind == OXL_MM_PREP_FIXED && a.image_size == 42 && a.patch_size == 14 && a.pad[0] == 122 &&
              a.pad[1] == 116 && a.pad[2] == 104 && a.mean[0] == 0.48145466f && a.std[2] == 0.27577711f);
    const oxl_mm_params b = read_params(MM_DIR "llava-next.mmproj.gguf");
    cr_expect(b.kind == OXL_MM_PREP_ANYRES && b.image_size == 28 && b.n_pinpoints == 6 && b.pinpoints[4][0] == 84 &&
              b.pinpoints[4][1] == 56 && b.pad[0] == 0 && b.resize == OXL_MM_RESIZE_BICUBIC &&
              b.resize_overview == OXL_MM_RESIZE_BILINEAR);
    /* load_hparams prints image_min_pixels 6272, image_max_pixels 3211264 for this file */
    const oxl_mm_params q = read_params(MM_DIR "qwen2vl.mmproj.gguf");
    cr_expect(q.kind == OXL_MM_PREP_DYN && q.n_merge == 2 && q.min_pixels == 6272 && q.max_pixels == 3211264);
}

/* An mmproj of the keys given (each written by the caller after the header). */
static oxl_mm_params params_or_error(oxl_craft *c, oxl_error *err, int *rc) {
    oxl_gguf *g = oxl_gguf_open_memory(c->buf, c->len, "crafted.mmproj", err);
    cr_assert(g, "%s", err->msg);
    oxl_mm_params p;
    *rc = oxl_mm_params_read(g, NULL, &p, err);
    oxl_gguf_close(g);
    return p;
}

static void base_keys(oxl_craft *c, uint64_t n_kv, uint32_t image_size_type) {
    oxl_craft_header(c, 3, 0, n_kv);
    oxl_craft_kv_begin(c, "clip.has_vision_encoder", 7);
    oxl_craft_u8(c, 1);
    oxl_craft_kv_begin(c, "clip.vision.image_size", image_size_type);
    oxl_craft_u32(c, 42);
    oxl_craft_kv_u32(c, "clip.vision.patch_size", 14);
    oxl_craft_kv_array(c, "clip.vision.image_mean", 6, 3);
    for (int i = 0; i < 3; i++) {
        oxl_craft_f32(c, 0.5f);
    }
    oxl_craft_kv_array(c, "clip.vision.image_std", 6, 3);
    for (int i = 0; i < 3; i++) {
        oxl_craft_f32(c, 0.25f);
    }
}

Test(mm_params, named_errors) {
    oxl_error err = {0};
    int rc;
    /* all keys present: accepted, "mlp" by default */
    oxl_craft ok = {0};
    base_keys(&ok, 5, 4);
    oxl_mm_params p = params_or_error(&ok, &err, &rc);
    cr_expect(rc == 0 && p.projector == OXL_MM_PROJ_MLP && p.kind == OXL_MM_PREP_FIXED, "%s", err.msg);
    oxl_craft_free(&ok);
    /* image_size as int32: get_u32 insists on uint32 */
    oxl_craft mistyped = {0};
    base_keys(&mistyped, 5, 5);
    params_or_error(&mistyped, &err, &rc);
    cr_expect(rc == -1 && strstr(err.msg, "clip.vision.image_size") && strstr(err.msg, "uint32"), "%s", err.msg);
    oxl_craft_free(&mistyped);
    /* an unknown projector */
    oxl_craft unknown = {0};
    base_keys(&unknown, 6, 4);
    oxl_craft_kv_str(&unknown, "clip.projector_type", "resampler");
    params_or_error(&unknown, &err, &rc);
    cr_expect(rc == -1 && strstr(err.msg, "'resampler'"), "%s", err.msg);
    oxl_craft_free(&unknown);
    /* pinpoints of an odd count */
    oxl_craft odd = {0};
    base_keys(&odd, 6, 4);
    oxl_craft_kv_array(&odd, "clip.vision.image_grid_pinpoints", 5, 3);
    for (int i = 0; i < 3; i++) {
        oxl_craft_u32(&odd, 28);
    }
    params_or_error(&odd, &err, &rc);
    cr_expect(rc == -1 && strstr(err.msg, "image_grid_pinpoints") && strstr(err.msg, "pairs"), "%s", err.msg);
    oxl_craft_free(&odd);
    /* patch_size missing */
    oxl_craft missing = {0};
    oxl_craft_header(&missing, 3, 0, 2);
    oxl_craft_kv_begin(&missing, "clip.has_vision_encoder", 7);
    oxl_craft_u8(&missing, 1);
    oxl_craft_kv_u32(&missing, "clip.vision.image_size", 42);
    params_or_error(&missing, &err, &rc);
    cr_expect(rc == -1 && strstr(err.msg, "missing key 'clip.vision.patch_size'"), "%s", err.msg);
    oxl_craft_free(&missing);
}

/* Gemma 3 (clip.cpp load_hparams, mtmd.cpp init_vision): the fixed-size letterbox with bilinear on
 * black, n_merge 4 unless clip.vision.projector.scale_factor says otherwise, <start_of_image> /
 * <end_of_image> around each image, images decoded non-causally; a patch grid the pooling cannot
 * divide (42 / 14 = 3 patches per side) is refused by name. */
Test(mm_params, gemma3) {
    oxl_error err = {0};
    int rc;
    oxl_craft dflt = {0};
    base_keys(&dflt, 6, 4);
    oxl_craft_kv_str(&dflt, "clip.projector_type", "gemma3");
    params_or_error(&dflt, &err, &rc);
    cr_expect(rc == -1 && strstr(err.msg, "3 patches per side") && strstr(err.msg, "scale_factor 4"), "%s", err.msg);
    oxl_craft_free(&dflt);
    oxl_craft three = {0};
    base_keys(&three, 7, 4);
    oxl_craft_kv_str(&three, "clip.projector_type", "gemma3");
    oxl_craft_kv_u32(&three, "clip.vision.projector.scale_factor", 3);
    oxl_mm_params p = params_or_error(&three, &err, &rc);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_expect(p.projector == OXL_MM_PROJ_GEMMA3 && p.kind == OXL_MM_PREP_FIXED && p.resize == OXL_MM_RESIZE_BILINEAR);
    cr_expect(p.pad[0] == 0 && p.pad[1] == 0 && p.pad[2] == 0 && p.n_merge == 3);
    cr_expect(oxl_mm_non_causal(p.projector) && !oxl_mm_non_causal(OXL_MM_PROJ_QWEN2VL));
    const char *beg, *end;
    oxl_mm_image_text(p.projector, &beg, &end);
    cr_expect(!strcmp(beg, "<start_of_image>") && !strcmp(end, "<end_of_image>"), "%s %s", beg, end);
    oxl_craft_free(&three);
}

/* ---- chunks ---- */

static oxl_model *stories(void) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(STORIES, &mp, &err);
    cr_assert(m, "%s", err.msg);
    return m;
}

/* Tiles without pixels: only their token grids matter to the chunks. */
static oxl_mm_tile fake_tile(int32_t gx, int32_t gy) {
    return (oxl_mm_tile){.grid_x = gx, .grid_y = gy, .n_tokens = gx * gy};
}

/* "\nDescribe:" in the stories260K SPM vocabulary, tokenized alone (a "▁" in front): the ids
 * golden/mm/README.md gives from llama.cpp. */
static const oxl_token describe[9] = {410, 13, 455, 406, 429, 325, 430, 411, 467};

static void expect_chunk(const oxl_mm_chunks *c, int32_t i, oxl_mm_chunk_type type, int32_t n_tokens, int32_t n_pos,
                         int32_t pos0) {
    cr_assert_lt(i, c->n);
    const oxl_mm_chunk *ch = &c->chunks[i];
    cr_expect(ch->type == type && ch->n_tokens == n_tokens && ch->n_pos == n_pos && ch->pos0 == pos0,
              "chunk %d: type %d, %d tokens, %d positions at %d; want %d, %d, %d at %d", i, ch->type, ch->n_tokens,
              ch->n_pos, ch->pos0, type, n_tokens, n_pos, pos0);
}

/* A prompt without a marker, images first (llama-mtmd-cli): the LLaVA-1.5 golden's layout, BOS as
 * its own chunk in front of the image. */
Test(mm_chunks, no_marker_images_first) {
    oxl_model *m = stories();
    const oxl_mm_params p = {.projector = OXL_MM_PROJ_MLP, .projector_name = "mlp"};
    oxl_mm_tile t = fake_tile(9, 1);
    const oxl_mm_tiles img = {&t, 1};
    const oxl_mm_prompt opt = {.images_first = true, .add_special = true, .parse_special = true};
    oxl_mm_chunks c;
    oxl_error err = {0};
    cr_assert_eq(oxl_mm_tokenize(m, &p, "\nDescribe:", 10, &img, 1, &opt, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(c.n, 3);
    expect_chunk(&c, 0, OXL_MM_CHUNK_TEXT, 1, 1, 0);
    expect_chunk(&c, 1, OXL_MM_CHUNK_IMAGE, 9, 9, 1);
    expect_chunk(&c, 2, OXL_MM_CHUNK_TEXT, 9, 9, 10);
    cr_expect_eq(c.chunks[0].tokens[0], 1);
    cr_expect_arr_eq(c.chunks[2].tokens, describe, sizeof describe);
    cr_expect(c.n_tokens == 19 && c.n_pos == 19 && !c.mrope);
    oxl_mm_chunks_free(&c);
    /* without images_first the same prompt has no marker for its image: an error */
    const oxl_mm_prompt strict = {.add_special = true, .parse_special = true};
    cr_expect_eq(oxl_mm_tokenize(m, &p, "\nDescribe:", 10, &img, 1, &strict, &c, &err), -1);
    cr_expect(strstr(err.msg, "0 image markers") != NULL, "%s", err.msg);
    cr_expect(c.n == 0 && c.chunks == NULL);
    oxl_model_free(m);
}

/* Two markers, two images of 4 and 9 tokens: BOS | image 0 | text | image 1 | text, positions
 * 0, 1, 5, 14, 23; the sequence holds -1 at image positions. */
Test(mm_chunks, two_markers) {
    oxl_model *m = stories();
    const oxl_mm_params p = {.projector = OXL_MM_PROJ_MLP, .projector_name = "mlp"};
    oxl_mm_tile t0 = fake_tile(4, 1), t1 = fake_tile(9, 1);
    const oxl_mm_tiles imgs[2] = {{&t0, 1}, {&t1, 1}};
    static const char prompt[] = "<__media__>\nDescribe:<__media__>\nDescribe:";
    oxl_mm_chunks c;
    oxl_error err = {0};
    cr_assert_eq(oxl_mm_tokenize(m, &p, prompt, strlen(prompt), imgs, 2, NULL, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(c.n, 5);
    expect_chunk(&c, 0, OXL_MM_CHUNK_TEXT, 1, 1, 0);
    expect_chunk(&c, 1, OXL_MM_CHUNK_IMAGE, 4, 4, 1);
    expect_chunk(&c, 2, OXL_MM_CHUNK_TEXT, 9, 9, 5);
    expect_chunk(&c, 3, OXL_MM_CHUNK_IMAGE, 9, 9, 14);
    expect_chunk(&c, 4, OXL_MM_CHUNK_TEXT, 9, 9, 23);
    cr_expect(c.chunks[1].image == 0 && c.chunks[3].image == 1);
    cr_expect_arr_eq(c.chunks[4].tokens, describe, sizeof describe);
    int32_t tokens[32], chunk[32], pos[32];
    cr_assert_eq(c.n_tokens, 32);
    oxl_mm_chunks_sequence(&c, tokens, chunk, pos);
    cr_expect(tokens[0] == 1 && tokens[1] == -1 && tokens[4] == -1 && tokens[5] == 410 && tokens[14] == -1);
    cr_expect(chunk[4] == 1 && chunk[5] == 2 && chunk[31] == 4);
    for (int j = 0; j < 32; j++) {
        cr_expect_eq(pos[j], j);
    }
    oxl_mm_chunks_free(&c);
    oxl_model_free(m);
}

/* M-RoPE: an image of a 2 x 3 merged-token grid at p0 = 14 takes (14, 14 + i / 2, 14 + i % 2, 0) and
 * advances the position by max(2, 3) = 3; the text after it continues at 17 with (p, p, p, 0). */
Test(mm_chunks, mrope_positions) {
    oxl_model *m = stories();
    const oxl_mm_params p = {.projector = OXL_MM_PROJ_QWEN2VL, .projector_name = "qwen2vl_merger"};
    oxl_mm_tile t = fake_tile(2, 3);
    const oxl_mm_tiles img = {&t, 1};
    static const char prompt[] = "<__media__>\nDescribe:";
    oxl_mm_chunks c;
    oxl_error err = {0};
    cr_assert_eq(oxl_mm_tokenize(m, &p, prompt, strlen(prompt), &img, 1, NULL, &c, &err), 0, "%s", err.msg);
    /* BOS + "<|vision_start|>" (13 ordinary pieces, golden/mm/README.md) | image | "<|vision_end|>" + text */
    cr_assert_eq(c.n, 3);
    expect_chunk(&c, 0, OXL_MM_CHUNK_TEXT, 14, 14, 0);
    expect_chunk(&c, 1, OXL_MM_CHUNK_IMAGE, 6, 3, 14);
    expect_chunk(&c, 2, OXL_MM_CHUNK_TEXT, 20, 20, 17);
    cr_expect(c.mrope && c.n_tokens == 40 && c.n_pos == 37);
    int32_t pos[4 * 40];
    oxl_mm_chunks_sequence(&c, NULL, NULL, pos);
    for (int i = 0; i < 6; i++) {
        const int j = 14 + i;
        cr_expect(pos[j] == 14 && pos[40 + j] == 14 + i / 2 && pos[80 + j] == 14 + i % 2 && pos[120 + j] == 0,
                  "image token %d: (%d, %d, %d, %d)", i, pos[j], pos[40 + j], pos[80 + j], pos[120 + j]);
    }
    cr_expect(pos[20] == 17 && pos[60] == 17 && pos[100] == 17 && pos[140] == 0);
    oxl_mm_chunks_free(&c);
    oxl_model_free(m);
}

/* Marker count mismatch, either way: named errors, nothing returned. */
Test(mm_chunks, marker_count_mismatch) {
    oxl_model *m = stories();
    const oxl_mm_params p = {.projector = OXL_MM_PROJ_MLP, .projector_name = "mlp"};
    oxl_mm_tile t = fake_tile(4, 1);
    const oxl_mm_tiles imgs[2] = {{&t, 1}, {&t, 1}};
    oxl_mm_chunks c;
    oxl_error err = {0};
    static const char two[] = "a <__media__> b <__media__>";
    cr_expect_eq(oxl_mm_tokenize(m, &p, two, strlen(two), imgs, 1, NULL, &c, &err), -1);
    cr_expect(strstr(err.msg, "more image markers '<__media__>' than the 1 image given") != NULL, "%s", err.msg);
    cr_expect(c.n == 0 && c.chunks == NULL);
    static const char one[] = "a <__media__> b";
    cr_expect_eq(oxl_mm_tokenize(m, &p, one, strlen(one), imgs, 2, NULL, &c, &err), -1);
    cr_expect(strstr(err.msg, "1 image marker '<__media__>' but 2 images were given") != NULL, "%s", err.msg);
    /* another marker string */
    const oxl_mm_prompt opt = {.marker = "<image>", .add_special = true, .parse_special = true};
    static const char custom[] = "<image>x";
    cr_expect_eq(oxl_mm_tokenize(m, &p, custom, strlen(custom), imgs, 1, &opt, &c, &err), 0, "%s", err.msg);
    cr_expect(c.n == 3 && c.chunks[1].type == OXL_MM_CHUNK_IMAGE);
    oxl_mm_chunks_free(&c);
    oxl_model_free(m);
}
