/* Image decoding (src/image/image_decode.c): oxl_image_load and oxl_image_load_file.
 *
 * - golden/mm/image.png decodes to exactly the bitmap llama.cpp's stb_image made of it (tensor
 *   image_rgb of golden/mm/llava15.golden.gguf, i32 [3, W, H]);
 * - the PNGs of tests/unit/images/ (written by tests/unit/make_images.py from the formulas repeated
 *   here) decode to what stb_image gives with 3 channels forced: grey g -> (g, g, g), alpha dropped,
 *   palette entries (tRNS ignored), 16-bit samples -> high byte, 4-bit grey -> g * 17, 2-bit palette
 *   indices, Adam7 interlacing, gAMA / sRGB not applied;
 * - JPEGs and WebPs made here with libjpeg and libwebp's encoders decode to their source pixels
 *   (JPEG within a bound, lossless WebP exactly);
 * - damaged and hostile inputs fail with a message naming the format and the fault, and never
 *   allocate in proportion to a size they merely claim (tests/unit/alloc_probe.h). */
#include "alloc_probe.h"
#include "file.h"
#include "gguf.h"
#include "image.h"

#include <criterion/criterion.h>

#include <stdio.h> /* before jpeglib.h */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <webp/encode.h>

#define IMG(name) OXL_SOURCE_DIR "/tests/unit/images/" name
enum { W = 13, H = 11 }; /* the size of the valid files of make_images.py */

static uint8_t *read_all(const char *path, size_t *len) {
    oxl_error err = {{0}};
    uint8_t *b = (uint8_t *)oxl_read_file(path, len, &err);
    cr_assert_not_null(b, "%s", err.msg);
    return b;
}

static oxl_image *load_ok(const char *path) {
    oxl_error err = {{0}};
    oxl_image *im = oxl_image_load_file(path, &err);
    cr_assert_not_null(im, "%s: %s", path, err.msg);
    return im;
}

/* ---- the golden image ------------------------------------------------------------------------------ */

Test(image_decode, golden_png_is_stb_image_bitmap) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(OXL_SOURCE_DIR "/golden/mm/llava15.golden.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, "image_rgb");
    cr_assert_not_null(t);
    cr_assert_eq(t->type, 26u, "image_rgb is not i32"); /* GGML_TYPE_I32 */
    cr_assert_eq(t->ne[0], 3);
    uint32_t gw = 0, gh = 0;
    cr_assert_eq(oxl_gguf_get_uint32(g, "golden.image_width", &gw, &err), 1, "%s", err.msg);
    cr_assert_eq(oxl_gguf_get_uint32(g, "golden.image_height", &gh, &err), 1, "%s", err.msg);
    cr_assert_eq(t->ne[1], gw);
    cr_assert_eq(t->ne[2], gh);

    oxl_image *im = load_ok(OXL_SOURCE_DIR "/golden/mm/image.png");
    cr_assert_eq(oxl_image_width(im), 44);
    cr_assert_eq(oxl_image_height(im), 30);
    cr_assert_eq((uint32_t)oxl_image_width(im), gw);
    cr_assert_eq((uint32_t)oxl_image_height(im), gh);
    const int32_t *want = t->data;
    const uint8_t *got = oxl_image_rgb(im);
    for (size_t i = 0; i < (size_t)gw * gh * 3; i++) {
        cr_assert_eq(got[i], want[i], "sample %zu (x %zu, y %zu, channel %zu): %d, stb_image %d", i, i / 3 % gw,
                     i / 3 / gw, i % 3, got[i], want[i]);
    }
    oxl_image_free(im);
    oxl_gguf_close(g);
}

/* ---- PNG conversions (make_images.py) -------------------------------------------------------------- */

static int rgb8(int x, int y, int c) { return ((x * 19 + y * 7) * (c + 1) + 40 * c) & 255; }
static int rgb16(int x, int y, int c) { return ((x * 3001 + y * 517) * (c + 2) + 12345 * c) & 65535; }
static int grey8(int x, int y) { return (13 * x + 7 * y) & 255; }
static int palette(int i, int c) { return c == 0 ? 16 * i : c == 1 ? 255 - 16 * i : 5 * i; }

typedef int (*pixel_rule)(int x, int y, int c);

static void expect_rule(const char *path, pixel_rule rule) {
    oxl_image *im = load_ok(path);
    cr_assert_eq(oxl_image_width(im), W, "%s", path);
    cr_assert_eq(oxl_image_height(im), H, "%s", path);
    const uint8_t *p = oxl_image_rgb(im);
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            for (int c = 0; c < 3; c++) {
                cr_assert_eq(p[(y * W + x) * 3 + c], rule(x, y, c), "%s: (%d, %d) channel %d: %d, want %d", path, x, y,
                             c, p[(y * W + x) * 3 + c], rule(x, y, c));
            }
        }
    }
    oxl_image_free(im);
}

/* grey g -> (g, g, g) */
static int rule_grey8(int x, int y, int c) { return grey8(x, y); }
/* 4-bit grey scaled to 8 bits as stb_image does: g * 0x11 */
static int rule_grey4(int x, int y, int c) { return ((x + y) & 15) * 17; }
/* 16 bits: the high byte (stbi__convert_16_to_8: v >> 8) */
static int rule_grey16(int x, int y, int c) { return ((4099 * x + 1031 * y + 77) & 65535) >> 8; }
/* palette entries, whatever tRNS says */
static int rule_palette(int x, int y, int c) { return palette((x + 2 * y) & 15, c); }
static int rule_palette2(int x, int y, int c) { return palette((x + y) & 3, c); }
/* RGB as stored: alpha, tRNS, gAMA and sRGB do not change it */
static int rule_rgb8(int x, int y, int c) { return rgb8(x, y, c); }
static int rule_rgba16(int x, int y, int c) { return rgb16(x, y, c) >> 8; }

Test(image_decode, png_grey) {
    expect_rule(IMG("grey8.png"), rule_grey8);
    expect_rule(IMG("grey4.png"), rule_grey4);
    expect_rule(IMG("grey16.png"), rule_grey16);
}
Test(image_decode, png_grey_alpha_drops_alpha) { expect_rule(IMG("greya8.png"), rule_grey8); }
Test(image_decode, png_palette_ignores_trns) {
    expect_rule(IMG("palette.png"), rule_palette);
    expect_rule(IMG("palette2.png"), rule_palette2);
}
Test(image_decode, png_rgb_no_gamma) { expect_rule(IMG("rgb8.png"), rule_rgb8); }
Test(image_decode, png_rgba_drops_alpha) {
    expect_rule(IMG("rgba8.png"), rule_rgb8);
    expect_rule(IMG("rgba16.png"), rule_rgba16);
}
Test(image_decode, png_interlaced) { expect_rule(IMG("adam7.png"), rule_rgb8); }

/* ---- failures -------------------------------------------------------------------------------------- */

/* oxl_image_load on data must fail with every string of want (NULL-ended) in its message, and allocate
 * no more than 64 KiB at once on the way. */
static void expect_fail_data(const uint8_t *data, size_t len, const char *what, const char *const *want) {
    oxl_error err = {{0}};
    uint8_t *copy = malloc(len ? len : 1); /* exact size: a read past the end shows under ASan */
    cr_assert_not_null(copy);
    if (len) {
        memcpy(copy, data, len);
    }
    oxl_probe_reset();
    oxl_image *im = oxl_image_load(data ? copy : NULL, len, &err);
    const size_t largest = oxl_probe_largest();
    free(copy);
    cr_assert_null(im, "%s: decoded", what);
    for (; *want; want++) {
        cr_expect(strstr(err.msg, *want) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, *want);
    }
    cr_expect(largest <= 65536, "%s: a request of %zu bytes", what, largest);
}

static void expect_fail_file(const char *name, const char *const *want) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/unit/images/%s", OXL_SOURCE_DIR, name);
    size_t len = 0;
    uint8_t *b = read_all(path, &len);
    expect_fail_data(b, len, name, want);
    free(b);
}

#define WANT(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(image_decode, png_huge_dimensions_refused_before_allocating) {
    expect_fail_file("huge.png", WANT("image: PNG: ", "exceeds user limit"));
    expect_fail_file("big.png", WANT("image: PNG: 20000 x 20000 pixels is out of range"));
    expect_fail_file("short.png", WANT("image: PNG: 8000 x 8000 pixels need 192008000 bytes of image data"));
}
Test(image_decode, png_zero_width) { expect_fail_file("zero.png", WANT("image: PNG: ", "width")); }
Test(image_decode, png_bad_crc) { expect_fail_file("badcrc.png", WANT("image: PNG: ", "CRC")); }
Test(image_decode, png_zlib_bomb) { expect_fail_file("bomb.png", WANT("image: PNG: ", "Too much image data")); }
Test(image_decode, png_without_iend) { expect_fail_file("noiend.png", WANT("image: PNG: ", "ends early")); }

Test(image_decode, png_truncated_everywhere) {
    size_t len = 0;
    uint8_t *b = read_all(OXL_SOURCE_DIR "/golden/mm/image.png", &len);
    for (size_t cut = 1; cut < len; cut += (cut < 64 ? 1 : 97)) {
        char what[64];
        snprintf(what, sizeof what, "image.png cut to %zu bytes", cut);
        /* under 8 bytes the signature is incomplete: the format is unknown */
        expect_fail_data(b, cut, what, cut < 8 ? WANT("image: unknown format") : WANT("image: PNG: "));
    }
    free(b);
}

Test(image_decode, unknown_and_empty) {
    const uint8_t gif[] = "GIF89a\x01\x00\x01\x00";
    expect_fail_data(gif, sizeof gif - 1, "GIF",
                     WANT("image: unknown format (first bytes 47 49 46 38 39 61 01 00)", "PNG, JPEG and WebP"));
    expect_fail_data(gif, 0, "empty", WANT("image: no data"));
    expect_fail_data(NULL, 0, "NULL", WANT("image: no data"));
}

Test(image_decode, file_errors_name_the_path) {
    oxl_error err = {{0}};
    cr_assert_null(oxl_image_load_file(IMG("absent.png"), &err));
    cr_expect(strstr(err.msg, "absent.png") && strstr(err.msg, "cannot open"), "%s", err.msg);
    cr_assert_null(oxl_image_load_file(IMG("huge.png"), &err));
    cr_expect(strstr(err.msg, "huge.png: image: PNG: "), "%s", err.msg);
}

/* ---- JPEG ------------------------------------------------------------------------------------------ */

enum { JW = 37, JH = 23 };
/* a smooth picture (JPEG keeps smooth gradients close) */
static int jpeg_src(int x, int y, int c) { return 10 + 3 * x + 3 * y + 30 * c; }

/* a baseline JPEG (quality 95, libjpeg's default 4:2:0 subsampling for colour) of jpeg_src; grey:
 * one component holding channel 0; cmyk: four components */
static uint8_t *make_jpeg(int components, J_COLOR_SPACE space, size_t *len) {
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    unsigned char *out = NULL;
    unsigned long out_len = 0;
    jpeg_mem_dest(&cinfo, &out, &out_len);
    cinfo.image_width = JW;
    cinfo.image_height = JH;
    cinfo.input_components = components;
    cinfo.in_color_space = space;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 95, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    uint8_t row[JW * 4];
    while (cinfo.next_scanline < JH) {
        const int y = (int)cinfo.next_scanline;
        for (int x = 0; x < JW; x++) {
            for (int c = 0; c < components; c++) {
                row[x * components + c] = (uint8_t)jpeg_src(x, y, c);
            }
        }
        JSAMPROW r = row;
        jpeg_write_scanlines(&cinfo, &r, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    uint8_t *copy = malloc(out_len);
    cr_assert_not_null(copy);
    memcpy(copy, out, out_len);
    free(out);
    *len = out_len;
    return copy;
}

/* Every sample within 4 of the source and the mean error under 1.5 (djpeg of libjpeg-turbo 2.1.5 is
 * off by at most 2, 0.7 on average, on this picture): lossy, but the right picture the right way
 * round (a swapped channel is off by 30, a row or column shifted by one by 3 everywhere). */
static void expect_jpeg_close(const oxl_image *im, bool grey) {
    cr_assert_eq(oxl_image_width(im), JW);
    cr_assert_eq(oxl_image_height(im), JH);
    const uint8_t *p = oxl_image_rgb(im);
    double sum = 0;
    int worst = 0;
    for (int y = 0; y < JH; y++) {
        for (int x = 0; x < JW; x++) {
            for (int c = 0; c < 3; c++) {
                const int d = abs(p[(y * JW + x) * 3 + c] - jpeg_src(x, y, grey ? 0 : c));
                worst = d > worst ? d : worst;
                sum += d;
                if (grey) {
                    cr_assert_eq(p[(y * JW + x) * 3 + c], p[(y * JW + x) * 3], "grey pixel (%d, %d) is not grey", x, y);
                }
            }
        }
    }
    cr_expect(worst <= 4, "largest error %d", worst);
    cr_expect(sum / (JW * JH * 3) < 1.5, "mean error %f", sum / (JW * JH * 3));
}

Test(image_decode, jpeg_rgb_and_grey) {
    size_t len = 0;
    uint8_t *j = make_jpeg(3, JCS_RGB, &len);
    oxl_error err = {{0}};
    oxl_image *im = oxl_image_load(j, len, &err);
    cr_assert_not_null(im, "%s", err.msg);
    expect_jpeg_close(im, false);
    oxl_image_free(im);

    /* truncated: the data ends inside the entropy-coded segment or the headers */
    for (size_t cut = 2; cut < len; cut = cut < 40 ? cut + 7 : cut + len / 5) {
        char what[64];
        snprintf(what, sizeof what, "JPEG cut to %zu of %zu bytes", cut, len);
        expect_fail_data(j, cut, what, cut < 3 ? WANT("image: unknown format") : WANT("image: JPEG: "));
    }
    free(j);

    j = make_jpeg(1, JCS_GRAYSCALE, &len);
    im = oxl_image_load(j, len, &err);
    cr_assert_not_null(im, "%s", err.msg);
    expect_jpeg_close(im, true);
    oxl_image_free(im);
    free(j);
}

Test(image_decode, jpeg_cmyk_refused) {
    size_t len = 0;
    uint8_t *j = make_jpeg(4, JCS_CMYK, &len);
    expect_fail_data(j, len, "CMYK JPEG", WANT("image: JPEG: CMYK images are not decoded"));
    free(j);
}

Test(image_decode, jpeg_huge_dimensions_refused) {
    size_t len = 0;
    uint8_t *j = make_jpeg(3, JCS_RGB, &len);
    /* SOF0: FF C0, length (2 bytes), precision, height (2), width (2): claim 60000 x 60000 */
    size_t at = 2;
    while (at + 9 < len && !(j[at] == 0xff && j[at + 1] == 0xc0)) {
        at++;
    }
    cr_assert(at + 9 < len, "no SOF0");
    j[at + 5] = 60000 >> 8;
    j[at + 6] = 60000 & 255;
    j[at + 7] = 60000 >> 8;
    j[at + 8] = 60000 & 255;
    expect_fail_data(j, len, "60000 x 60000 JPEG", WANT("image: JPEG: 60000 x 60000 pixels is out of range"));
    free(j);
}

/* ---- WebP ------------------------------------------------------------------------------------------ */

Test(image_decode, webp_lossless_exact) {
    uint8_t src[W * H * 3];
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            for (int c = 0; c < 3; c++) {
                src[(y * W + x) * 3 + c] = (uint8_t)rgb8(x, y, c);
            }
        }
    }
    uint8_t *webp = NULL;
    const size_t len = WebPEncodeLosslessRGB(src, W, H, W * 3, &webp);
    cr_assert_gt(len, 12u);
    oxl_error err = {{0}};
    oxl_image *im = oxl_image_load(webp, len, &err);
    cr_assert_not_null(im, "%s", err.msg);
    cr_assert_eq(oxl_image_width(im), W);
    cr_assert_eq(oxl_image_height(im), H);
    cr_assert_eq(memcmp(oxl_image_rgb(im), src, sizeof src), 0);
    oxl_image_free(im);
    expect_fail_data(webp, len / 2, "WebP cut in half", WANT("image: WebP: "));
    expect_fail_data(webp, 16, "WebP cut to 16 bytes", WANT("image: WebP: "));
    WebPFree(webp);
}

/* An 80-byte lossless WebP (found by fuzz_image) declaring 16141 x 2060 pixels that the decoder took
 * seconds to fill: refused by the bytes-per-byte bound before anything is allocated. */
Test(image_decode, webp_bomb_refused_before_decoding) {
    expect_fail_file("bomb.webp", WANT("image: WebP: 16141 x 2060 pixels from 80 bytes", "decompression bomb"));
}
