/* Image decoders: PNG (libpng), JPEG (libjpeg-turbo) and WebP (libwebp) bytes to an oxl_image of
 * 8-bit RGB, as llama.cpp's mtmd_helper_bitmap_init_from_buf decodes with stb_image
 * (stbi_load_from_memory with req_comp = 3). The conversion rules are stb_image's
 * (stbi__convert_format, stbi__convert_16_to_8) and are listed at oxl_image_load in
 * include/oxillama.h. Not in the subset build (no libpng, libjpeg or libwebp in the cross sysroots):
 * subset.c stands in there.
 *
 * Hostile input: every libpng / libjpeg error comes back here by longjmp and becomes an error value
 * ("image: PNG: ..."), warnings are silenced, and the size of an image is checked against
 * OXL_IMAGE_MAX_SIDE and OXL_IMAGE_MAX_PIXELS before anything of that size is allocated. */
#ifndef OXL_SUBSET

#include "image.h"

#include "errors.h"
#include "file.h"

#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE and size_t */
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

/* The longest side a decoder accepts (stb_image's STBI_MAX_DIMENSIONS is 1 << 24; 32768 is ample
 * for a vision tower and keeps a row's bytes far from overflow). */
#define OXL_IMAGE_MAX_SIDE 32768
/* oxl_image_load_file reads at most this many bytes. */
#define OXL_IMAGE_MAX_FILE ((size_t)256 << 20)
/* deflate cannot expand by more than 1032:1 (a 258-byte match in two 1-bit codes) */
#define OXL_DEFLATE_MAX_RATIO 1032
/* libpng: ancillary chunks kept at most, and the largest chunk it may allocate (iCCP, zTXt) */
#define OXL_PNG_CHUNK_CACHE 256
#define OXL_PNG_CHUNK_MALLOC ((png_alloc_size_t)8 << 20)
/* libjpeg: the memory for the coefficient buffer of a progressive JPEG, and the scans accepted (a
 * progressive file of many tiny scans makes the decoder redo the whole image per scan) */
#define OXL_JPEG_MAX_MEMORY (192L << 20)
#define OXL_JPEG_MAX_SCANS 1000
/* WebP has no deflate-like bound (lossless LZ77 runs of 4096 pixels with 1-bit codes): an 80-byte
 * VP8L file can declare 16141 x 2060 pixels that the decoder then fills for seconds. Decoded RGB bytes
 * are held to this many per byte of file (a 1920 x 1080 image must then take at least 1519 bytes);
 * photos and screenshots stay far below that, only near-solid images reach it. */
#define OXL_WEBP_MAX_RATIO 4096

/* err for a w x h image out of bounds; 0 when in bounds */
static int oxl_image_check_size(const char *format, uint64_t w, uint64_t h, oxl_error *err) {
    if (w == 0 || h == 0 || w > OXL_IMAGE_MAX_SIDE || h > OXL_IMAGE_MAX_SIDE || w * h > OXL_IMAGE_MAX_PIXELS) {
        return oxl_err_set(err, "image: %s: %llu x %llu pixels is out of range (sides 1 .. %d, at most %lld pixels)",
                           format, (unsigned long long)w, (unsigned long long)h, OXL_IMAGE_MAX_SIDE,
                           (long long)OXL_IMAGE_MAX_PIXELS);
    }
    return 0;
}

/* ---- PNG ------------------------------------------------------------------------------------------ */

typedef struct {
    const uint8_t *data;
    size_t len, pos;
    oxl_error *err;
    char warning[128]; /* libpng's last warning: it often says what an error is about */
} oxl_png_src;

static void oxl_png_on_error(png_structp png, png_const_charp msg) {
    oxl_png_src *src = png_get_error_ptr(png);
    if (src->warning[0]) {
        oxl_err_set(src->err, "image: PNG: %s (%s)", msg, src->warning);
    } else {
        oxl_err_set(src->err, "image: PNG: %s", msg);
    }
    png_longjmp(png, 1);
}

/* warnings (bad ancillary chunks, which libpng then drops) are not errors and are not printed */
static void oxl_png_on_warning(png_structp png, png_const_charp msg) {
    oxl_png_src *src = png_get_error_ptr(png);
    snprintf(src->warning, sizeof src->warning, "%s", msg);
}

static void oxl_png_read(png_structp png, png_bytep out, size_t n) {
    oxl_png_src *src = png_get_io_ptr(png);
    if (n > src->len - src->pos) {
        oxl_err_set(src->err, "image: PNG: the data ends early (%zu bytes; a chunk wants %zu more at byte %zu)",
                    src->len, n, src->pos);
        png_longjmp(png, 1);
    }
    memcpy(out, src->data + src->pos, n);
    src->pos += n;
}

static oxl_image *oxl_png_decode(const uint8_t *data, size_t len, oxl_error *err) {
    oxl_png_src src = {data, len, 0, err, ""};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, oxl_png_on_error, oxl_png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        oxl_err_set(err, "image: PNG: out of memory");
        return NULL;
    }
    uint8_t *volatile rgb = NULL;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rgb);
        return NULL;
    }
    png_set_read_fn(png, &src, oxl_png_read);
    png_set_user_limits(png, OXL_IMAGE_MAX_SIDE, OXL_IMAGE_MAX_SIDE);
    png_set_chunk_cache_max(png, OXL_PNG_CHUNK_CACHE);
    png_set_chunk_malloc_max(png, OXL_PNG_CHUNK_MALLOC);
    png_read_info(png, info);

    png_uint_32 w, h;
    int depth, color, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);
    if (oxl_image_check_size("PNG", w, h, err) < 0) {
        png_destroy_read_struct(&png, &info, NULL);
        return NULL;
    }
    /* The filtered rows (a filter byte and the packed samples each) come from deflate, which cannot
     * make them from fewer than 1/1032 as many bytes: a file too short for its size is refused before
     * the bitmap is allocated. */
    const uint64_t row_bytes = ((uint64_t)w * png_get_channels(png, info) * (uint64_t)depth + 7) / 8;
    const uint64_t raw = (uint64_t)h * (row_bytes + 1);
    if (raw > (uint64_t)len * OXL_DEFLATE_MAX_RATIO) {
        png_destroy_read_struct(&png, &info, NULL);
        oxl_err_set(err, "image: PNG: %u x %u pixels need %llu bytes of image data, more than %zu bytes can hold",
                    (unsigned)w, (unsigned)h, (unsigned long long)raw, len);
        return NULL;
    }

    /* stb_image's req_comp = 3: palette and grey below 8 bits expanded to 8 bits, 16 bits cut to
     * their high byte, alpha (and tRNS) dropped, grey copied to R, G and B. No gamma, no ICC. */
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    const int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_channels(png, info) != 3 || png_get_rowbytes(png, info) != (size_t)w * 3) {
        png_destroy_read_struct(&png, &info, NULL);
        oxl_err_set(err, "image: PNG: colour type %d, %d bits: not converted to 8-bit RGB", color, depth);
        return NULL;
    }
    rgb = malloc((size_t)w * h * 3);
    if (!rgb) {
        png_destroy_read_struct(&png, &info, NULL);
        oxl_err_set(err, "image: PNG: out of memory for %u x %u pixels", (unsigned)w, (unsigned)h);
        return NULL;
    }
    /* After the header chunks, a benign error (image data beyond the image, trailing chunks out of
     * order) is an error: libpng would otherwise only warn. */
    png_set_benign_errors(png, 0);
    for (int pass = 0; pass < passes; pass++) {
        for (png_uint_32 y = 0; y < h; y++) {
            png_read_row(png, rgb + (size_t)y * w * 3, NULL);
        }
    }
    png_read_end(png, NULL); /* the chunks up to IEND, with their CRCs */
    png_destroy_read_struct(&png, &info, NULL);
    oxl_image *im = oxl_image_adopt(rgb, (int32_t)w, (int32_t)h);
    if (!im) {
        oxl_err_set(err, "image: PNG: out of memory");
    }
    return im;
}

/* ---- JPEG ----------------------------------------------------------------------------------------- */

typedef struct {
    struct jpeg_error_mgr pub; /* first: libjpeg's cinfo->err points here */
    jmp_buf jmp;
    oxl_error *err;
} oxl_jpeg_err;

static void oxl_jpeg_fail(j_common_ptr cinfo) {
    oxl_jpeg_err *je = (oxl_jpeg_err *)cinfo->err;
    if (je->pub.msg_code == JERR_NO_BACKING_STORE) {
        oxl_err_set(je->err, "image: JPEG: the decoder needs more than %ld bytes of memory", OXL_JPEG_MAX_MEMORY);
    } else {
        char msg[JMSG_LENGTH_MAX];
        je->pub.format_message(cinfo, msg);
        oxl_err_set(je->err, "image: JPEG: %s", msg);
    }
    longjmp(je->jmp, 1);
}

/* Warnings are silent, except that the data ending before the image does (the end of the data, or a
 * marker inside a scan) is an error: libjpeg would fill the rest of the image with flat blocks, so a
 * few hundred bytes could claim tens of millions of pixels. */
static void oxl_jpeg_emit(j_common_ptr cinfo, int level) {
    if (level < 0 && (cinfo->err->msg_code == JWRN_JPEG_EOF || cinfo->err->msg_code == JWRN_HIT_MARKER)) {
        oxl_jpeg_fail(cinfo);
    }
}

static void oxl_jpeg_output(j_common_ptr cinfo) { (void)cinfo; }

static void oxl_jpeg_progress(j_common_ptr cinfo) {
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (d->input_scan_number > OXL_JPEG_MAX_SCANS) {
        oxl_jpeg_err *je = (oxl_jpeg_err *)cinfo->err;
        oxl_err_set(je->err, "image: JPEG: more than %d scans", OXL_JPEG_MAX_SCANS);
        longjmp(je->jmp, 1);
    }
}

static oxl_image *oxl_jpeg_decode(const uint8_t *data, size_t len, oxl_error *err) {
    struct jpeg_decompress_struct cinfo;
    oxl_jpeg_err je;
    struct jpeg_progress_mgr progress = {.progress_monitor = oxl_jpeg_progress};
    uint8_t *volatile rgb = NULL;
    cinfo.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = oxl_jpeg_fail;
    je.pub.emit_message = oxl_jpeg_emit;
    je.pub.output_message = oxl_jpeg_output;
    je.err = err;
    if (setjmp(je.jmp)) {
        jpeg_destroy_decompress(&cinfo);
        free(rgb);
        return NULL;
    }
    jpeg_create_decompress(&cinfo);
    cinfo.mem->max_memory_to_use = OXL_JPEG_MAX_MEMORY;
    cinfo.progress = &progress;
    jpeg_mem_src(&cinfo, data, (unsigned long)len);
    jpeg_read_header(&cinfo, TRUE);
    if (oxl_image_check_size("JPEG", cinfo.image_width, cinfo.image_height, err) < 0) {
        jpeg_destroy_decompress(&cinfo);
        return NULL;
    }
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&cinfo);
        oxl_err_set(err, "image: JPEG: %s images are not decoded (RGB, YCbCr and greyscale are)",
                    cinfo.jpeg_color_space == JCS_CMYK ? "CMYK" : "YCCK");
        return NULL;
    }
    cinfo.out_color_space = JCS_RGB;
    jpeg_start_decompress(&cinfo);
    const uint32_t w = cinfo.output_width, h = cinfo.output_height;
    if (cinfo.output_components != 3) {
        oxl_err_set(err, "image: JPEG: %d output components, want 3", cinfo.output_components);
        jpeg_destroy_decompress(&cinfo);
        return NULL;
    }
    rgb = malloc((size_t)w * h * 3);
    if (!rgb) {
        jpeg_destroy_decompress(&cinfo);
        oxl_err_set(err, "image: JPEG: out of memory for %u x %u pixels", (unsigned)w, (unsigned)h);
        return NULL;
    }
    while (cinfo.output_scanline < h) {
        JSAMPROW row = rgb + (size_t)cinfo.output_scanline * w * 3;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    oxl_image *im = oxl_image_adopt(rgb, (int32_t)w, (int32_t)h);
    if (!im) {
        oxl_err_set(err, "image: JPEG: out of memory");
    }
    return im;
}

/* ---- WebP ----------------------------------------------------------------------------------------- */

static const char *oxl_webp_status(VP8StatusCode st) {
    switch (st) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the data ends early";
    default: return "not decodable";
    }
}

static oxl_image *oxl_webp_decode(const uint8_t *data, size_t len, oxl_error *err) {
    WebPBitstreamFeatures f;
    const VP8StatusCode st = WebPGetFeatures(data, len, &f);
    if (st != VP8_STATUS_OK) {
        oxl_err_set(err, "image: WebP: %s", oxl_webp_status(st));
        return NULL;
    }
    if (f.has_animation) {
        oxl_err_set(err, "image: WebP: animated images are not decoded");
        return NULL;
    }
    if (oxl_image_check_size("WebP", (uint64_t)f.width, (uint64_t)f.height, err) < 0) {
        return NULL;
    }
    const size_t n = (size_t)f.width * (size_t)f.height * 3;
    if ((uint64_t)n > (uint64_t)len * OXL_WEBP_MAX_RATIO) {
        oxl_err_set(err,
                    "image: WebP: %d x %d pixels from %zu bytes: more than %d bytes of pixels per byte of file "
                    "(a decompression bomb?)",
                    f.width, f.height, len, OXL_WEBP_MAX_RATIO);
        return NULL;
    }
    uint8_t *rgb = malloc(n);
    if (!rgb) {
        oxl_err_set(err, "image: WebP: out of memory for %d x %d pixels", f.width, f.height);
        return NULL;
    }
    /* RGB as stored, alpha dropped (not composited) */
    if (!WebPDecodeRGBInto(data, len, rgb, n, f.width * 3)) {
        free(rgb);
        oxl_err_set(err, "image: WebP: the %d x %d image does not decode (truncated or corrupt data)", f.width,
                    f.height);
        return NULL;
    }
    oxl_image *im = oxl_image_adopt(rgb, f.width, f.height);
    if (!im) {
        oxl_err_set(err, "image: WebP: out of memory");
    }
    return im;
}

/* ---- format sniffing ------------------------------------------------------------------------------ */

oxl_image *oxl_image_load(const uint8_t *data, size_t len, oxl_error *err) {
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (!data || len == 0) {
        oxl_err_set(err, "image: no data (0 bytes)");
        return NULL;
    }
    if (len >= 8 && memcmp(data, png_magic, 8) == 0) {
        return oxl_png_decode(data, len, err);
    }
    if (len >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) {
        return oxl_jpeg_decode(data, len, err);
    }
    if (len >= 12 && memcmp(data, "RIFF", 4) == 0 && memcmp(data + 8, "WEBP", 4) == 0) {
        return oxl_webp_decode(data, len, err);
    }
    char head[8 * 3 + 1] = "";
    for (size_t i = 0, at = 0; i < len && i < 8; i++) {
        at += (size_t)snprintf(head + at, sizeof head - at, "%s%02x", i ? " " : "", data[i]);
    }
    oxl_err_set(err, "image: unknown format (first bytes %s): PNG, JPEG and WebP are decoded", head);
    return NULL;
}

oxl_image *oxl_image_load_file(const char *path, oxl_error *err) {
    size_t len = 0;
    char *data = oxl_read_file_max(path, OXL_IMAGE_MAX_FILE, &len, err);
    if (!data) {
        oxl_err_prefix(err, "image");
        return NULL;
    }
    oxl_image *im = oxl_image_load((const uint8_t *)data, len, err);
    free(data);
    if (!im) {
        oxl_err_prefix(err, "%s", path);
    }
    return im;
}

#endif
