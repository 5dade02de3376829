/* Prompt chunks and their positions (mm_chunks.h), as llama.cpp tools/mtmd/mtmd.cpp
 * (mtmd_tokenizer, mtmd_image_tokens_get_decoder_pos). */
#include "mm_chunks.h"

#include "errors.h"

#include <stdlib.h>
#include <string.h>

/* A new zeroed chunk at the end. */
static oxl_mm_chunk *new_chunk(oxl_mm_chunks *c, int32_t *cap, oxl_error *err) {
    if (c->n == *cap) {
        const int32_t ncap = *cap ? 2 * *cap : 8;
        oxl_mm_chunk *nc = realloc(c->chunks, sizeof *nc * (size_t)ncap);
        if (!nc) {
            oxl_err_set(err, "out of memory for %d prompt chunks", ncap);
            return NULL;
        }
        c->chunks = nc;
        *cap = ncap;
    }
    oxl_mm_chunk *ch = &c->chunks[c->n++];
    memset(ch, 0, sizeof *ch);
    return ch;
}

/* Appends n tokens as text: to the last chunk when it is text, else as a new chunk (add_text). */
static int add_tokens(oxl_mm_chunks *c, int32_t *cap, const oxl_token *tok, int32_t n, oxl_error *err) {
    if (n == 0) {
        return 0;
    }
    oxl_mm_chunk *last = c->n > 0 ? &c->chunks[c->n - 1] : NULL;
    if (!last || last->type != OXL_MM_CHUNK_TEXT) {
        if (!(last = new_chunk(c, cap, err))) {
            return -1;
        }
        last->type = OXL_MM_CHUNK_TEXT;
    }
    if (n > INT32_MAX - last->n_tokens) {
        return oxl_err_set(err, "a text chunk longer than %d tokens", INT32_MAX);
    }
    oxl_token *nt = realloc(last->tokens, sizeof *nt * (size_t)(last->n_tokens + n));
    if (!nt) {
        return oxl_err_set(err, "out of memory for %d tokens", last->n_tokens + n);
    }
    memcpy(nt + last->n_tokens, tok, sizeof *nt * (size_t)n);
    last->tokens = nt;
    last->n_tokens += n;
    return 0;
}

/* Tokenizes one text part alone (add_special false) and appends it. */
static int add_text(const oxl_model *model, oxl_mm_chunks *c, int32_t *cap, const char *s, size_t len,
                    bool parse_special, oxl_error *err) {
    if (len == 0) {
        return 0;
    }
    if (len > (size_t)INT32_MAX / 2) {
        return oxl_err_set(err, "a text part of %zu bytes is too long to tokenize", len);
    }
    int32_t n = oxl_tokenize(model, s, len, NULL, 0, false, parse_special);
    if (n == INT32_MIN) {
        return oxl_err_set(err, "the tokenizer refused a text part of %zu bytes", len);
    }
    n = n < 0 ? -n : n;
    oxl_token *tok = malloc(sizeof *tok * (size_t)(n ? n : 1));
    if (!tok) {
        return oxl_err_set(err, "out of memory for %d tokens", n);
    }
    const int32_t got = oxl_tokenize(model, s, len, tok, n, false, parse_special);
    const int rc =
        got != n ? oxl_err_set(err, "the tokenizer gave %d tokens, then %d", n, got) : add_tokens(c, cap, tok, n, err);
    free(tok);
    return rc;
}

void oxl_mm_image_frame(const oxl_mm_params *p, const char **beg, const char **end) {
    const bool qwen = p->projector == OXL_MM_PROJ_QWEN2VL || p->projector == OXL_MM_PROJ_QWEN25VL;
    *beg = qwen ? "<|vision_start|>" : "";
    *end = qwen ? "<|vision_end|>" : "";
}

/* The image's chunks, framed by the projector's begin / end text (init_vision: img_beg, img_end). */
static int add_image(const oxl_model *model, oxl_mm_chunks *c, int32_t *cap, const oxl_mm_tiles *img, int32_t index,
                     const char *beg, const char *end, bool parse_special, oxl_error *err) {
    if (add_text(model, c, cap, beg, strlen(beg), parse_special, err) != 0) {
        return -1;
    }
    for (int32_t t = 0; t < img->n; t++) {
        const oxl_mm_tile *tile = &img->tiles[t];
        oxl_mm_chunk *ch = new_chunk(c, cap, err);
        if (!ch) {
            return -1;
        }
        ch->type = OXL_MM_CHUNK_IMAGE;
        ch->image = index;
        ch->tile = t;
        ch->n_tokens = tile->n_tokens;
        ch->grid_x = tile->grid_x;
        ch->grid_y = tile->grid_y;
    }
    return add_text(model, c, cap, end, strlen(end), parse_special, err);
}

static const char *find(const char *s, size_t len, const char *m, size_t mlen) {
    for (size_t i = 0; mlen > 0 && i + mlen <= len; i++) {
        if (s[i] == m[0] && !memcmp(s + i, m, mlen)) {
            return s + i;
        }
    }
    return NULL;
}

/* The chunks of text, one image per marker (mtmd_tokenizer::tokenize). */
static int split(const oxl_model *model, const oxl_mm_params *p, const char *text, size_t len, const char *marker,
                 const oxl_mm_tiles *images, int32_t n_images, const oxl_mm_prompt *opt, oxl_mm_chunks *c, int32_t *cap,
                 oxl_error *err) {
    const size_t mlen = strlen(marker);
    const char *beg, *end;
    oxl_mm_image_frame(p, &beg, &end);
    int32_t used = 0;
    for (size_t start = 0; start < len;) {
        const char *m = find(text + start, len - start, marker, mlen);
        const size_t part = m ? (size_t)(m - (text + start)) : len - start;
        if (add_text(model, c, cap, text + start, part, opt->parse_special, err) != 0) {
            return -1;
        }
        if (!m) {
            break;
        }
        if (used == n_images) {
            return oxl_err_set(err, "the prompt has more image markers '%s' than the %d image%s given", marker,
                               n_images, n_images == 1 ? "" : "s");
        }
        if (add_image(model, c, cap, &images[used], used, beg, end, opt->parse_special, err) != 0) {
            return -1;
        }
        used++;
        start += part + mlen;
    }
    if (used != n_images) {
        return oxl_err_set(err, "the prompt has %d image marker%s '%s' but %d image%s given", used,
                           used == 1 ? "" : "s", marker, n_images, n_images == 1 ? " was" : "s were");
    }
    if (opt->add_special && oxl_vocab_add_bos(model)) {
        const oxl_token bos = oxl_token_bos(model);
        if (c->n > 0 && c->chunks[0].type == OXL_MM_CHUNK_TEXT) {
            oxl_mm_chunk *first = &c->chunks[0];
            oxl_token *nt = realloc(first->tokens, sizeof *nt * (size_t)(first->n_tokens + 1));
            if (!nt) {
                return oxl_err_set(err, "out of memory");
            }
            memmove(nt + 1, nt, sizeof *nt * (size_t)first->n_tokens);
            nt[0] = bos;
            first->tokens = nt;
            first->n_tokens++;
        } else {
            /* a new one-token text chunk in front */
            oxl_mm_chunk *b = new_chunk(c, cap, err);
            oxl_token *one = b ? malloc(sizeof *one) : NULL;
            if (!one) {
                return b ? oxl_err_set(err, "out of memory") : -1;
            }
            *one = bos;
            const oxl_mm_chunk chunk = {.type = OXL_MM_CHUNK_TEXT, .tokens = one, .n_tokens = 1};
            memmove(c->chunks + 1, c->chunks, sizeof *c->chunks * (size_t)(c->n - 1));
            c->chunks[0] = chunk;
        }
    }
    if (opt->add_special && oxl_vocab_add_eos(model)) {
        const oxl_token eos = oxl_token_eos(model);
        if (add_tokens(c, cap, &eos, 1, err) != 0) {
            return -1;
        }
    }
    return 0;
}

int oxl_mm_tokenize(const oxl_model *model, const oxl_mm_params *p, const char *text, size_t len,
                    const oxl_mm_tiles *images, int32_t n_images, const oxl_mm_prompt *opt, oxl_mm_chunks *out,
                    oxl_error *err) {
    static const oxl_mm_prompt defaults = {NULL, false, true, true};
    opt = opt ? opt : &defaults;
    const char *marker = opt->marker && opt->marker[0] ? opt->marker : OXL_MM_DEFAULT_MARKER;
    memset(out, 0, sizeof *out);
    out->mrope = p->projector == OXL_MM_PROJ_QWEN2VL || p->projector == OXL_MM_PROJ_QWEN25VL;
    if (n_images < 0 || (n_images > 0 && !images)) {
        return oxl_err_set(err, "%d images given without their tiles", n_images);
    }
    /* llama-mtmd-cli: a prompt without a marker gets one per image in front */
    char *owned = NULL;
    const size_t mlen = strlen(marker);
    if (opt->images_first && n_images > 0 && !find(text, len, marker, mlen)) {
        owned = malloc(mlen * (size_t)n_images + len + 1);
        if (!owned) {
            return oxl_err_set(err, "out of memory");
        }
        for (int32_t i = 0; i < n_images; i++) {
            memcpy(owned + mlen * (size_t)i, marker, mlen);
        }
        memcpy(owned + mlen * (size_t)n_images, text, len);
        len += mlen * (size_t)n_images;
        text = owned;
    }
    int32_t cap = 0;
    int rc = split(model, p, text, len, marker, images, n_images, opt, out, &cap, err);
    free(owned);
    /* positions: each chunk starts where the ones before it end */
    int64_t n_tokens = 0, n_pos = 0;
    for (int32_t i = 0; rc == 0 && i < out->n; i++) {
        oxl_mm_chunk *ch = &out->chunks[i];
        const bool mrope_image = out->mrope && ch->type == OXL_MM_CHUNK_IMAGE;
        ch->n_pos = mrope_image ? (ch->grid_x > ch->grid_y ? ch->grid_x : ch->grid_y) : ch->n_tokens;
        ch->pos0 = (int32_t)n_pos;
        n_tokens += ch->n_tokens;
        n_pos += ch->n_pos;
        if (n_tokens > INT32_MAX || n_pos > INT32_MAX) {
            rc = oxl_err_set(err, "the prompt is longer than %d tokens", INT32_MAX);
        }
    }
    if (rc != 0) {
        oxl_mm_chunks_free(out);
        return -1;
    }
    out->n_tokens = (int32_t)n_tokens;
    out->n_pos = (int32_t)n_pos;
    return 0;
}

void oxl_mm_chunks_sequence(const oxl_mm_chunks *c, int32_t *tokens, int32_t *token_chunk, int32_t *pos) {
    const size_t n = (size_t)c->n_tokens;
    size_t j = 0;
    for (int32_t k = 0; k < c->n; k++) {
        const oxl_mm_chunk *ch = &c->chunks[k];
        for (int32_t i = 0; i < ch->n_tokens; i++, j++) {
            const bool text = ch->type == OXL_MM_CHUNK_TEXT;
            if (tokens) {
                tokens[j] = text ? ch->tokens[i] : -1;
            }
            if (token_chunk) {
                token_chunk[j] = k;
            }
            if (pos && !c->mrope) {
                pos[j] = ch->pos0 + i;
            } else if (pos) {
                const int32_t gw = ch->grid_x > 0 ? ch->grid_x : 1;
                pos[j] = text ? ch->pos0 + i : ch->pos0;
                pos[n + j] = text ? ch->pos0 + i : ch->pos0 + i / gw;
                pos[2 * n + j] = text ? ch->pos0 + i : ch->pos0 + i % gw;
                pos[3 * n + j] = 0;
            }
        }
    }
}

void oxl_mm_chunks_free(oxl_mm_chunks *c) {
    if (c) {
        for (int32_t i = 0; i < c->n; i++) {
            free(c->chunks[i].tokens);
        }
        free(c->chunks);
        memset(c, 0, sizeof *c);
    }
}
