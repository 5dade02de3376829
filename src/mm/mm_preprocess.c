/* Image preprocessing (mm_preprocess.h), as llama.cpp tools/mtmd/mtmd-image.cpp: img_tool's
 * resizes and letterbox, the fixed-size, llava-uhd (pinpoints) and dyn-size preprocessors, and
 * img_u8_to_f32. Every float operation is the one llama.cpp performs, in the same type and order,
 * so the normalised pixels are bit-identical (golden/mm: image.K.pixels). */
#include "mm_preprocess.h"

#include "errors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline int32_t clampi(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- resizes ---- */

/* One cubic step of resize_bicubic: through p[-1], p[0], p[1], p[2] (given as a0 and the three
 * differences from it) at t; the coefficients are computed in double and stored as float, the
 * polynomial is evaluated in float. */
static inline float cubic(float a0, float d0, float d2, float d3, float t) {
    const float a1 = (float)(-1.0 / 3 * d0 + d2 - 1.0 / 6 * d3);
    const float a2 = (float)(1.0 / 2 * d0 + 1.0 / 2 * d2);
    const float a3 = (float)(-1.0 / 6 * d0 - 1.0 / 2 * d2 + 1.0 / 6 * d3);
    return a0 + a1 * t + a2 * t * t + a3 * t * t * t;
}

void oxl_mm_resize_bicubic(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t dw, int32_t dh) {
    const float tx = (float)sw / (float)dw, ty = (float)sh / (float)dh;
    for (int32_t i = 0; i < dh; i++) {
        const int32_t y = (int32_t)(ty * (float)i);
        const float dy = ty * (float)i - (float)y;
        for (int32_t j = 0; j < dw; j++) {
            const int32_t x = (int32_t)(tx * (float)j);
            const float dx = tx * (float)j - (float)x;
            const int32_t xs[4] = {clampi(x - 1, 0, sw - 1), clampi(x, 0, sw - 1), clampi(x + 1, 0, sw - 1),
                                   clampi(x + 2, 0, sw - 1)};
            for (int k = 0; k < 3; k++) {
                float col[4];
                for (int jj = 0; jj < 4; jj++) {
                    const uint8_t *row = src + (size_t)clampi(y - 1 + jj, 0, sh - 1) * sw * 3;
                    const int32_t p0 = row[xs[1] * 3 + k];
                    col[jj] = cubic((float)p0, (float)(row[xs[0] * 3 + k] - p0), (float)(row[xs[2] * 3 + k] - p0),
                                    (float)(row[xs[3] * 3 + k] - p0), dx);
                }
                const float v = cubic(col[1], col[0] - col[1], col[2] - col[1], col[3] - col[1], dy);
                dst[((size_t)i * dw + j) * 3 + k] = (uint8_t)fminf(fmaxf(roundf(v), 0.0f), 255.0f);
            }
        }
    }
}

static inline float lerp(float s, float e, float t) { return s + (e - s) * t; }

void oxl_mm_resize_bilinear(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t dw, int32_t dh) {
    const float x_ratio = dw > 1 ? (float)(sw - 1) / (float)(dw - 1) : 0.0f;
    const float y_ratio = dh > 1 ? (float)(sh - 1) / (float)(dh - 1) : 0.0f;
    for (int32_t y = 0; y < dh; y++) {
        const float py = (float)y * y_ratio;
        const int32_t y0 = clampi((int32_t)py, 0, sh - 1), y1 = clampi(y0 + 1, 0, sh - 1);
        const float yf = py - (float)y0;
        for (int32_t x = 0; x < dw; x++) {
            const float px = (float)x * x_ratio;
            const int32_t x0 = clampi((int32_t)px, 0, sw - 1), x1 = clampi(x0 + 1, 0, sw - 1);
            const float xf = px - (float)x0;
            for (int c = 0; c < 3; c++) {
                const float top = lerp(src[((size_t)y0 * sw + x0) * 3 + c], src[((size_t)y0 * sw + x1) * 3 + c], xf);
                const float bottom = lerp(src[((size_t)y1 * sw + x0) * 3 + c], src[((size_t)y1 * sw + x1) * 3 + c], xf);
                dst[((size_t)y * dw + x) * 3 + c] = (uint8_t)lerp(top, bottom, yf);
            }
        }
    }
}

static void resize(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t dw, int32_t dh,
                   oxl_mm_resize algo) {
    if (sw == dw && sh == dh) {
        memcpy(dst, src, (size_t)sw * sh * 3);
    } else if (algo == OXL_MM_RESIZE_BICUBIC) {
        oxl_mm_resize_bicubic(src, sw, sh, dst, dw, dh);
    } else {
        oxl_mm_resize_bilinear(src, sw, sh, dst, dw, dh);
    }
}

/* The inner size of the letterbox: min(ceil(s * scale), t) with scale = min(tw / sw, th / sh). */
static void letterbox_size(int32_t sw, int32_t sh, int32_t tw, int32_t th, int32_t *nw, int32_t *nh) {
    const float scale = fminf((float)tw / (float)sw, (float)th / (float)sh);
    const float cw = ceilf((float)sw * scale), ch = ceilf((float)sh * scale);
    *nw = cw < (float)tw ? (int32_t)cw : tw;
    *nh = ch < (float)th ? (int32_t)ch : th;
}

int oxl_mm_letterbox(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t tw, int32_t th,
                     oxl_mm_resize algo, const uint8_t pad[3], int32_t inner[4], oxl_error *err) {
    int32_t nw = tw, nh = th, ox = 0, oy = 0;
    if (sw == tw && sh == th) {
        memcpy(dst, src, (size_t)sw * sh * 3);
    } else {
        letterbox_size(sw, sh, tw, th, &nw, &nh);
        ox = (tw - nw) / 2;
        oy = (th - nh) / 2;
        uint8_t *tmp = malloc((size_t)nw * nh * 3);
        if (!tmp) {
            return oxl_err_set(err, "out of memory resizing an image to %dx%d", nw, nh);
        }
        resize(src, sw, sh, tmp, nw, nh, algo);
        for (size_t i = 0; i < (size_t)tw * th; i++) {
            memcpy(dst + 3 * i, pad, 3);
        }
        for (int32_t y = 0; y < nh; y++) {
            memcpy(dst + ((size_t)(y + oy) * tw + ox) * 3, tmp + (size_t)y * nw * 3, (size_t)nw * 3);
        }
        free(tmp);
    }
    if (inner) {
        inner[0] = nw, inner[1] = nh, inner[2] = ox, inner[3] = oy;
    }
    return 0;
}

/* ---- sizes ---- */

int oxl_mm_smart_size(int32_t w, int32_t h, int32_t align, int64_t min_pixels, int64_t max_pixels, int32_t *tw,
                      int32_t *th, oxl_error *err) {
    const float f = (float)align;
    int64_t hb = (int64_t)roundf((float)h / f) * align, wb = (int64_t)roundf((float)w / f) * align;
    hb = hb > align ? hb : align;
    wb = wb > align ? wb : align;
    if (hb * wb > max_pixels) {
        const float beta = sqrtf((float)((int64_t)h * w) / (float)max_pixels);
        hb = (int64_t)floorf((float)h / beta / f) * align;
        wb = (int64_t)floorf((float)w / beta / f) * align;
        hb = hb > align ? hb : align;
        wb = wb > align ? wb : align;
    } else if (hb * wb < min_pixels) {
        const float beta = sqrtf((float)min_pixels / (float)((int64_t)h * w));
        hb = (int64_t)ceilf((float)h * beta / f) * align;
        wb = (int64_t)ceilf((float)w * beta / f) * align;
    }
    if (wb < 1 || hb < 1 || wb > OXL_MM_MAX_SIDE || hb > OXL_MM_MAX_SIDE || wb * hb > OXL_MM_MAX_TILE_PIXELS) {
        return oxl_err_set(err,
                           "image %dx%d: dynamic resolution gives %lldx%lld pixels, beyond %d per side or %lld in all",
                           w, h, (long long)wb, (long long)hb, OXL_MM_MAX_SIDE, (long long)OXL_MM_MAX_TILE_PIXELS);
    }
    *tw = (int32_t)wb;
    *th = (int32_t)hb;
    return 0;
}

int32_t oxl_mm_best_pinpoint(int32_t w, int32_t h, const int32_t (*pinpoints)[2], int32_t n) {
    int32_t best = 0;
    int64_t max_effective = 0, min_wasted = INT64_MAX;
    for (int32_t i = 0; i < n; i++) {
        const int32_t cw = pinpoints[i][0], ch = pinpoints[i][1];
        const float scale = fminf((float)cw / (float)w, (float)ch / (float)h);
        const int64_t rw = (int64_t)((float)w * scale), rh = (int64_t)((float)h * scale);
        const int64_t effective = rw * rh < (int64_t)w * h ? rw * rh : (int64_t)w * h;
        const int64_t wasted = (int64_t)cw * ch - effective;
        if (effective > max_effective || (effective == max_effective && wasted < min_wasted)) {
            max_effective = effective;
            min_wasted = wasted;
            best = i;
        }
    }
    return best;
}

/* ---- tiles ---- */

#define OXL_MM_MAX_TILES 1024

/* The tile of the w x h region at (x, y) of the RGB bytes buf (bw wide): img_u8_to_f32's
 * (v / 255 - mean) / std in float, planar. The grid and token count follow the projector. */
static int make_tile(const oxl_mm_params *p, const uint8_t *buf, int32_t bw, int32_t x, int32_t y, int32_t w, int32_t h,
                     oxl_mm_tile *t, oxl_error *err) {
    const size_t plane = (size_t)w * h;
    t->w = w;
    t->h = h;
    if (p->kind == OXL_MM_PREP_DYN) {
        const int32_t a = p->patch_size * p->n_merge;
        t->grid_x = w / a;
        t->grid_y = h / a;
        t->n_tokens = t->grid_x * t->grid_y;
    } else {
        /* clip_n_output_tokens: the patches, divided by n_merge^2 for the pooled projectors */
        t->n_tokens = (w / p->patch_size) * (h / p->patch_size) / (p->n_merge * p->n_merge);
        t->grid_x = t->n_tokens;
        t->grid_y = 1;
    }
    if (t->n_tokens <= 0) {
        return oxl_err_set(err, "a %dx%d tile is smaller than one %dx%d patch", w, h, p->patch_size * p->n_merge,
                           p->patch_size * p->n_merge);
    }
    t->pixels = malloc(plane * 3 * sizeof(float));
    if (!t->pixels) {
        return oxl_err_set(err, "out of memory for a %dx%d tile", w, h);
    }
    for (int32_t yy = 0; yy < h; yy++) {
        const uint8_t *row = buf + ((size_t)(y + yy) * bw + x) * 3;
        for (int32_t xx = 0; xx < w; xx++) {
            for (int c = 0; c < 3; c++) {
                t->pixels[c * plane + (size_t)yy * w + xx] = ((float)row[xx * 3 + c] / 255.0f - p->mean[c]) / p->std[c];
            }
        }
    }
    return 0;
}

/* A w x h RGB byte buffer, bounded by OXL_MM_MAX_TILE_PIXELS. */
static uint8_t *image_buf(int64_t w, int64_t h, const char *what, oxl_error *err) {
    if (w < 1 || h < 1 || w > OXL_MM_MAX_SIDE || h > OXL_MM_MAX_SIDE || w * h > OXL_MM_MAX_TILE_PIXELS) {
        oxl_err_set(err, "%s of %lldx%lld pixels exceeds %d per side or %lld in all", what, (long long)w, (long long)h,
                    OXL_MM_MAX_SIDE, (long long)OXL_MM_MAX_TILE_PIXELS);
        return NULL;
    }
    uint8_t *buf = malloc((size_t)(w * h * 3));
    if (!buf) {
        oxl_err_set(err, "out of memory for a %s of %lldx%lld pixels", what, (long long)w, (long long)h);
    }
    return buf;
}

static int push_tile(const oxl_mm_params *p, const uint8_t *buf, int32_t bw, int32_t x, int32_t y, int32_t w, int32_t h,
                     oxl_mm_tiles *out, oxl_error *err) {
    oxl_mm_tile *t = &out->tiles[out->n];
    memset(t, 0, sizeof *t);
    if (make_tile(p, buf, bw, x, y, w, h, t, err) != 0) {
        oxl_mm_tile_clear(t);
        return -1;
    }
    out->n++;
    return 0;
}

/* LLaVA-NeXT (mtmd_image_preprocessor_llava_uhd with pinpoints): an image larger than image_size
 * on a side is letterboxed into the best pinpoint and cut into image_size tiles (row-major, the
 * last row and column possibly narrower); the overview, the whole image stretched to image_size
 * square, comes last. */
static int prep_anyres(const oxl_mm_params *p, const uint8_t *rgb, int32_t w, int32_t h, oxl_mm_tiles *out,
                       oxl_error *err) {
    const int32_t s = p->image_size;
    int rc = -1;
    uint8_t *ov = image_buf(s, s, "overview", err), *rf = NULL;
    if (!ov) {
        return -1;
    }
    resize(rgb, w, h, ov, s, s, p->resize_overview);
    if (w > s || h > s) {
        const int32_t *pp = p->pinpoints[oxl_mm_best_pinpoint(w, h, (const int32_t(*)[2])p->pinpoints, p->n_pinpoints)];
        const int32_t rw = pp[0], rh = pp[1];
        const int64_t n_tiles = (int64_t)((rw + s - 1) / s) * ((rh + s - 1) / s);
        if (n_tiles + 1 > OXL_MM_MAX_TILES) {
            oxl_err_set(err, "pinpoint %dx%d in tiles of %d gives %lld tiles, more than %d", rw, rh, s,
                        (long long)n_tiles, OXL_MM_MAX_TILES - 1);
            goto done;
        }
        rf = image_buf(rw, rh, "refined image", err);
        if (!rf || oxl_mm_letterbox(rgb, w, h, rf, rw, rh, p->resize, p->pad, NULL, err) != 0) {
            goto done;
        }
        out->tiles = calloc((size_t)n_tiles + 1, sizeof *out->tiles);
        if (!out->tiles) {
            oxl_err_set(err, "out of memory for %lld tiles", (long long)n_tiles + 1);
            goto done;
        }
        for (int32_t y = 0; y < rh; y += s) {
            for (int32_t x = 0; x < rw; x += s) {
                if (push_tile(p, rf, rw, x, y, rw - x < s ? rw - x : s, rh - y < s ? rh - y : s, out, err) != 0) {
                    goto done;
                }
            }
        }
    } else if (!(out->tiles = calloc(1, sizeof *out->tiles))) {
        oxl_err_set(err, "out of memory for a tile");
        goto done;
    }
    rc = push_tile(p, ov, s, 0, 0, s, s, out, err);
done:
    free(ov);
    free(rf);
    return rc;
}

int oxl_mm_preprocess(const oxl_mm_params *p, const oxl_image *image, oxl_mm_tiles *out, oxl_error *err) {
    const int32_t w = image->w, h = image->h;
    memset(out, 0, sizeof *out);
    int rc = -1;
    if (p->kind == OXL_MM_PREP_ANYRES) {
        rc = prep_anyres(p, image->rgb, w, h, out, err);
    } else {
        /* one tile: the letterbox into image_size square (fixed) or into the smart size (dyn) */
        int32_t tw = p->image_size, th = p->image_size;
        if (p->kind == OXL_MM_PREP_DYN &&
            oxl_mm_smart_size(w, h, p->patch_size * p->n_merge, p->min_pixels, p->max_pixels, &tw, &th, err) != 0) {
            return -1;
        }
        uint8_t *buf = image_buf(tw, th, "resized image", err);
        if (buf && oxl_mm_letterbox(image->rgb, w, h, buf, tw, th, p->resize, p->pad, NULL, err) == 0) {
            out->tiles = calloc(1, sizeof *out->tiles);
            rc = out->tiles ? push_tile(p, buf, tw, 0, 0, tw, th, out, err) : oxl_err_set(err, "out of memory");
        }
        free(buf);
    }
    if (rc != 0) {
        oxl_mm_tiles_free(out);
        oxl_err_prefix(err, "preprocessing a %dx%d image for %s", w, h, p->projector_name);
    }
    return rc;
}

void oxl_mm_tiles_free(oxl_mm_tiles *t) {
    if (t) {
        for (int32_t i = 0; i < t->n; i++) {
            oxl_mm_tile_clear(&t->tiles[i]);
        }
        free(t->tiles);
        t->tiles = NULL;
        t->n = 0;
    }
}
