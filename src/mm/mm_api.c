/* The public vision API of include/oxillama.h: an mmproj bound to a text model, images encoded into
 * their tiles' embeddings and decoded into a sequence, and whole prompts with media markers, as
 * llama.cpp's libmtmd (tools/mtmd/mtmd.cpp: mtmd_init_from_file, mtmd_tokenize, mtmd_encode_chunk;
 * tools/mtmd/mtmd-helper.cpp: mtmd_helper_eval_chunks) runs them. */
#include "clip.h"
#include "context.h"
#include "errors.h"
#include "image.h"
#include "mm_chunks.h"
#include "mm_params.h"
#include "mm_preprocess.h"

#include <stdlib.h>
#include <string.h>

struct oxl_mmproj {
    oxl_clip *clip;
    oxl_mm_params params;
    const oxl_model *model;
    char *path;
};

/* One encoded image: per tile its embeddings (n_embd, n_tokens) and grid, in mtmd's chunk order. */
typedef struct mm_tile_embd {
    float *embd;
    int32_t n_tokens, grid_x, grid_y, n_pos;
} mm_tile_embd;

struct oxl_image_embd {
    mm_tile_embd *tiles;
    int32_t n_tiles;
    int32_t n_embd;
    bool mrope;
    bool non_causal; /* the projector's images decode with causal attention off */
};

oxl_mmproj *oxl_mmproj_load(const char *path, const oxl_model *model, oxl_error *err) {
    return oxl_mmproj_load_params(path, model, NULL, err);
}

oxl_mmproj *oxl_mmproj_load_params(const char *path, const oxl_model *model, const oxl_mmproj_params *params,
                                   oxl_error *err) {
    if (!path || !model) {
        oxl_err_set(err, "mmproj: no %s", path ? "text model" : "file");
        return NULL;
    }
    oxl_mmproj *mm = calloc(1, sizeof *mm);
    oxl_gguf *g = mm ? oxl_gguf_open(path, err) : NULL;
    if (!mm || !g) {
        if (!mm) {
            oxl_err_set(err, "mmproj: out of memory");
        }
        free(mm);
        return NULL;
    }
    const oxl_mm_limits limits = {params ? params->image_min_tokens : 0, params ? params->image_max_tokens : 0};
    if (oxl_mm_params_read(g, &limits, &mm->params, err) != 0) {
        oxl_gguf_close(g);
        free(mm);
        return NULL;
    }
    mm->clip = oxl_clip_load_gguf(g, err); /* takes g over */
    if (!mm->clip) {
        free(mm);
        return NULL;
    }
    const int32_t n_out = oxl_clip_n_embd_out(mm->clip), n_embd = oxl_model_n_embd(model);
    if (n_out != n_embd) {
        oxl_err_set(err, "%s: the projector makes embeddings of %d values, the text model takes %d (n_embd)", path,
                    (int)n_out, (int)n_embd);
        oxl_mmproj_free(mm);
        return NULL;
    }
    if (oxl_clip_patch_size(mm->clip) != mm->params.patch_size) {
        oxl_err_set(err, "%s: patch size %d of the tower differs from clip.vision.patch_size %d", path,
                    (int)oxl_clip_patch_size(mm->clip), (int)mm->params.patch_size);
        oxl_mmproj_free(mm);
        return NULL;
    }
    mm->model = model;
    mm->path = strdup(path);
    return mm;
}

void oxl_mmproj_free(oxl_mmproj *mm) {
    if (mm) {
        oxl_clip_free(mm->clip);
        free(mm->path);
        free(mm);
    }
}

const char *oxl_mmproj_projector(const oxl_mmproj *mm) { return mm ? mm->params.projector_name : NULL; }

void oxl_mmproj_image_text(const oxl_mmproj *mm, const char **begin, const char **end) {
    const char *b = "", *e = "";
    if (mm) {
        oxl_mm_image_text(mm->params.projector, &b, &e);
    }
    if (begin) {
        *begin = b;
    }
    if (end) {
        *end = e;
    }
}

void oxl_image_embd_free(oxl_image_embd *e) {
    if (e) {
        for (int32_t i = 0; i < e->n_tiles; i++) {
            free(e->tiles[i].embd);
        }
        free(e->tiles);
        free(e);
    }
}

/* Encodes the tiles of one preprocessed image with ctx's threads. */
static oxl_image_embd *encode_tiles(oxl_ctx *ctx, const oxl_mmproj *mm, const oxl_mm_tiles *tiles, oxl_error *err) {
    oxl_image_embd *e = calloc(1, sizeof *e);
    if (!e || !(e->tiles = calloc((size_t)tiles->n, sizeof *e->tiles))) {
        free(e);
        oxl_err_set(err, "image: out of memory");
        return NULL;
    }
    e->n_tiles = tiles->n;
    e->n_embd = oxl_clip_n_embd_out(mm->clip);
    e->mrope = mm->params.projector == OXL_MM_PROJ_QWEN2VL || mm->params.projector == OXL_MM_PROJ_QWEN25VL;
    e->non_causal = oxl_mm_non_causal(mm->params.projector);
    for (int32_t i = 0; i < tiles->n; i++) {
        const oxl_mm_tile *t = &tiles->tiles[i];
        mm_tile_embd *o = &e->tiles[i];
        o->n_tokens = t->n_tokens;
        o->grid_x = t->grid_x;
        o->grid_y = t->grid_y;
        o->n_pos = e->mrope ? (t->grid_x > t->grid_y ? t->grid_x : t->grid_y) : t->n_tokens;
        o->embd = malloc((size_t)e->n_embd * (size_t)t->n_tokens * sizeof(float));
        if (!o->embd) {
            oxl_image_embd_free(e);
            oxl_err_set(err, "image: out of memory for %d embeddings", (int)t->n_tokens);
            return NULL;
        }
        if (oxl_clip_encode(mm->clip, t, o->embd, ctx->pool, err) != 0) {
            oxl_image_embd_free(e);
            return NULL;
        }
    }
    return e;
}

oxl_image_embd *oxl_image_encode(oxl_ctx *ctx, const oxl_mmproj *mm, const oxl_image *image, oxl_error *err) {
    if (!ctx || !mm || !image) {
        oxl_err_set(err, "image encode: no %s", !ctx ? "context" : !mm ? "mmproj" : "image");
        return NULL;
    }
    if (ctx->model != mm->model) {
        oxl_err_set(err, "image encode: the mmproj was loaded for another model than the context's");
        return NULL;
    }
    oxl_mm_tiles tiles = {0};
    if (oxl_mm_preprocess(&mm->params, image, &tiles, err) != 0) {
        return NULL;
    }
    oxl_image_embd *e = encode_tiles(ctx, mm, &tiles, err);
    oxl_mm_tiles_free(&tiles);
    return e;
}

int32_t oxl_image_embd_n_tokens(const oxl_image_embd *e) {
    int32_t n = 0;
    for (int32_t i = 0; e && i < e->n_tiles; i++) {
        n += e->tiles[i].n_tokens;
    }
    return n;
}

int32_t oxl_image_embd_n_pos(const oxl_image_embd *e) {
    int32_t n = 0;
    for (int32_t i = 0; e && i < e->n_tiles; i++) {
        n += e->tiles[i].n_pos;
    }
    return n;
}

int32_t oxl_image_embd_n_tiles(const oxl_image_embd *e) { return e ? e->n_tiles : 0; }

const float *oxl_image_embd_tile(const oxl_image_embd *e, int32_t tile, int32_t *n_tokens, int32_t *grid_x,
                                 int32_t *grid_y) {
    if (!e || tile < 0 || tile >= e->n_tiles) {
        return NULL;
    }
    const mm_tile_embd *t = &e->tiles[tile];
    if (n_tokens) {
        *n_tokens = t->n_tokens;
    }
    if (grid_x) {
        *grid_x = t->grid_x;
    }
    if (grid_y) {
        *grid_y = t->grid_y;
    }
    return t->embd;
}

int oxl_image_embd_decode(oxl_ctx *ctx, int32_t seq, const oxl_image_embd *e, oxl_error *err) {
    if (!ctx || !e) {
        return oxl_err_set(err, "image decode: no %s", ctx ? "embeddings" : "context");
    }
    if (e->n_embd != ctx->model->hp.n_embd) {
        return oxl_err_set(err, "image decode: embeddings of %d values, the model takes %d", (int)e->n_embd,
                           (int)ctx->model->hp.n_embd);
    }
    const int32_t need = oxl_image_embd_n_tokens(e);
    if (seq < 0 || seq >= ctx->n_seq_max) {
        return oxl_err_set(err, "image decode: sequence %d out of range", (int)seq);
    }
    if (need > ctx->n_ctx - ctx->n_past[seq]) {
        return oxl_err_set(err, "image decode: %d image tokens do not fit: sequence %d holds %d of %d", (int)need,
                           (int)seq, (int)ctx->n_past[seq], (int)ctx->n_ctx);
    }
    for (int32_t i = 0; i < e->n_tiles; i++) {
        const mm_tile_embd *t = &e->tiles[i];
        if (oxl_decode_image_embd_attn(ctx, seq, t->embd, t->n_tokens, t->grid_x, t->grid_y, false, e->non_causal,
                                       err) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Decodes a text chunk into seq at its next rows, keeping the last token's logits. */
static int decode_text(oxl_ctx *ctx, int32_t seq, const oxl_token *tok, int32_t n, oxl_error *err) {
    int32_t *pos = malloc((size_t)n * 2 * sizeof(int32_t));
    int8_t *keep = calloc((size_t)n, 1);
    if (!pos || !keep) {
        free(pos);
        free(keep);
        return oxl_err_set(err, "out of memory");
    }
    const int32_t p0 = oxl_seq_n_past(ctx, seq);
    for (int32_t i = 0; i < n; i++) {
        pos[i] = p0 + i;
        pos[n + i] = seq;
    }
    keep[n - 1] = 1;
    const oxl_batch b = {.n_tokens = n, .token = tok, .pos = pos, .seq_id = pos + n, .logits = keep};
    const int rc = oxl_decode_batch(ctx, &b, err);
    free(pos);
    free(keep);
    return rc;
}

int oxl_mm_eval(oxl_ctx *ctx, const oxl_mmproj *mm, int32_t seq, const char *prompt, const oxl_image *const *images,
                int32_t n_images, bool add_special, oxl_error *err) {
    if (!ctx || !mm || !prompt || (n_images > 0 && !images) || n_images < 0) {
        return oxl_err_set(err, "mm eval: no %s", !ctx ? "context" : !mm ? "mmproj" : !prompt ? "prompt" : "images");
    }
    if (ctx->model != mm->model) {
        return oxl_err_set(err, "mm eval: the mmproj was loaded for another model than the context's");
    }
    oxl_mm_tiles *tiles = calloc((size_t)(n_images > 0 ? n_images : 1), sizeof *tiles);
    if (!tiles) {
        return oxl_err_set(err, "out of memory");
    }
    int rc = 0;
    for (int32_t i = 0; rc == 0 && i < n_images; i++) {
        rc = oxl_mm_preprocess(&mm->params, images[i], &tiles[i], err);
        if (rc != 0) {
            oxl_err_prefix(err, "image %d", (int)i);
        }
    }
    oxl_mm_chunks chunks = {0};
    const oxl_mm_prompt opt = {.marker = NULL, .images_first = true, .add_special = add_special, .parse_special = true};
    if (rc == 0) {
        rc = oxl_mm_tokenize(mm->model, &mm->params, prompt, strlen(prompt), tiles, n_images, &opt, &chunks, err);
    }
    if (rc == 0 && chunks.n_tokens > ctx->n_ctx - oxl_seq_n_past(ctx, seq)) {
        rc = oxl_err_set(err, "the prompt takes %d positions (images included), the context has room for %d",
                         (int)chunks.n_tokens, (int)(ctx->n_ctx - oxl_seq_n_past(ctx, seq)));
    }
    for (int32_t i = 0; rc == 0 && i < chunks.n; i++) {
        const oxl_mm_chunk *ch = &chunks.chunks[i];
        if (ch->type == OXL_MM_CHUNK_TEXT) {
            rc = decode_text(ctx, seq, ch->tokens, ch->n_tokens, err);
            continue;
        }
        const oxl_mm_tile *t = &tiles[ch->image].tiles[ch->tile];
        float *embd = malloc((size_t)oxl_clip_n_embd_out(mm->clip) * (size_t)t->n_tokens * sizeof(float));
        if (!embd) {
            rc = oxl_err_set(err, "out of memory");
            break;
        }
        rc = oxl_clip_encode(mm->clip, t, embd, ctx->pool, err);
        if (rc == 0) {
            rc = oxl_decode_image_embd_attn(ctx, seq, embd, t->n_tokens, t->grid_x, t->grid_y, false,
                                            oxl_mm_non_causal(mm->params.projector), err);
        }
        free(embd);
    }
    oxl_mm_chunks_free(&chunks);
    for (int32_t i = 0; i < n_images; i++) {
        oxl_mm_tiles_free(&tiles[i]);
    }
    free(tiles);
    return rc;
}
