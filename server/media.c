/* Images of chat requests (media.h). */
#include "media.h"

#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x100000001b3ULL;
    }
    return h;
}

int oxl_media_add_url(oxl_media *m, const char *url, const char *where, oxl_api_error *e) {
    if (!strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8)) {
        return BAD(e, where,
                   "'%s': remote image URLs are not fetched (the server makes no network requests); send the image "
                   "as a data: URI (data:image/png;base64,...)",
                   where);
    }
    const char *comma = strchr(url, ',');
    if (strncasecmp(url, "data:", 5) || !comma || comma - url < 12 || strncasecmp(comma - 7, ";base64", 7)) {
        return BAD(e, where, "'%s': expected a data: URI with base64 image bytes (data:image/png;base64,...)", where);
    }
    if (m->n >= OXL_SRV_MAX_IMAGES) {
        return BAD(e, where, "'%s': more than %d images in one request", where, OXL_SRV_MAX_IMAGES);
    }
    const char *b64 = comma + 1;
    size_t len = strlen(b64);
    uint8_t *bytes = malloc(BASE64_DECODE_LENGTH(len) + 1);
    if (!bytes) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    struct base64_decode_ctx bc;
    base64_decode_init(&bc);
    size_t n = BASE64_DECODE_LENGTH(len);
    if (!base64_decode_update(&bc, &n, bytes, len, b64) || !base64_decode_final(&bc)) {
        free(bytes);
        return BAD(e, where, "'%s': the data: URI's base64 does not decode", where);
    }
    oxl_error err = {0};
    oxl_image *img = oxl_image_load(bytes, n, &err);
    uint64_t h = fnv1a(bytes, n);
    free(bytes);
    if (!img) {
        return BAD(e, where, "'%s': the image does not decode: %s", where, err.msg);
    }
    m->img[m->n] = img;
    m->hash[m->n++] = h;
    return 0;
}

/* Appends the tokens of text[0, len) to *out (growing it); add_special: BOS as the vocabulary asks. */
static int tok_append(const oxl_model *model, const char *text, size_t len, bool add_special, oxl_token **out,
                      int32_t *n, int32_t *cap) {
    int32_t need = oxl_tokenize(model, text, len, NULL, 0, add_special, true);
    if (need == INT32_MIN) {
        return -1;
    }
    need = need < 0 ? -need : need;
    if (*n + need > *cap) {
        int32_t c = (*n + need) * 2 + 16;
        oxl_token *t = realloc(*out, sizeof(oxl_token) * (size_t)c);
        if (!t) {
            return -1;
        }
        *out = t;
        *cap = c;
    }
    if (oxl_tokenize(model, text, len, *out + *n, need, add_special, true) != need) {
        return -1;
    }
    *n += need;
    return 0;
}

int oxl_media_tokenize(oxl_srv *srv, const char *text, oxl_media *m, oxl_token **out, int32_t *n, const char *param,
                       oxl_api_error *e) {
    *out = NULL;
    *n = 0;
    int32_t cap = 0, k = 0;
    const size_t ml = strlen(OXL_MEDIA_MARKER);
    const char *p = text;
    for (;;) {
        const char *q = strstr(p, OXL_MEDIA_MARKER);
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if ((len > 0 || p == text) && tok_append(srv->model, p, len, p == text, out, n, &cap) != 0) {
            return BAD(e, param, "'%s': cannot be tokenized", param);
        }
        if (!q) {
            break;
        }
        if (k >= m->n) {
            return BAD(e, param, "'%s': the prompt has more %s markers than images (%d)", param, OXL_MEDIA_MARKER,
                       m->n);
        }
        /* the projector's text around the image, as mtmd_tokenize adds it (special tokens parsed) */
        const char *img_beg, *img_end;
        oxl_mmproj_image_text(srv->mmproj, &img_beg, &img_end);
        if (img_beg[0] && tok_append(srv->model, img_beg, strlen(img_beg), false, out, n, &cap) != 0) {
            return BAD(e, param, "'%s': cannot be tokenized", param);
        }
        oxl_error err = {0};
        pthread_mutex_lock(&srv->mm_mu);
        m->embd[k] = oxl_image_encode(srv->mm_ctx, srv->mmproj, m->img[k], &err);
        pthread_mutex_unlock(&srv->mm_mu);
        if (!m->embd[k]) {
            return BAD(e, param, "'%s': image %d cannot be encoded: %s", param, k, err.msg);
        }
        int32_t nt = oxl_image_embd_n_tokens(m->embd[k]);
        if (oxl_image_embd_n_pos(m->embd[k]) != nt) {
            return BAD(e, param, "'%s': the %s projector's images (M-RoPE positions) are not served yet", param,
                       oxl_mmproj_projector(srv->mmproj));
        }
        if (*n + nt > cap) {
            int32_t c = (*n + nt) * 2 + 16;
            oxl_token *t = realloc(*out, sizeof(oxl_token) * (size_t)c);
            if (!t) {
                return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
            }
            *out = t;
            cap = c;
        }
        /* one negative id per image content: equal images give equal rows, so a later prompt with
         * the same image reuses the cache through it */
        const oxl_token id = -(oxl_token)(m->hash[k] % 0x3fffffffULL) - 1;
        m->at[k] = *n;
        for (int32_t t = 0; t < nt; t++) {
            (*out)[(*n)++] = id;
        }
        if (img_end[0] && tok_append(srv->model, img_end, strlen(img_end), false, out, n, &cap) != 0) {
            return BAD(e, param, "'%s': cannot be tokenized", param);
        }
        k++;
        p = q + ml;
    }
    if (k != m->n) {
        return BAD(e, param, "'%s': %d images but %d %s markers in the prompt", param, m->n, k, OXL_MEDIA_MARKER);
    }
    if (*n > 0 && (*out)[*n - 1] < 0) {
        return BAD(e, param, "'%s': the prompt ends with an image; text must follow it", param);
    }
    return 0;
}

void oxl_media_give(oxl_media *m, oxl_job *job) {
    for (int32_t i = 0; i < m->n && m->embd[i]; i++) {
        job->img[job->n_img] = m->embd[i];
        job->img_at[job->n_img++] = m->at[i];
        m->embd[i] = NULL;
    }
}

void oxl_media_free(oxl_media *m) {
    for (int32_t i = 0; i < m->n; i++) {
        oxl_image_free(m->img[i]);
        oxl_image_embd_free(m->embd[i]);
        m->img[i] = NULL;
        m->embd[i] = NULL;
    }
    m->n = 0;
}
