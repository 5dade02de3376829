/* Images of chat requests (media.h). */
#include "media.h"

#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int oxl_media_add_bytes(oxl_media *m, const uint8_t *bytes, size_t n, const char *where, oxl_api_error *e) {
    if (m->n >= OXL_SRV_MAX_IMAGES) {
        return BAD(e, where, "'%s': more than %d images in one request", where, OXL_SRV_MAX_IMAGES);
    }
    oxl_error err = {0};
    oxl_image *img = oxl_image_load(bytes, n, &err);
    if (!img) {
        return BAD(e, where, "'%s': the image does not decode: %s", where, err.msg);
    }
    oxl_img_key *k = &m->key[m->n];
    struct sha256_ctx sc;
    sha256_init(&sc);
    sha256_update(&sc, n, bytes);
    sha256_digest(&sc, sizeof k->sha256, k->sha256);
    k->n_bytes = n;
    m->img[m->n++] = img;
    return 0;
}

int oxl_media_add_base64(oxl_media *m, const char *b64, const char *where, oxl_api_error *e) {
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
        return BAD(e, where, "'%s': the base64 image data does not decode", where);
    }
    int rc = oxl_media_add_bytes(m, bytes, n, where, e);
    free(bytes);
    return rc;
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
    return oxl_media_add_base64(m, comma + 1, where, e);
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
        if (*n + nt > cap) {
            int32_t c = (*n + nt) * 2 + 16;
            oxl_token *t = realloc(*out, sizeof(oxl_token) * (size_t)c);
            if (!t) {
                return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
            }
            *out = t;
            cap = c;
        }
        /* one negative id per image content: equal images give equal rows (a later prompt with the
         * same image may reuse the cache through them; the scheduler compares the images' keys) */
        const uint8_t *d = m->key[k].sha256;
        const uint32_t h = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
        const oxl_token id = -(oxl_token)(h >> 2) - 1; /* -1 .. -2^30 */
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
        job->img_key[job->n_img] = m->key[i];
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
