/* GGUF v3 writer (the layout of ggml/src/gguf.cpp gguf_write_out). Key/values are kept serialized,
 * tensor offsets follow from the declared types and shapes, and the output goes to "<path>.tmp",
 * renamed onto path only once complete. */
#include "gguf_write.h"

#include "errors.h"
#include "oxl_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OXL_GGUF_NAME_MAX 64 /* GGML_MAX_NAME, terminator included */

typedef struct oxl_gw_buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} oxl_gw_buf;

typedef struct oxl_gw_kv {
    char *key;
    oxl_gw_buf bytes; /* key, type and value exactly as written */
} oxl_gw_kv;

typedef struct oxl_gw_tensor {
    char *name;
    oxl_type type;
    uint32_t n_dims; /* trailing dimensions of 1 trimmed (ggml_n_dims) */
    int64_t ne[OXL_GGUF_MAX_DIMS];
    size_t nbytes;
    uint64_t offset; /* from the start of the data section */
} oxl_gw_tensor;

struct oxl_gguf_writer {
    oxl_gw_kv *kv;
    int64_t n_kv, cap_kv;
    oxl_gw_tensor *t;
    int64_t n_t, cap_t;
    /* output state */
    FILE *f;
    char *path, *tmp_path;
    size_t alignment;
    int64_t next_data; /* index of the tensor whose data comes next */
    uint64_t written;
    bool began, finished;
};

/* ---- little-endian serialization ---- */

static void buf_put(oxl_gw_buf *b, const void *src, size_t n) {
    if (b->oom) {
        return;
    }
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n) {
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void buf_le(oxl_gw_buf *b, uint64_t v, size_t size) {
    uint8_t le[8];
    for (size_t i = 0; i < size; i++) {
        le[i] = (uint8_t)(v >> (8 * i));
    }
    buf_put(b, le, size);
}

static void buf_str(oxl_gw_buf *b, const char *s, size_t len) {
    buf_le(b, len, 8);
    buf_put(b, s, len);
}

/* Bytes of one element of a numeric/bool value type; 0 for strings and arrays. */
static size_t vtype_size(oxl_gguf_vtype t) {
    switch (t) {
    case OXL_GGUF_UINT8:
    case OXL_GGUF_INT8:
    case OXL_GGUF_BOOL: return 1;
    case OXL_GGUF_UINT16:
    case OXL_GGUF_INT16: return 2;
    case OXL_GGUF_UINT32:
    case OXL_GGUF_INT32:
    case OXL_GGUF_FLOAT32: return 4;
    case OXL_GGUF_UINT64:
    case OXL_GGUF_INT64:
    case OXL_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

oxl_gguf_writer *oxl_gguf_writer_new(oxl_error *err) {
    oxl_gguf_writer *w = calloc(1, sizeof *w);
    if (w == NULL) {
        oxl_err_set(err, "gguf writer: out of memory");
    }
    return w;
}

void oxl_gguf_writer_free(oxl_gguf_writer *w) {
    if (w == NULL) {
        return;
    }
    if (w->f != NULL) {
        fclose(w->f);
    }
    if (w->began && !w->finished && w->tmp_path != NULL) {
        remove(w->tmp_path);
    }
    for (int64_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].bytes.p);
    }
    for (int64_t i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
    }
    free(w->kv);
    free(w->t);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

static int64_t find_kv(const oxl_gguf_writer *w, const char *key) {
    for (int64_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) == 0) {
            return i;
        }
    }
    return -1;
}

bool oxl_gguf_writer_remove(oxl_gguf_writer *w, const char *key) {
    const int64_t i = find_kv(w, key);
    if (i < 0) {
        return false;
    }
    free(w->kv[i].key);
    free(w->kv[i].bytes.p);
    memmove(&w->kv[i], &w->kv[i + 1], (size_t)(w->n_kv - i - 1) * sizeof w->kv[0]);
    w->n_kv--;
    return true;
}

/* Starts key/value `key` of type t (removing an older one): the new entry's buffer, or NULL. */
static oxl_gw_buf *kv_begin(oxl_gguf_writer *w, const char *key, oxl_gguf_vtype t, oxl_error *err) {
    if (w->began) {
        oxl_err_set(err, "gguf writer: key '%s' set after the header was written", key);
        return NULL;
    }
    oxl_gguf_writer_remove(w, key);
    if (w->n_kv == w->cap_kv) {
        const int64_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
        oxl_gw_kv *kv = realloc(w->kv, (size_t)cap * sizeof *kv);
        if (kv == NULL) {
            oxl_err_set(err, "gguf writer: out of memory for key '%s'", key);
            return NULL;
        }
        w->kv = kv;
        w->cap_kv = cap;
    }
    oxl_gw_kv *kv = &w->kv[w->n_kv];
    memset(kv, 0, sizeof *kv);
    kv->key = strdup(key);
    if (kv->key == NULL) {
        oxl_err_set(err, "gguf writer: out of memory for key '%s'", key);
        return NULL;
    }
    w->n_kv++;
    buf_str(&kv->bytes, key, strlen(key));
    buf_le(&kv->bytes, (uint64_t)t, 4);
    return &kv->bytes;
}

static int kv_end(oxl_gguf_writer *w, const oxl_gw_buf *b, const char *key, oxl_error *err) {
    if (b->oom) {
        oxl_gguf_writer_remove(w, key);
        return oxl_err_set(err, "gguf writer: out of memory for key '%s'", key);
    }
    return 0;
}

static int set_scalar(oxl_gguf_writer *w, const char *key, oxl_gguf_vtype t, uint64_t bits, oxl_error *err) {
    oxl_gw_buf *b = kv_begin(w, key, t, err);
    if (b == NULL) {
        return -1;
    }
    buf_le(b, bits, vtype_size(t));
    return kv_end(w, b, key, err);
}

int oxl_gguf_writer_set_u32(oxl_gguf_writer *w, const char *key, uint32_t v, oxl_error *err) {
    return set_scalar(w, key, OXL_GGUF_UINT32, v, err);
}

int oxl_gguf_writer_set_i32(oxl_gguf_writer *w, const char *key, int32_t v, oxl_error *err) {
    return set_scalar(w, key, OXL_GGUF_INT32, (uint32_t)v, err);
}

int oxl_gguf_writer_set_f32(oxl_gguf_writer *w, const char *key, float v, oxl_error *err) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return set_scalar(w, key, OXL_GGUF_FLOAT32, bits, err);
}

int oxl_gguf_writer_set_bool(oxl_gguf_writer *w, const char *key, bool v, oxl_error *err) {
    return set_scalar(w, key, OXL_GGUF_BOOL, v ? 1 : 0, err);
}

static int set_str_len(oxl_gguf_writer *w, const char *key, const char *v, size_t len, oxl_error *err) {
    oxl_gw_buf *b = kv_begin(w, key, OXL_GGUF_STRING, err);
    if (b == NULL) {
        return -1;
    }
    buf_str(b, v, len);
    return kv_end(w, b, key, err);
}

int oxl_gguf_writer_set_str(oxl_gguf_writer *w, const char *key, const char *v, oxl_error *err) {
    return set_str_len(w, key, v, strlen(v), err);
}

int oxl_gguf_writer_set_arr(oxl_gguf_writer *w, const char *key, oxl_gguf_vtype t, const void *data, uint64_t n,
                            oxl_error *err) {
    const size_t es = vtype_size(t);
    if (es == 0) {
        return oxl_err_set(err, "gguf writer: key '%s': an array of %s is not a numeric array", key,
                           oxl_gguf_vtype_name(t));
    }
    if (n > SIZE_MAX / es) {
        return oxl_err_set(err, "gguf writer: key '%s': %llu elements are too many", key, (unsigned long long)n);
    }
    oxl_gw_buf *b = kv_begin(w, key, OXL_GGUF_ARRAY, err);
    if (b == NULL) {
        return -1;
    }
    buf_le(b, (uint64_t)t, 4);
    buf_le(b, n, 8);
    buf_put(b, data, (size_t)n * es); /* stored little-endian already (the reader's layout) */
    return kv_end(w, b, key, err);
}

int oxl_gguf_writer_set_arr_str(oxl_gguf_writer *w, const char *key, const char *const *v, uint64_t n, oxl_error *err) {
    oxl_gw_buf *b = kv_begin(w, key, OXL_GGUF_ARRAY, err);
    if (b == NULL) {
        return -1;
    }
    buf_le(b, OXL_GGUF_STRING, 4);
    buf_le(b, n, 8);
    for (uint64_t j = 0; j < n; j++) {
        buf_str(b, v[j], strlen(v[j]));
    }
    return kv_end(w, b, key, err);
}

int oxl_gguf_writer_copy_kv(oxl_gguf_writer *w, const oxl_gguf *src, int64_t i, oxl_error *err) {
    const char *key = oxl_gguf_key(src, i);
    const oxl_gguf_vtype t = oxl_gguf_kv_type(src, i);
    if (key == NULL) {
        return oxl_err_set(err, "%s: no key/value %lld to copy", oxl_gguf_path(src), (long long)i);
    }
    if (t == OXL_GGUF_STRING) {
        size_t len = 0;
        const char *s = oxl_gguf_kv_str(src, i, &len);
        return set_str_len(w, key, s, len, err);
    }
    if (t != OXL_GGUF_ARRAY) {
        uint64_t bits = 0;
        int64_t s = 0;
        double d = 0.0;
        bool bv = false;
        if (oxl_gguf_kv_uint(src, i, &bits)) {
            /* non-negative integers of any width: the value, written in the stored width */
        } else if (oxl_gguf_kv_int(src, i, &s)) {
            bits = (uint64_t)s; /* two's complement, truncated to the stored width */
        } else if (t == OXL_GGUF_FLOAT32 && oxl_gguf_kv_float(src, i, &d)) {
            const float f = (float)d;
            uint32_t u;
            memcpy(&u, &f, 4);
            bits = u;
        } else if (t == OXL_GGUF_FLOAT64 && oxl_gguf_kv_float(src, i, &d)) {
            memcpy(&bits, &d, 8);
        } else if (t == OXL_GGUF_BOOL && oxl_gguf_kv_bool(src, i, &bv)) {
            bits = bv;
        } else {
            return oxl_err_set(err, "%s: key '%s': cannot copy a %s value", oxl_gguf_path(src), key,
                               oxl_gguf_vtype_name(t));
        }
        return set_scalar(w, key, t, bits, err);
    }
    const oxl_gguf_vtype at = oxl_gguf_arr_type(src, i);
    const uint64_t n = oxl_gguf_arr_n(src, i);
    if (at != OXL_GGUF_STRING) {
        const void *data = oxl_gguf_arr_data(src, i);
        if (data == NULL && n > 0) {
            return oxl_err_set(err, "%s: key '%s': cannot copy an array of %s", oxl_gguf_path(src), key,
                               oxl_gguf_vtype_name(at));
        }
        return oxl_gguf_writer_set_arr(w, key, at, data, n, err);
    }
    oxl_gw_buf *b = kv_begin(w, key, OXL_GGUF_ARRAY, err);
    if (b == NULL) {
        return -1;
    }
    buf_le(b, OXL_GGUF_STRING, 4);
    buf_le(b, n, 8);
    for (uint64_t j = 0; j < n; j++) {
        size_t len = 0;
        const char *s = oxl_gguf_arr_str(src, i, j, &len);
        buf_str(b, s, len);
    }
    return kv_end(w, b, key, err);
}

int oxl_gguf_writer_copy_kvs(oxl_gguf_writer *w, const oxl_gguf *src, oxl_error *err) {
    for (int64_t i = 0; i < oxl_gguf_n_kv(src); i++) {
        if (oxl_gguf_writer_copy_kv(w, src, i, err) < 0) {
            return -1;
        }
    }
    return 0;
}

/* ---- tensors ---- */

int oxl_gguf_writer_add_tensor(oxl_gguf_writer *w, const char *name, oxl_type type, uint32_t n_dims, const int64_t *ne,
                               oxl_error *err) {
    if (w->began) {
        return oxl_err_set(err, "gguf writer: tensor '%s' added after the header was written", name);
    }
    const size_t name_len = strlen(name);
    if (name_len == 0 || name_len >= OXL_GGUF_NAME_MAX) {
        return oxl_err_set(err, "gguf writer: tensor name '%s' has %zu bytes (1..%d allowed)", name, name_len,
                           OXL_GGUF_NAME_MAX - 1);
    }
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)type);
    if (tr == NULL || tr->blck_size == 0) {
        return oxl_err_set(err, "gguf writer: tensor '%s': unknown type id %d", name, (int)type);
    }
    if (n_dims < 1 || n_dims > OXL_GGUF_MAX_DIMS) {
        return oxl_err_set(err, "gguf writer: tensor '%s': n_dims = %u (1..%d)", name, n_dims, OXL_GGUF_MAX_DIMS);
    }
    for (int64_t i = 0; i < w->n_t; i++) {
        if (strcmp(w->t[i].name, name) == 0) {
            return oxl_err_set(err, "gguf writer: duplicate tensor name '%s'", name);
        }
    }
    oxl_gw_tensor t = {.type = type, .n_dims = 1, .ne = {1, 1, 1, 1}};
    uint64_t nrows = 1;
    for (uint32_t j = 0; j < n_dims; j++) {
        if (ne[j] < 0 || (j > 0 && ne[j] > 0 && nrows > UINT64_MAX / (uint64_t)ne[j])) {
            return oxl_err_set(err, "gguf writer: tensor '%s': ne[%u] = %lld", name, j, (long long)ne[j]);
        }
        t.ne[j] = ne[j];
        if (j > 0) {
            nrows *= (uint64_t)ne[j];
        }
        if (ne[j] != 1) {
            t.n_dims = j + 1;
        }
    }
    if (t.ne[0] % tr->blck_size != 0) {
        return oxl_err_set(err, "gguf writer: tensor '%s': ne0 = %lld is not a multiple of %s's block size %lld", name,
                           (long long)t.ne[0], tr->name, (long long)tr->blck_size);
    }
    const uint64_t row = (uint64_t)(t.ne[0] / tr->blck_size) * tr->type_size;
    if (nrows > 0 && row > SIZE_MAX / nrows) {
        return oxl_err_set(err, "gguf writer: tensor '%s' is too large", name);
    }
    t.nbytes = (size_t)(row * nrows);
    if (w->n_t == w->cap_t) {
        const int64_t cap = w->cap_t ? 2 * w->cap_t : 64;
        oxl_gw_tensor *p = realloc(w->t, (size_t)cap * sizeof *p);
        if (p == NULL) {
            return oxl_err_set(err, "gguf writer: out of memory for tensor '%s'", name);
        }
        w->t = p;
        w->cap_t = cap;
    }
    t.name = strdup(name);
    if (t.name == NULL) {
        return oxl_err_set(err, "gguf writer: out of memory for tensor '%s'", name);
    }
    w->t[w->n_t++] = t;
    return 0;
}

size_t oxl_gguf_writer_tensor_nbytes(const oxl_gguf_writer *w, int64_t i) {
    return i >= 0 && i < w->n_t ? w->t[i].nbytes : 0;
}

int64_t oxl_gguf_writer_n_tensors(const oxl_gguf_writer *w) { return w->n_t; }

/* ---- output ---- */

static uint64_t pad_to(uint64_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

static int write_bytes(oxl_gguf_writer *w, const void *p, size_t n, oxl_error *err) {
    if (n > 0 && fwrite(p, 1, n, w->f) != n) {
        return oxl_err_set(err, "%s: write failed at byte %llu", w->tmp_path, (unsigned long long)w->written);
    }
    w->written += n;
    return 0;
}

static int write_zeros(oxl_gguf_writer *w, uint64_t n, oxl_error *err) {
    static const uint8_t zeros[256];
    while (n > 0) {
        const size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        if (write_bytes(w, zeros, k, err) < 0) {
            return -1;
        }
        n -= k;
    }
    return 0;
}

/* The alignment: general.alignment (u32, a power of two) when set, else 32. */
static int resolve_alignment(oxl_gguf_writer *w, oxl_error *err) {
    w->alignment = OXL_GGUF_DEFAULT_ALIGNMENT;
    const int64_t i = find_kv(w, "general.alignment");
    if (i < 0) {
        return 0;
    }
    const oxl_gw_buf *b = &w->kv[i].bytes;
    const size_t at = 8 + strlen(w->kv[i].key);
    uint32_t type = 0, v = 0;
    for (int k = 0; k < 4; k++) {
        type |= (uint32_t)b->p[at + k] << (8 * k);
    }
    if (type != OXL_GGUF_UINT32) {
        return oxl_err_set(err, "gguf writer: general.alignment is a %s value, must be uint32",
                           oxl_gguf_vtype_name((oxl_gguf_vtype)type));
    }
    for (int k = 0; k < 4; k++) {
        v |= (uint32_t)b->p[at + 4 + k] << (8 * k);
    }
    if (v == 0 || (v & (v - 1)) != 0) {
        return oxl_err_set(err, "gguf writer: general.alignment = %u is not a power of two", v);
    }
    w->alignment = v;
    return 0;
}

int oxl_gguf_writer_begin(oxl_gguf_writer *w, const char *path, oxl_error *err) {
    if (w->began) {
        return oxl_err_set(err, "gguf writer: %s: header already written", path);
    }
    if (resolve_alignment(w, err) < 0) {
        return -1;
    }
    uint64_t offset = 0;
    for (int64_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = offset;
        offset += pad_to(w->t[i].nbytes, w->alignment);
    }
    const size_t plen = strlen(path);
    w->path = strdup(path);
    w->tmp_path = malloc(plen + 5);
    if (w->path == NULL || w->tmp_path == NULL) {
        return oxl_err_set(err, "gguf writer: %s: out of memory", path);
    }
    memcpy(w->tmp_path, path, plen);
    memcpy(w->tmp_path + plen, ".tmp", 5);
    w->f = fopen(w->tmp_path, "wb");
    if (w->f == NULL) {
        return oxl_err_set(err, "%s: cannot create the file", w->tmp_path);
    }
    w->began = true;
    oxl_gw_buf h = {0};
    buf_put(&h, "GGUF", 4);
    buf_le(&h, 3, 4);
    buf_le(&h, (uint64_t)w->n_t, 8);
    buf_le(&h, (uint64_t)w->n_kv, 8);
    for (int64_t i = 0; i < w->n_kv; i++) {
        buf_put(&h, w->kv[i].bytes.p, w->kv[i].bytes.n);
    }
    for (int64_t i = 0; i < w->n_t; i++) {
        const oxl_gw_tensor *t = &w->t[i];
        buf_str(&h, t->name, strlen(t->name));
        buf_le(&h, t->n_dims, 4);
        for (uint32_t j = 0; j < t->n_dims; j++) {
            buf_le(&h, (uint64_t)t->ne[j], 8);
        }
        buf_le(&h, (uint64_t)t->type, 4);
        buf_le(&h, t->offset, 8);
    }
    if (h.oom) {
        free(h.p);
        return oxl_err_set(err, "gguf writer: %s: out of memory for the header", path);
    }
    const int rc = write_bytes(w, h.p, h.n, err);
    free(h.p);
    if (rc < 0) {
        return -1;
    }
    return write_zeros(w, pad_to(w->written, w->alignment) - w->written, err);
}

int oxl_gguf_writer_write_data(oxl_gguf_writer *w, const void *data, size_t nbytes, oxl_error *err) {
    if (!w->began || w->finished || w->next_data >= w->n_t) {
        return oxl_err_set(err, "gguf writer: tensor data written out of order");
    }
    const oxl_gw_tensor *t = &w->t[w->next_data];
    if (nbytes != t->nbytes) {
        return oxl_err_set(err, "gguf writer: tensor '%s' has %zu bytes of data, expected %zu", t->name, nbytes,
                           t->nbytes);
    }
    if (write_bytes(w, data, nbytes, err) < 0 || write_zeros(w, pad_to(nbytes, w->alignment) - nbytes, err) < 0) {
        return -1;
    }
    w->next_data++;
    return 0;
}

int oxl_gguf_writer_finish(oxl_gguf_writer *w, oxl_error *err) {
    if (!w->began || w->finished) {
        return oxl_err_set(err, "gguf writer: finish without a header");
    }
    if (w->next_data != w->n_t) {
        return oxl_err_set(err, "%s: only %lld of %lld tensors written", w->path, (long long)w->next_data,
                           (long long)w->n_t);
    }
    const int flush_rc = fflush(w->f);
    const int close_rc = fclose(w->f);
    w->f = NULL;
    if (flush_rc != 0 || close_rc != 0) {
        return oxl_err_set(err, "%s: write failed at close (%llu bytes)", w->tmp_path, (unsigned long long)w->written);
    }
    if (rename(w->tmp_path, w->path) != 0) {
        return oxl_err_set(err, "%s: cannot rename onto %s", w->tmp_path, w->path);
    }
    w->finished = true;
    return 0;
}

uint64_t oxl_gguf_writer_bytes_written(const oxl_gguf_writer *w) { return w->written; }

int oxl_gguf_writer_set_u16(oxl_gguf_writer *w, const char *key, uint16_t v, oxl_error *err) {
    return set_scalar(w, key, OXL_GGUF_UINT16, v, err);
}

uint64_t oxl_gguf_writer_meta_size(const oxl_gguf_writer *w) {
    uint64_t n = 4 + 4 + 8 + 8;
    for (int64_t i = 0; i < w->n_kv; i++) {
        n += w->kv[i].bytes.n;
    }
    for (int64_t i = 0; i < w->n_t; i++) {
        n += 8 + strlen(w->t[i].name) + 4 + 8 * (uint64_t)w->t[i].n_dims + 4 + 8;
    }
    size_t alignment = OXL_GGUF_DEFAULT_ALIGNMENT;
    const int64_t k = find_kv(w, "general.alignment");
    if (k >= 0) {
        const oxl_gw_buf *b = &w->kv[k].bytes;
        const size_t at = 8 + strlen(w->kv[k].key);
        uint32_t type = 0, v = 0;
        for (int j = 0; j < 4; j++) {
            type |= (uint32_t)b->p[at + j] << (8 * j);
            v |= b->n >= at + 8 ? (uint32_t)b->p[at + 4 + j] << (8 * j) : 0;
        }
        if (type == OXL_GGUF_UINT32 && v != 0 && (v & (v - 1)) == 0) {
            alignment = v;
        }
    }
    return pad_to(n, alignment);
}
