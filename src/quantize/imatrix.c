/* Importance matrix files, GGUF and legacy layouts (see imatrix.h). */
#include "imatrix.h"

#include "errors.h"
#include "file.h"
#include "gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct oxl_imatrix_entry {
    char *name;
    float *w;
    size_t n;
} oxl_imatrix_entry;

struct oxl_imatrix {
    oxl_imatrix_entry *e;
    int64_t n, cap;
    int64_t chunk_count;
    char *dataset;
};

void oxl_imatrix_free(oxl_imatrix *m) {
    if (m == NULL) {
        return;
    }
    for (int64_t i = 0; i < m->n; i++) {
        free(m->e[i].name);
        free(m->e[i].w);
    }
    free(m->e);
    free(m->dataset);
    free(m);
}

const float *oxl_imatrix_find(const oxl_imatrix *m, const char *name, size_t *n) {
    for (int64_t i = 0; i < m->n; i++) {
        if (strcmp(m->e[i].name, name) == 0) {
            *n = m->e[i].n;
            return m->e[i].w;
        }
    }
    return NULL;
}

int64_t oxl_imatrix_n_entries(const oxl_imatrix *m) { return m->n; }
int64_t oxl_imatrix_chunk_count(const oxl_imatrix *m) { return m->chunk_count; }
const char *oxl_imatrix_dataset(const oxl_imatrix *m) { return m->dataset; }

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* A new entry `name` (name_len bytes) with n weights; a later entry of the same name replaces it
 * (as the map insertion in llama.cpp's loader). NULL with err on allocation failure. */
static float *add_entry(oxl_imatrix *m, const char *path, const char *name, size_t name_len, size_t n, oxl_error *err) {
    char *nm = dup_n(name, name_len);
    float *w = malloc((n ? n : 1) * sizeof *w);
    if (nm == NULL || w == NULL) {
        free(nm);
        free(w);
        oxl_err_set(err, "%s: out of memory for entry '%.*s' (%zu values)", path, (int)name_len, name, n);
        return NULL;
    }
    for (int64_t i = 0; i < m->n; i++) {
        if (strcmp(m->e[i].name, nm) == 0) {
            free(m->e[i].name);
            free(m->e[i].w);
            m->e[i] = (oxl_imatrix_entry){nm, w, n};
            return w;
        }
    }
    if (m->n == m->cap) {
        const int64_t cap = m->cap ? 2 * m->cap : 64;
        oxl_imatrix_entry *e = realloc(m->e, (size_t)cap * sizeof *e);
        if (e == NULL) {
            oxl_err_set(err, "%s: out of memory for entry '%s'", path, nm);
            free(nm);
            free(w);
            return NULL;
        }
        m->e = e;
        m->cap = cap;
    }
    m->e[m->n++] = (oxl_imatrix_entry){nm, w, n};
    return w;
}

static int check_finite(const char *path, const char *name, const float *w, size_t n, oxl_error *err) {
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(w[i])) {
            return oxl_err_set(err, "%s: entry '%s' value %zu is %g (not finite)", path, name, i, (double)w[i]);
        }
    }
    return 0;
}

/* ---- GGUF layout ---- */

static bool strip_suffix(const char *s, const char *suffix, size_t *len) {
    const size_t n = strlen(s), k = strlen(suffix);
    if (n <= k || strcmp(s + n - k, suffix) != 0) {
        return false;
    }
    *len = n - k;
    return true;
}

static int load_gguf(oxl_imatrix *m, const char *path, oxl_error *err) {
    oxl_gguf *g = oxl_gguf_open(path, err);
    if (g == NULL) {
        return -1;
    }
    int rc = -1;
    const int64_t k_datasets = oxl_gguf_find_key(g, "imatrix.datasets");
    const int64_t k_count = oxl_gguf_find_key(g, "imatrix.chunk_count");
    const int64_t k_size = oxl_gguf_find_key(g, "imatrix.chunk_size");
    if (k_datasets < 0 || k_count < 0 || k_size < 0) {
        oxl_err_set(err, "%s: missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size)",
                    path);
        goto out;
    }
    int64_t chunks = 0;
    if (!oxl_gguf_kv_int(g, k_count, &chunks)) {
        oxl_err_set(err, "%s: imatrix.chunk_count is a %s value, expected uint32", path,
                    oxl_gguf_vtype_name(oxl_gguf_kv_type(g, k_count)));
        goto out;
    }
    m->chunk_count = chunks;
    if (oxl_gguf_arr_type(g, k_datasets) == OXL_GGUF_STRING && oxl_gguf_arr_n(g, k_datasets) > 0) {
        size_t len = 0;
        const char *s = oxl_gguf_arr_str(g, k_datasets, 0, &len);
        m->dataset = dup_n(s, len);
    }
    if (oxl_gguf_n_tensors(g) < 1) {
        oxl_err_set(err, "%s: no data (no tensors)", path);
        goto out;
    }
    for (int64_t i = 0; i < oxl_gguf_n_tensors(g); i++) {
        const oxl_gguf_tensor *sums = oxl_gguf_tensor_at(g, i);
        size_t base_len = 0;
        if (!strip_suffix(sums->name, ".in_sum2", &base_len)) {
            if (!strip_suffix(sums->name, ".counts", &base_len)) {
                continue;
            }
            /* a counts tensor: its sums must exist */
            char name[256];
            snprintf(name, sizeof name, "%.*s.in_sum2", (int)base_len, sums->name);
            if (oxl_gguf_find_tensor(g, name) == NULL) {
                oxl_err_set(err, "%s: tensor '%s' has no matching '%s'", path, sums->name, name);
                goto out;
            }
            continue;
        }
        char name[256];
        if (base_len + sizeof ".counts" > sizeof name) {
            oxl_err_set(err, "%s: tensor name '%s' is too long", path, sums->name);
            goto out;
        }
        snprintf(name, sizeof name, "%.*s.counts", (int)base_len, sums->name);
        const oxl_gguf_tensor *counts = oxl_gguf_find_tensor(g, name);
        if (counts == NULL) {
            oxl_err_set(err, "%s: tensor '%s' has no matching '%s'", path, sums->name, name);
            goto out;
        }
        if (sums->type != 0 || counts->type != 0) {
            oxl_err_set(err, "%s: tensors '%s' and '%s' must be f32", path, sums->name, counts->name);
            goto out;
        }
        const size_t nval = sums->nbytes / sizeof(float), ncounts = counts->nbytes / sizeof(float);
        if (ncounts == 0 || nval % ncounts != 0) {
            oxl_err_set(err, "%s: tensor '%s' has %zu values, not a multiple of the %zu counts of '%s'", path,
                        sums->name, nval, ncounts, counts->name);
            goto out;
        }
        float *w = add_entry(m, path, sums->name, base_len, nval, err);
        if (w == NULL) {
            goto out;
        }
        const size_t ne0 = nval / ncounts;
        for (size_t j = 0; j < ncounts; j++) {
            float c;
            memcpy(&c, (const uint8_t *)counts->data + j * 4, 4);
            /* llama.cpp rounds the stored count to an integer (lround), then divides as float */
            const float count = isfinite(c) && fabsf(c) < 9e18f ? (float)llroundf(c) : 0.0f;
            for (size_t k = 0; k < ne0; k++) {
                float s;
                memcpy(&s, (const uint8_t *)sums->data + (j * ne0 + k) * 4, 4);
                w[j * ne0 + k] = count > 0.0f ? s / count : 1.0f;
            }
        }
        if (check_finite(path, m->e[m->n - 1].name, w, nval, err) < 0) {
            goto out;
        }
    }
    rc = 0;
out:
    oxl_gguf_close(g);
    return rc;
}

/* ---- legacy layout ---- */

typedef struct oxl_rd {
    const uint8_t *p;
    size_t n, pos;
} oxl_rd;

static bool rd_i32(oxl_rd *r, int32_t *v) {
    if (r->n - r->pos < 4) {
        return false;
    }
    uint32_t u = 0;
    for (int k = 0; k < 4; k++) {
        u |= (uint32_t)r->p[r->pos + k] << (8 * k);
    }
    *v = (int32_t)u;
    r->pos += 4;
    return true;
}

static int load_legacy(oxl_imatrix *m, const char *path, const uint8_t *data, size_t size, oxl_error *err) {
    oxl_rd r = {data, size, 0};
    int32_t n_entries = 0;
    if (!rd_i32(&r, &n_entries) || n_entries < 1) {
        return oxl_err_set(err, "%s: no data (entry count %d at byte 0)", path, n_entries);
    }
    for (int32_t i = 0; i < n_entries; i++) {
        const size_t at = r.pos;
        int32_t len = 0, ncall = 0, nval = 0;
        if (!rd_i32(&r, &len) || len < 0 || (size_t)len > r.n - r.pos) {
            return oxl_err_set(err,
                               "%s: entry %d at byte %zu: name length %d runs past the end of the file (%zu bytes)",
                               path, i + 1, at, len, size);
        }
        const char *name = (const char *)r.p + r.pos;
        r.pos += (size_t)len;
        if (!rd_i32(&r, &ncall) || !rd_i32(&r, &nval) || nval < 1 || (size_t)nval > (r.n - r.pos) / 4) {
            return oxl_err_set(err, "%s: entry %d ('%.*s') at byte %zu: bad value count %d (file has %zu bytes)", path,
                               i + 1, len, name, at, nval, size);
        }
        /* the name stops at an embedded NUL, as std::string{data()} does */
        const size_t name_len = strnlen(name, (size_t)len);
        float *w = add_entry(m, path, name, name_len, (size_t)nval, err);
        if (w == NULL) {
            return -1;
        }
        for (int32_t k = 0; k < nval; k++) {
            float s;
            memcpy(&s, r.p + r.pos + 4 * (size_t)k, 4);
            w[k] = ncall > 0 ? s / (float)ncall : s;
        }
        r.pos += 4 * (size_t)nval;
        if (check_finite(path, m->e[m->n - 1].name, w, (size_t)nval, err) < 0) {
            return -1;
        }
    }
    int32_t chunks = 0, len = 0;
    if (rd_i32(&r, &chunks)) {
        m->chunk_count = chunks;
        if (rd_i32(&r, &len) && len > 0 && (size_t)len <= r.n - r.pos) {
            m->dataset = dup_n((const char *)r.p + r.pos, strnlen((const char *)r.p + r.pos, (size_t)len));
        }
    }
    return 0;
}

oxl_imatrix *oxl_imatrix_load(const char *path, oxl_error *err) {
    oxl_imatrix *m = calloc(1, sizeof *m);
    if (m == NULL) {
        oxl_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    size_t size = 0;
    uint8_t *data = (uint8_t *)oxl_read_file(path, &size, err);
    if (data == NULL) {
        oxl_imatrix_free(m);
        return NULL;
    }
    const bool is_gguf = size >= 4 && memcmp(data, "GGUF", 4) == 0;
    const int rc = is_gguf ? load_gguf(m, path, err) : load_legacy(m, path, data, size, err);
    free(data);
    if (rc < 0) {
        oxl_imatrix_free(m);
        return NULL;
    }
    return m;
}
