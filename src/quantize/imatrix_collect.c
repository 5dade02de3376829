/* Importance-matrix collection and writers (see imatrix_collect.h). */
#include "imatrix_collect.h"

#include "errors.h"
#include "gguf_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama-imatrix ignores plain products over fewer activation columns than this */
#define MIN_COLUMNS 16

typedef struct acc_entry {
    char *name;
    const char *seen; /* the weight's name pointer last matched (names live as long as the model) */
    int64_t ne0;      /* row length: values per matrix */
    int32_t n_mat;    /* matrices (experts, slices of a 3-D tensor; 1 for a plain one) */
    int32_t n_counts; /* n_mat for experts, else 1 */
    float *values;    /* [n_mat * ne0] sums of squares */
    int64_t *counts;  /* [n_counts] */
} acc_entry;

struct oxl_imatrix_acc {
    bool process_output;
    acc_entry *e;
    int64_t n, cap;
    int64_t last; /* the entry the previous product used */
    oxl_error err;
    bool failed;
};

oxl_imatrix_acc *oxl_imatrix_acc_new(bool process_output, oxl_error *err) {
    oxl_imatrix_acc *acc = calloc(1, sizeof *acc);
    if (acc == NULL) {
        oxl_err_set(err, "imatrix: out of memory");
        return NULL;
    }
    acc->process_output = process_output;
    acc->last = -1;
    return acc;
}

void oxl_imatrix_acc_free(oxl_imatrix_acc *acc) {
    if (acc == NULL) {
        return;
    }
    for (int64_t i = 0; i < acc->n; i++) {
        free(acc->e[i].name);
        free(acc->e[i].values);
        free(acc->e[i].counts);
    }
    free(acc->e);
    free(acc);
}

static void fail(oxl_imatrix_acc *acc, const char *fmt, const char *name) {
    if (!acc->failed) {
        oxl_err_set(&acc->err, fmt, name);
        acc->failed = true;
    }
}

/* The entry of weight w, made on first use with n_mat matrices and n_counts counts. */
static acc_entry *entry_for(oxl_imatrix_acc *acc, const oxl_tensor *w, int32_t n_mat, int32_t n_counts) {
    acc_entry *e = NULL;
    if (acc->last >= 0 && acc->e[acc->last].seen == w->name) {
        e = &acc->e[acc->last];
    }
    for (int64_t i = 0; e == NULL && i < acc->n; i++) {
        if (acc->e[i].seen == w->name || strcmp(acc->e[i].name, w->name) == 0) {
            e = &acc->e[i];
            e->seen = w->name;
            acc->last = i;
        }
    }
    if (e != NULL) {
        if (e->ne0 != w->ne[0] || e->n_mat != n_mat || e->n_counts != n_counts) {
            fail(acc, "imatrix: weight '%s' was multiplied with two different shapes", w->name);
            return NULL;
        }
        return e;
    }
    if (acc->n == acc->cap) {
        const int64_t cap = acc->cap ? 2 * acc->cap : 64;
        acc_entry *grown = realloc(acc->e, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            fail(acc, "imatrix: out of memory for the statistics of '%s'", w->name);
            return NULL;
        }
        acc->e = grown;
        acc->cap = cap;
    }
    e = &acc->e[acc->n];
    *e = (acc_entry){.seen = w->name, .ne0 = w->ne[0], .n_mat = n_mat, .n_counts = n_counts};
    e->name = malloc(strlen(w->name) + 1);
    e->values = calloc((size_t)n_mat * (size_t)w->ne[0], sizeof(float));
    e->counts = calloc((size_t)n_counts, sizeof(int64_t));
    if (e->name == NULL || e->values == NULL || e->counts == NULL) {
        free(e->name);
        free(e->values);
        free(e->counts);
        fail(acc, "imatrix: out of memory for the statistics of '%s'", w->name);
        return NULL;
    }
    strcpy(e->name, w->name);
    acc->last = acc->n++;
    return e;
}

void oxl_imatrix_acc_observe(void *user, const oxl_tensor *w, const float *x, int64_t n) {
    oxl_imatrix_acc *acc = user;
    if (acc->failed || w->name == NULL || n <= 0) {
        return;
    }
    /* experts (ggml_mul_mat_id): always collected, one count per expert; other matrices: the
     * filter of collect_imatrix's "ask" step */
    const bool experts = w->n_slice > 0 && strstr(w->name, "_exps") != NULL;
    if (!experts) {
        const bool wanted =
            strncmp(w->name, "blk.", 4) == 0 || (acc->process_output && !strcmp(w->name, "output.weight"));
        if (!wanted || n < MIN_COLUMNS) {
            return;
        }
    }
    const int32_t n_mat = w->n_slice > 0 ? w->n_slice : 1;
    acc_entry *e = entry_for(acc, w, n_mat, experts ? n_mat : 1);
    if (e == NULL) {
        return;
    }
    const int64_t k = w->ne[0];
    float *v = e->values + (size_t)w->slice * (size_t)k;
    for (int64_t c = 0; c < n; c++) {
        const float *col = x + (size_t)c * (size_t)k;
        for (int64_t j = 0; j < k; j++) {
            const float sq = col[j] * col[j]; /* not fused: llama-imatrix's build rounds the product */
            v[j] += sq;
        }
    }
    /* a batched 3-D product (one call per slice here, one ggml_mul_mat there) counts its columns once */
    if (experts) {
        e->counts[w->slice] += n;
    } else if (w->slice == 0) {
        e->counts[0] += n;
    }
}

int oxl_imatrix_acc_check(const oxl_imatrix_acc *acc, oxl_error *err) {
    if (acc->failed) {
        return oxl_err_set(err, "%s", acc->err.msg);
    }
    for (int64_t i = 0; i < acc->n; i++) {
        const acc_entry *e = &acc->e[i];
        for (int64_t j = 0; j < (int64_t)e->n_mat * e->ne0; j++) {
            if (!isfinite(e->values[j])) {
                return oxl_err_set(err, "imatrix: %f detected in %s (value %lld)", (double)e->values[j], e->name,
                                   (long long)j);
            }
        }
    }
    return 0;
}

int64_t oxl_imatrix_acc_n_entries(const oxl_imatrix_acc *acc) { return acc->n; }

static int64_t max_count(const acc_entry *e) {
    int64_t m = 0;
    for (int32_t i = 0; i < e->n_counts; i++) {
        m = e->counts[i] > m ? e->counts[i] : m;
    }
    return m;
}

int32_t oxl_imatrix_acc_chunk_count(const oxl_imatrix_acc *acc, int32_t chunk_size) {
    int64_t m = 0;
    for (int64_t i = 0; i < acc->n; i++) {
        const int64_t c = max_count(&acc->e[i]);
        m = c > m ? c : m;
    }
    return chunk_size > 0 ? (int32_t)(m / chunk_size) : 0;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp((*(const acc_entry *const *)a)->name, (*(const acc_entry *const *)b)->name);
}

/* The entries in strcmp order of names (std::sort of the names in save_imatrix), or NULL. */
static const acc_entry **sorted(const oxl_imatrix_acc *acc, oxl_error *err) {
    const acc_entry **s = malloc((size_t)(acc->n ? acc->n : 1) * sizeof *s);
    if (s == NULL) {
        oxl_err_set(err, "imatrix: out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < acc->n; i++) {
        s[i] = &acc->e[i];
    }
    qsort(s, (size_t)acc->n, sizeof *s, cmp_entry);
    return s;
}

int oxl_imatrix_write_gguf(const oxl_imatrix_acc *acc, const char *path, const char *const *datasets,
                           int64_t n_datasets, int32_t chunk_size, oxl_error *err) {
    int rc = -1;
    float *buf = NULL;
    const acc_entry **s = sorted(acc, err);
    oxl_gguf_writer *w = s ? oxl_gguf_writer_new(err) : NULL;
    if (w == NULL) {
        goto done;
    }
    if (oxl_gguf_writer_set_str(w, "general.type", "imatrix", err) != 0 ||
        oxl_gguf_writer_set_arr_str(w, "imatrix.datasets", datasets, (uint64_t)n_datasets, err) != 0 ||
        oxl_gguf_writer_set_u32(w, "imatrix.chunk_count", (uint32_t)oxl_imatrix_acc_chunk_count(acc, chunk_size),
                                err) != 0 ||
        oxl_gguf_writer_set_u32(w, "imatrix.chunk_size", (uint32_t)chunk_size, err) != 0) {
        goto done;
    }
    size_t widest = 1;
    for (int64_t i = 0; i < acc->n; i++) {
        char name[128];
        /* (values per count, counts): a batched 3-D product's slices in one row, as save_imatrix */
        const int64_t ne_sum[2] = {s[i]->ne0 * s[i]->n_mat / s[i]->n_counts, s[i]->n_counts};
        const int64_t ne_cnt[2] = {1, s[i]->n_counts};
        snprintf(name, sizeof name, "%s.in_sum2", s[i]->name);
        if (oxl_gguf_writer_add_tensor(w, name, OXL_TYPE_F32, 2, ne_sum, err) != 0) {
            goto done;
        }
        snprintf(name, sizeof name, "%s.counts", s[i]->name);
        if (oxl_gguf_writer_add_tensor(w, name, OXL_TYPE_F32, 2, ne_cnt, err) != 0) {
            goto done;
        }
        const size_t nv = (size_t)s[i]->ne0 * (size_t)s[i]->n_mat;
        widest = nv > widest ? nv : widest;
    }
    buf = malloc(widest * sizeof(float));
    if (buf == NULL) {
        oxl_err_set(err, "%s: out of memory", path);
        goto done;
    }
    if (oxl_gguf_writer_begin(w, path, err) != 0) {
        goto done;
    }
    for (int64_t i = 0; i < acc->n; i++) {
        const size_t nv = (size_t)s[i]->ne0 * (size_t)s[i]->n_mat;
        if (oxl_gguf_writer_write_data(w, s[i]->values, nv * sizeof(float), err) != 0) {
            goto done;
        }
        for (int32_t j = 0; j < s[i]->n_counts; j++) {
            buf[j] = (float)s[i]->counts[j];
        }
        if (oxl_gguf_writer_write_data(w, buf, (size_t)s[i]->n_counts * sizeof(float), err) != 0) {
            goto done;
        }
    }
    rc = oxl_gguf_writer_finish(w, err);
done:
    oxl_gguf_writer_free(w);
    free(buf);
    free(s);
    return rc;
}

static bool put(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }

int oxl_imatrix_write_dat(const oxl_imatrix_acc *acc, const char *path, const char *dataset, int32_t chunk_size,
                          oxl_error *err) {
    if (chunk_size <= 0) {
        return oxl_err_set(err, "%s: chunk size %d must be positive", path, chunk_size);
    }
    const acc_entry **s = sorted(acc, err);
    if (s == NULL) {
        return -1;
    }
    /* weights whose every count is 0 are left out (save_imatrix_legacy: "has no data - skipping") */
    int32_t n_store = 0;
    size_t widest = 1;
    for (int64_t i = 0; i < acc->n; i++) {
        if (max_count(s[i]) > 0) {
            n_store++;
            const size_t nv = (size_t)s[i]->ne0 * (size_t)s[i]->n_mat;
            widest = nv > widest ? nv : widest;
        }
    }
    char *tmp = malloc(strlen(path) + 5);
    float *vals = malloc(widest * sizeof(float));
    FILE *f = NULL;
    bool ok = tmp != NULL && vals != NULL;
    if (ok) {
        sprintf(tmp, "%s.tmp", path);
        f = fopen(tmp, "wb");
        if (f == NULL) {
            free(tmp);
            free(vals);
            free(s);
            return oxl_err_set(err, "%s: cannot open for writing", path);
        }
    }
    ok = ok && put(f, &n_store, 4);
    for (int64_t i = 0; ok && i < acc->n; i++) {
        const acc_entry *e = s[i];
        const int64_t mc = max_count(e);
        if (mc == 0) {
            continue;
        }
        const int32_t len = (int32_t)strlen(e->name);
        const int32_t ncall = (int32_t)((mc + chunk_size - 1) / chunk_size);
        const int32_t nval = (int32_t)(e->ne0 * e->n_mat);
        const int32_t per_count = nval / e->n_counts;
        for (int32_t j = 0; j < nval; j++) {
            float count = (float)e->counts[j / per_count];
            float value = e->values[j];
            if (count == 0.0f) {
                value = 1.0f;
                count = 1.0f;
            }
            vals[j] = (value / count) * (float)ncall;
        }
        ok = put(f, &len, 4) && put(f, e->name, (size_t)len) && put(f, &ncall, 4) && put(f, &nval, 4) &&
             put(f, vals, (size_t)nval * sizeof(float));
    }
    const int32_t n_chunk = oxl_imatrix_acc_chunk_count(acc, chunk_size);
    const int32_t dlen = (int32_t)strlen(dataset ? dataset : "");
    ok = ok && put(f, &n_chunk, 4) && put(f, &dlen, 4) && put(f, dataset ? dataset : "", (size_t)dlen);
    if (f != NULL && fclose(f) != 0) {
        ok = false;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
    }
    if (!ok) {
        if (f != NULL) {
            remove(tmp);
        }
        oxl_err_set(err, "%s: cannot write the importance matrix", path);
    }
    free(tmp);
    free(vals);
    free(s);
    return ok ? 0 : -1;
}
