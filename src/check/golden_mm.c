/* golden.kind = multimodal (golden_mm.h): one case loaded once, then a table of checks over it. */
#include "golden_mm.h"

#include "clip.h"
#include "context.h"
#include "errors.h"
#include "image.h"
#include "mm_chunks.h"
#include "mm_params.h"
#include "mm_preprocess.h"
#include "oxl_types.h"

#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Everything a check reads: the golden file, the mmproj's parameters, the text model, the image's
 * tiles and the prompt's chunks, as oxillama computes them. */
typedef struct mm_case {
    const oxl_gguf *g;
    const char *path; /* of the golden file */
    oxl_gguf *mmproj;
    oxl_mm_params params;
    oxl_model *model;
    oxl_image *image;
    oxl_mm_tiles tiles;
    oxl_mm_chunks chunks;
    oxl_clip *clip; /* the mmproj's tower (its own open of the file) */
    oxl_ctx *ctx;   /* f32 cache, flash attention off, the whole prompt in one pass: the reference run */
    float **embd;   /* [image chunks] our embeddings of each image chunk, (n_embd, n_tokens) */
} mm_case;

/* An i32 or f32 tensor of the golden with n elements in ne0..ne1 (ne1 = 0: 1-D). */
static const oxl_gguf_tensor *tensor(const oxl_gguf *g, const char *name, uint32_t type, int64_t ne0, int64_t ne1,
                                     oxl_error *err) {
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, name);
    if (!t) {
        oxl_err_set(err, "%s: missing tensor '%s'", oxl_gguf_path(g), name);
        return NULL;
    }
    if (t->type != type || (ne0 && t->ne[0] != ne0) || t->ne[1] != (ne1 ? ne1 : 1) || t->ne[2] != 1 || t->ne[3] != 1) {
        oxl_err_set(err, "%s: tensor '%s' has an unexpected type or shape", oxl_gguf_path(g), name);
        return NULL;
    }
    return t;
}

static int32_t i32_at(const oxl_gguf_tensor *t, int64_t i) {
    int32_t v;
    memcpy(&v, (const char *)t->data + 4 * i, sizeof v);
    return v;
}

/* The path of a file named by a string key of the golden, relative to the golden's folder. */
static int golden_relative(const mm_case *c, const char *key, bool file_name_only, char *out, size_t cap,
                           oxl_error *err) {
    const char *name = NULL;
    if (oxl_gguf_get_str(c->g, key, &name, err) != 1) {
        return oxl_err_set(err, "%s: missing string key '%s'", c->path, key);
    }
    if (!name[0] || name[0] == '/' || (file_name_only && strchr(name, '/'))) {
        return oxl_err_set(err, "%s: %s '%s' must be a %s", c->path, key, name,
                           file_name_only ? "file name" : "relative path");
    }
    char dir_buf[4096];
    snprintf(dir_buf, sizeof dir_buf, "%s", c->path);
    if ((size_t)snprintf(out, cap, "%s/%s", dirname(dir_buf), name) >= cap) {
        return oxl_err_set(err, "%s: %s '%s' makes too long a path", c->path, key, name);
    }
    return 0;
}

/* The image: image_rgb, i32 [3, W, H] bytes, as golden.image_width x golden.image_height. */
static int load_image(mm_case *c, oxl_error *err) {
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(c->g, "image_rgb");
    if (!t || t->type != OXL_TYPE_I32 || t->ne[0] != 3 || t->ne[1] < 1 || t->ne[2] < 1 || t->ne[3] != 1 ||
        t->ne[1] * t->ne[2] > OXL_IMAGE_MAX_PIXELS) {
        return oxl_err_set(err, "%s: tensor 'image_rgb' must be i32 [3, W, H]", c->path);
    }
    const int64_t n = 3 * t->ne[1] * t->ne[2];
    uint8_t *rgb = malloc((size_t)n);
    if (!rgb) {
        return oxl_err_set(err, "out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        const int32_t v = i32_at(t, i);
        if (v < 0 || v > 255) {
            free(rgb);
            return oxl_err_set(err, "%s: image_rgb[%lld] = %d is not a byte", c->path, (long long)i, v);
        }
        rgb[i] = (uint8_t)v;
    }
    c->image = oxl_image_from_rgb(rgb, (int32_t)t->ne[1], (int32_t)t->ne[2], err);
    free(rgb);
    return c->image ? 0 : -1;
}

static int load_case(mm_case *c, const char *text_model_path, oxl_error *err) {
    char mmproj[4096], text_model[4096];
    if (golden_relative(c, "golden.mmproj", true, mmproj, sizeof mmproj, err) != 0 ||
        (!text_model_path &&
         golden_relative(c, "golden.text_model_path", false, text_model, sizeof text_model, err) != 0)) {
        return -1;
    }
    c->mmproj = oxl_gguf_open(mmproj, err);
    if (!c->mmproj || oxl_mm_params_read(c->mmproj, NULL, &c->params, err) != 0) {
        return -1;
    }
    oxl_model_params mp = oxl_model_default_params();
    c->model = oxl_model_load(text_model_path ? text_model_path : text_model, &mp, err);
    if (!c->model || load_image(c, err) != 0 || oxl_mm_preprocess(&c->params, c->image, &c->tiles, err) != 0) {
        return -1;
    }
    const char *prompt = NULL, *marker = NULL;
    if (oxl_gguf_get_str(c->g, "golden.prompt", &prompt, err) != 1 ||
        oxl_gguf_get_str(c->g, "golden.image_marker", &marker, err) != 1) {
        return oxl_err_set(err, "%s: missing string key 'golden.prompt' or 'golden.image_marker'", c->path);
    }
    char mm_path[4096];
    if (golden_relative(c, "golden.mmproj", true, mm_path, sizeof mm_path, err) != 0 ||
        !(c->clip = oxl_clip_load(mm_path, err))) {
        return -1;
    }
    /* as the reference harness: mtmd_tokenize with add_special and parse_special */
    const oxl_mm_prompt opt = {.marker = marker, .add_special = true, .parse_special = true};
    return oxl_mm_tokenize(c->model, &c->params, prompt, strlen(prompt), &c->tiles, 1, &opt, &c->chunks, err);
}

/* The first index where a chunk field differs from the golden's array, or -1. */
static int64_t first_diff(const oxl_gguf_tensor *t, const int32_t *ours, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (i32_at(t, i) != ours[i]) {
            return i;
        }
    }
    return -1;
}

/* The chunk layout: type, n_tokens, n_pos, pos0 and grid of every chunk (mtmd_input_chunk_get_*). */
static int check_chunks(const mm_case *c, oxl_golden_report *r, oxl_error *err) {
    static const char *const names[] = {"chunk_type", "chunk_n_tokens", "chunk_n_pos",
                                        "chunk_pos0", "chunk_grid_x",   "chunk_grid_y"};
    enum { N_FIELDS = sizeof names / sizeof names[0] };
    const oxl_gguf_tensor *want[N_FIELDS];
    const oxl_gguf_tensor *type = oxl_gguf_find_tensor(c->g, "chunk_type");
    const int64_t n_want = type ? type->ne[0] : 0;
    int64_t n_chunks = -1;
    if (oxl_gguf_get_int(c->g, "golden.n_chunks", &n_chunks, err) != 1 || n_chunks != n_want) {
        return oxl_err_set(err, "%s: golden.n_chunks must equal the length of chunk_type", c->path);
    }
    for (int f = 0; f < N_FIELDS; f++) {
        if (!(want[f] = tensor(c->g, names[f], OXL_TYPE_I32, n_want, 0, err))) {
            return -1;
        }
    }
    const int32_t n = c->chunks.n;
    oxl_golden_line(r, n == n_want, "mm chunks  %d, llama.cpp %lld", n, (long long)n_want);
    int32_t *ours = malloc(sizeof *ours * (size_t)(n ? n : 1));
    if (!ours) {
        return oxl_err_set(err, "out of memory");
    }
    for (int f = 0; f < N_FIELDS && n == n_want; f++) {
        for (int32_t i = 0; i < n; i++) {
            const oxl_mm_chunk *ch = &c->chunks.chunks[i];
            const int32_t v[N_FIELDS] = {ch->type, ch->n_tokens, ch->n_pos, ch->pos0, ch->grid_x, ch->grid_y};
            ours[i] = v[f];
        }
        const int64_t d = first_diff(want[f], ours, n);
        if (d < 0) {
            oxl_golden_line(r, true, "mm %s  %d/%d chunks equal", names[f], n, n);
        } else {
            oxl_golden_line(r, false, "mm %s  chunk %lld: got %d, want %d", names[f], (long long)d, ours[d],
                            i32_at(want[f], d));
        }
    }
    free(ours);
    return 0;
}

/* The sequence: token id (-1 for an embedding), chunk and decoder positions at every position. */
static int check_sequence(const mm_case *c, oxl_golden_report *r, oxl_error *err) {
    const oxl_mm_chunks *ch = &c->chunks;
    int64_t want_n_tokens = -1, want_n_pos = -1;
    if (oxl_gguf_get_int(c->g, "golden.n_tokens", &want_n_tokens, err) != 1 ||
        oxl_gguf_get_int(c->g, "golden.n_pos", &want_n_pos, err) != 1) {
        return oxl_err_set(err, "%s: missing integer key 'golden.n_tokens' or 'golden.n_pos'", c->path);
    }
    oxl_golden_line(r, ch->n_tokens == want_n_tokens && ch->n_pos == want_n_pos,
                    "mm sequence length  %d tokens, %d positions; llama.cpp %lld, %lld", ch->n_tokens, ch->n_pos,
                    (long long)want_n_tokens, (long long)want_n_pos);
    const int64_t n = want_n_tokens, n_sec = ch->mrope ? 4 : 1;
    const oxl_gguf_tensor *tt = tensor(c->g, "tokens", OXL_TYPE_I32, n, 0, err);
    const oxl_gguf_tensor *tc = tt ? tensor(c->g, "token_chunk", OXL_TYPE_I32, n, 0, err) : NULL;
    const oxl_gguf_tensor *tp = tc ? oxl_gguf_find_tensor(c->g, "pos") : NULL;
    if (!tc) {
        return -1;
    }
    if (!tp || tp->type != OXL_TYPE_I32 || tp->ne[0] != n || tp->ne[2] != 1 || tp->ne[3] != 1 ||
        (tp->ne[1] != 1 && tp->ne[1] != 4)) {
        return oxl_err_set(err, "%s: tensor 'pos' must be i32 [n_tokens] or [n_tokens, 4]", c->path);
    }
    oxl_golden_line(r, tp->ne[1] == n_sec, "mm positions per token  %lld, llama.cpp %lld (M-RoPE %s)", (long long)n_sec,
                    (long long)tp->ne[1], ch->mrope ? "on" : "off");
    if (ch->n_tokens != n || tp->ne[1] != n_sec) {
        return 0;
    }
    int32_t *buf = malloc(sizeof *buf * (size_t)(n * (2 + n_sec)));
    if (!buf) {
        return oxl_err_set(err, "out of memory");
    }
    int32_t *tokens = buf, *token_chunk = buf + n, *pos = buf + 2 * n;
    oxl_mm_chunks_sequence(ch, tokens, token_chunk, pos);
    const struct {
        const char *name;
        const oxl_gguf_tensor *want;
        const int32_t *ours;
        int64_t n;
    } rows[] = {{"tokens", tt, tokens, n}, {"token_chunk", tc, token_chunk, n}, {"pos", tp, pos, n * n_sec}};
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        const int64_t d = first_diff(rows[k].want, rows[k].ours, rows[k].n);
        if (d < 0) {
            oxl_golden_line(r, true, "mm %s  %lld/%lld values equal", rows[k].name, (long long)rows[k].n,
                            (long long)rows[k].n);
        } else {
            oxl_golden_line(r, false, "mm %s  first difference at [%lld, %lld]: got %d, want %d", rows[k].name,
                            (long long)(d % n), (long long)(d / n), rows[k].ours[d], i32_at(rows[k].want, d));
        }
    }
    free(buf);
    return 0;
}

/* image.K.pixels: the normalised input of the vision graph of the K-th image chunk, bit for bit. */
static int check_pixels(const mm_case *c, oxl_golden_report *r, oxl_error *err) {
    int32_t k = 0;
    for (int32_t i = 0; i < c->chunks.n; i++) {
        const oxl_mm_chunk *ch = &c->chunks.chunks[i];
        if (ch->type != OXL_MM_CHUNK_IMAGE) {
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "image.%d.pixels", k++);
        const oxl_mm_tile *tile = &c->tiles.tiles[ch->tile];
        const oxl_gguf_tensor *t = oxl_gguf_find_tensor(c->g, name);
        if (!t || t->type != OXL_TYPE_F32 || t->ne[2] != 3 || t->ne[3] != 1) {
            return oxl_err_set(err, "%s: tensor '%s' must be f32 [W, H, 3]", c->path, name);
        }
        if (t->ne[0] != tile->w || t->ne[1] != tile->h) {
            oxl_golden_line(r, false, "mm %s  size %dx%d, llama.cpp %lldx%lld", name, tile->w, tile->h,
                            (long long)t->ne[0], (long long)t->ne[1]);
            continue;
        }
        const int64_t n = 3 * (int64_t)tile->w * tile->h;
        int64_t n_diff = 0, first = -1;
        for (int64_t j = 0; j < n; j++) {
            uint32_t a, b;
            memcpy(&a, &tile->pixels[j], 4);
            memcpy(&b, (const char *)t->data + 4 * j, 4);
            if (a != b) {
                first = first < 0 ? j : first;
                n_diff++;
            }
        }
        if (n_diff == 0) {
            oxl_golden_line(r, true, "mm %s  %dx%dx3 bit-identical", name, tile->w, tile->h);
        } else {
            const int64_t plane = (int64_t)tile->w * tile->h;
            float want;
            memcpy(&want, (const char *)t->data + 4 * first, 4);
            oxl_golden_line(r, false, "mm %s  %lld/%lld values differ, first at x=%lld y=%lld c=%lld: %.9g, want %.9g",
                            name, (long long)n_diff, (long long)n, (long long)(first % plane % tile->w),
                            (long long)(first % plane / tile->w), (long long)(first / plane),
                            (double)tile->pixels[first], (double)want);
        }
    }
    return 0;
}

/* An f32 tensor of the golden with exactly ne0 x ne1 values. */
static const float *f32_tensor(const mm_case *c, const char *name, int64_t ne0, int64_t ne1, oxl_error *err) {
    const oxl_gguf_tensor *t = tensor(c->g, name, OXL_TYPE_F32, ne0, ne1, err);
    return t ? (const float *)t->data : NULL;
}

/* image.K.embd: the tower's output for each image chunk from our own pixels, within 1e-4 of the
 * largest golden value (the relative bound); the embeddings are kept for the logits. */
static int check_embd(const mm_case *c, oxl_golden_report *r, oxl_error *err) {
    const int32_t n_embd = oxl_clip_n_embd_out(c->clip);
    int32_t k = 0;
    for (int32_t i = 0; i < c->chunks.n; i++) {
        const oxl_mm_chunk *ch = &c->chunks.chunks[i];
        if (ch->type != OXL_MM_CHUNK_IMAGE) {
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "image.%d.embd", k);
        const oxl_mm_tile *tile = &c->tiles.tiles[ch->tile];
        const float *want = f32_tensor(c, name, n_embd, tile->n_tokens, err);
        const int64_t n = (int64_t)n_embd * tile->n_tokens;
        float *ours = want ? malloc((size_t)n * sizeof(float)) : NULL;
        if (!ours) {
            return want ? oxl_err_set(err, "out of memory") : -1;
        }
        c->embd[k++] = ours;
        if (oxl_clip_encode(c->clip, tile, ours, c->ctx->pool, err) != 0) {
            return -1;
        }
        double worst = 0.0, big = 0.0;
        for (int64_t j = 0; j < n; j++) {
            const double d = fabs((double)ours[j] - (double)want[j]);
            worst = d > worst || isnan(d) ? d : worst;
            big = fabs((double)want[j]) > big ? fabs((double)want[j]) : big;
        }
        oxl_golden_line(r, worst <= 1e-4 * big, "mm %s  %d x %d, max |d| %.3g = %.3g of max |ref| %.3g (bound 1e-4)",
                        name, (int)n_embd, (int)tile->n_tokens, worst, big > 0 ? worst / big : worst, big);
    }
    return 0;
}

static int32_t argmax(const float *v, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++) {
        best = v[i] > v[best] ? i : best;
    }
    return best;
}

/* Decodes text tokens into sequence 0 with every row's logits kept. */
static int decode_tokens(oxl_ctx *ctx, const oxl_token *tok, int32_t n, oxl_error *err) {
    return oxl_decode(ctx, tok, n, true, err);
}

/* logits and greedy: the whole chain (our tokens, our embeddings) decoded chunk by chunk as the
 * reference (each chunk one decode, every row's logits), the argmax of every row equal to
 * llama.cpp's, then the 8 greedy tokens fed back one at a time. The largest logit difference is
 * reported (the README bounds it near 2e-3 with llama.cpp's numerics). */
static int check_logits(const mm_case *c, oxl_golden_report *r, oxl_error *err) {
    const oxl_mm_chunks *chs = &c->chunks;
    const int32_t n_vocab = oxl_model_n_vocab(c->model);
    int64_t n_greedy = 0;
    if (oxl_gguf_get_int(c->g, "golden.n_greedy", &n_greedy, err) != 1 || n_greedy < 1 || n_greedy > 64) {
        return oxl_err_set(err, "%s: golden.n_greedy must be an integer in 1..64", c->path);
    }
    const float *want = f32_tensor(c, "logits", n_vocab, chs->n_tokens, err);
    const float *want_g = want ? f32_tensor(c, "greedy_logits", n_vocab, n_greedy, err) : NULL;
    const oxl_gguf_tensor *tg = want_g ? tensor(c->g, "greedy", OXL_TYPE_I32, n_greedy, 0, err) : NULL;
    if (!tg) {
        return -1;
    }
    double worst = 0.0;
    int64_t bad_rows = 0, first_bad = -1;
    int32_t row = 0, k = 0;
    for (int32_t i = 0; i < chs->n; i++) {
        const oxl_mm_chunk *ch = &chs->chunks[i];
        int rc;
        if (ch->type == OXL_MM_CHUNK_TEXT) {
            rc = decode_tokens(c->ctx, ch->tokens, ch->n_tokens, err);
        } else {
            /* the projector decides the attention, as mtmd_helper_decode_image_chunk */
            rc = oxl_decode_image_embd_attn(c->ctx, 0, c->embd[k++], ch->n_tokens, ch->grid_x, ch->grid_y, true,
                                            oxl_mm_non_causal(c->params.projector), err);
        }
        if (rc != 0) {
            return -1;
        }
        for (int32_t j = 0; j < ch->n_tokens; j++, row++) {
            const float *got = oxl_get_logits(c->ctx, j), *w = want + (size_t)row * n_vocab;
            if (!got) {
                return oxl_err_set(err, "%s: no logits for row %d", c->path, (int)row);
            }
            for (int32_t v = 0; v < n_vocab; v++) {
                const double d = fabs((double)got[v] - (double)w[v]);
                worst = d > worst || isnan(d) ? d : worst;
            }
            if (argmax(got, n_vocab) != argmax(w, n_vocab)) {
                first_bad = first_bad < 0 ? row : first_bad;
                bad_rows++;
            }
        }
    }
    oxl_golden_line(r, bad_rows == 0, "mm logits argmax  %lld/%d rows equal%s; max |d| %.3g",
                    (long long)(row - bad_rows), (int)row, bad_rows ? " (first difference at a later row)" : "", worst);
    if (first_bad >= 0) {
        oxl_golden_line(r, false, "mm logits argmax  first different row %lld", (long long)first_bad);
    }
    oxl_token tok = (oxl_token)argmax(oxl_get_logits(c->ctx, -1), n_vocab);
    int64_t same = 0;
    double worst_g = 0.0;
    for (int64_t s = 0; s < n_greedy; s++) {
        if (tok != i32_at(tg, s)) {
            break;
        }
        same++;
        if (s + 1 == n_greedy) {
            break;
        }
        if (decode_tokens(c->ctx, &tok, 1, err) != 0) {
            return -1;
        }
        const float *got = oxl_get_logits(c->ctx, -1), *w = want_g + (size_t)s * n_vocab;
        for (int32_t v = 0; v < n_vocab; v++) {
            const double d = fabs((double)got[v] - (double)w[v]);
            worst_g = d > worst_g || isnan(d) ? d : worst_g;
        }
        tok = (oxl_token)argmax(got, n_vocab);
    }
    oxl_golden_line(r, same == n_greedy, "mm greedy  %lld/%lld tokens equal; greedy logits max |d| %.3g",
                    (long long)same, (long long)n_greedy, worst_g);
    return 0;
}

/* The checks, in the order llama.cpp computes what they compare. */
static const struct {
    int (*run)(const mm_case *c, oxl_golden_report *r, oxl_error *err);
} checks[] = {{check_chunks}, {check_sequence}, {check_pixels}, {check_embd}, {check_logits}};

int oxl_golden_mm(const oxl_gguf *g, const char *text_model_path, oxl_golden_report *r, oxl_error *err) {
    mm_case c = {.g = g, .path = oxl_gguf_path(g)};
    int rc = load_case(&c, text_model_path, err);
    if (rc == 0) {
        oxl_ctx_params cp = oxl_ctx_default_params();
        cp.n_ctx = c.chunks.n_tokens + 64;
        cp.n_batch = cp.n_ctx; /* as the reference: n_batch = n_ubatch = n_ctx */
        cp.type_k = cp.type_v = OXL_KV_F32;
        cp.flash_attn = OXL_FLASH_ATTN_OFF;
        c.ctx = oxl_ctx_new(c.model, &cp, err);
        c.embd = calloc((size_t)c.chunks.n + 1, sizeof *c.embd);
        if (!c.ctx || !c.embd) {
            rc = c.ctx ? oxl_err_set(err, "out of memory") : -1;
        }
    }
    for (size_t i = 0; rc == 0 && i < sizeof checks / sizeof checks[0]; i++) {
        rc = checks[i].run(&c, r, err);
    }
    for (int32_t i = 0; c.embd && i < c.chunks.n; i++) {
        free(c.embd[i]);
    }
    free(c.embd);
    oxl_ctx_free(c.ctx);
    oxl_clip_free(c.clip);
    oxl_mm_chunks_free(&c.chunks);
    oxl_mm_tiles_free(&c.tiles);
    oxl_image_free(c.image);
    oxl_model_free(c.model);
    oxl_gguf_close(c.mmproj);
    return rc;
}
