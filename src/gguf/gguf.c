/* GGUF v2/v3 reader: parses and validates a whole file before handing out any of it.
 *
 * Acceptance rules follow ggml/src/gguf.cpp (gguf_init_from_file) where a file can differ:
 * magic "GGUF"; version 2 or 3 (0 and 1 rejected, a version whose low 16 bits are zero is a
 * byte-swapped big-endian file); non-negative tensor and key counts; non-empty, unique keys;
 * strings of at most 1 GiB and arrays of at most 2^30 elements; `general.alignment` a uint32
 * power of two (default 32); tensor names shorter than 64 bytes (GGML_MAX_NAME) and unique;
 * at most 4 dimensions, none negative, the element count below INT64_MAX and the byte size
 * representable in size_t; a known type whose block size divides ne0; the data section at the
 * first aligned offset after the tensor infos (right after them when there are no tensors).
 *
 * Differences from ggml: two rules are looser, where the specification allows more than ggml
 * reads, and the rest stricter, where ggml would hand out unusable data:
 * - arrays of arrays are accepted (the specification allows them; ggml refuses), nested at most
 *   OXL_GGUF_MAX_NESTING deep;
 * - ggml wants tensor offsets to be exactly the running sum of the padded tensor sizes; this
 *   reader only requires each offset to be aligned, inside the file and not overlapping another
 *   tensor, which every file ggml accepts satisfies;
 * - n_dims must be 1..4 (ggml also accepts 0, a scalar);
 * - keys and tensor names must not contain NUL bytes (they could not be looked up);
 * - tensor data must lie inside the file (llama.cpp's model loader checks this later).
 *
 * Counts are checked against the bytes that remain before anything proportional to them is
 * allocated: a key-value pair needs at least 13 bytes, a tensor info 32, an array element at
 * least its own size (8 for a string, 12 for an array), so no allocation exceeds a small multiple
 * of the file size.
 */
#include "gguf.h"

#include "errors.h"
#include "oxl_types.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if !defined(__wasi__)
#include <sys/mman.h>
#endif
#include <unistd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader decodes little-endian values by copying them: little-endian hosts only"
#endif

#define OXL_GGUF_MAGIC "GGUF"
#define OXL_GGUF_MAX_VERSION 3
#define OXL_GGUF_MAX_STRING_LEN ((uint64_t)1 << 30) /* ggml's GGUF_MAX_STRING_LENGTH */
#define OXL_GGUF_MAX_ARRAY_LEN ((uint64_t)1 << 30)  /* ggml's GGUF_MAX_ARRAY_ELEMENTS */
#define OXL_GGUF_MAX_NAME 64                        /* ggml's GGML_MAX_NAME, including the NUL */
#define OXL_GGUF_MAX_NESTING 8                      /* arrays of arrays, at most this deep */
#define OXL_GGUF_MIN_KV_BYTES 13                    /* key length 8 + type 4 + a 1-byte value */
#define OXL_GGUF_MIN_TENSOR_BYTES 32                /* name length 8 + n_dims 4 + ne 8 + type 4 + offset 8 */

/* ---- the parsed file ------------------------------------------------------------------------- */

typedef struct oxl_gguf_kv {
    char *key; /* NUL-terminated copy */
    size_t key_len;
    size_t key_pos; /* file offset of the key's length field */
    size_t val_pos; /* file offset of the value (after the type, or the array header) */
    oxl_gguf_vtype type;
    uint64_t bits; /* scalar: the value's little-endian bytes, zero-extended */
    char *str;     /* STRING: NUL-terminated copy */
    size_t str_len;
    oxl_gguf_vtype arr_type; /* ARRAY: element type */
    uint64_t arr_n;          /* ARRAY: element count */
    const uint8_t *arr_data; /* ARRAY: first element, inside the file */
    uint64_t *arr_str_pos;   /* ARRAY of STRING: file offset of each element's length field */
} oxl_gguf_kv;

/* Open-addressing hash set of names -> index (keys, tensor names). */
typedef struct oxl_gguf_names {
    int64_t *slot; /* index + 1; 0 = empty */
    size_t mask;
} oxl_gguf_names;

struct oxl_gguf {
    char *path;
    const uint8_t *base;
    size_t size;
    void *map; /* the file's bytes when oxl_gguf_open loaded them (mapped, or read on WASI) */
    uint32_t version;
    size_t alignment;
    size_t data_offset;
    int64_t n_kv;
    oxl_gguf_kv *kv;
    oxl_gguf_names kv_names;
    int64_t n_tensors;
    oxl_gguf_tensor *tensors;
    oxl_gguf_names tensor_names;
    oxl_gguf **parts; /* the further files of a split model (oxl_gguf_add_part), owned */
    int n_parts;
    void *owned_buf; /* freed on close (oxl_gguf_take_buffer) */
};

/* ---- reading with bounds checks ------------------------------------------------------------- */

typedef struct oxl_gguf_rd {
    const uint8_t *b;
    size_t size;
    size_t pos;
    const char *name; /* file name for messages */
    oxl_error *err;
} oxl_gguf_rd;

static int rd_fail(oxl_gguf_rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rd_fail(oxl_gguf_rd *r, const char *fmt, ...) {
    char msg[OXL_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return oxl_err_set(r->err, "%s: %s", r->name, msg);
}

static size_t rd_left(const oxl_gguf_rd *r) { return r->size - r->pos; }

/* Fails unless n more bytes are available. The field is "<ctx> <what>" (ctx may be empty). */
static int rd_need(oxl_gguf_rd *r, uint64_t n, const char *ctx, const char *what) {
    if (n <= rd_left(r))
        return 0;
    return rd_fail(r, "%s%s%s at byte %zu: file truncated (needs %" PRIu64 " bytes, %zu remain)", ctx, *ctx ? " " : "",
                   what, r->pos, n, rd_left(r));
}

static uint32_t rd_u32(oxl_gguf_rd *r) {
    uint32_t v;
    memcpy(&v, r->b + r->pos, 4);
    r->pos += 4;
    return v;
}

static uint64_t rd_u64(oxl_gguf_rd *r) {
    uint64_t v;
    memcpy(&v, r->b + r->pos, 8);
    r->pos += 8;
    return v;
}

/* Reads a string header and checks the bytes are in the file; *s points into the file. */
static int rd_str(oxl_gguf_rd *r, const char *ctx, const char *what, const uint8_t **s, uint64_t *len) {
    if (rd_need(r, 8, ctx, what))
        return -1;
    size_t at = r->pos;
    uint64_t n = rd_u64(r);
    if (n > rd_left(r))
        return rd_fail(r, "%s%s%s length %" PRIu64 " at byte %zu: runs past the end of the file (%zu bytes remain)",
                       ctx, *ctx ? " " : "", what, n, at, rd_left(r));
    if (n > OXL_GGUF_MAX_STRING_LEN)
        return rd_fail(r, "%s%s%s length %" PRIu64 " at byte %zu: longer than the limit of %" PRIu64 " bytes", ctx,
                       *ctx ? " " : "", what, n, at, OXL_GGUF_MAX_STRING_LEN);
    *s = r->b + r->pos;
    *len = n;
    r->pos += (size_t)n;
    return 0;
}

static char *dup_bytes(const uint8_t *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* Bytes of a fixed-size value type; 0 for STRING, ARRAY and unknown types. */
static size_t vtype_size(uint32_t t) {
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

/* Least bytes one element of type t occupies (its count check before any per-element work). */
static size_t vtype_min_size(uint32_t t) {
    if (t == OXL_GGUF_STRING)
        return 8;
    if (t == OXL_GGUF_ARRAY)
        return 12;
    return vtype_size(t);
}

const char *oxl_gguf_vtype_name(oxl_gguf_vtype t) {
    static const char *const names[OXL_GGUF_VTYPE_COUNT] = {
        "uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
        "bool",  "string", "array",  "uint64", "int64",  "float64",
    };
    return (unsigned)t < OXL_GGUF_VTYPE_COUNT ? names[t] : "unknown";
}

/* Reads an array header (element type, count) at r->pos and checks the count against the bytes
 * left. ctx names the key (and element) for messages. */
static int rd_array_header(oxl_gguf_rd *r, const char *ctx, int depth, uint32_t *type, uint64_t *n) {
    if (rd_need(r, 12, ctx, "array header"))
        return -1;
    size_t at = r->pos;
    *type = rd_u32(r);
    if (*type >= OXL_GGUF_VTYPE_COUNT)
        return rd_fail(r, "%s array element type %" PRIu32 " at byte %zu: unknown value type", ctx, *type, at);
    if (*type == OXL_GGUF_ARRAY && depth + 1 >= OXL_GGUF_MAX_NESTING)
        return rd_fail(r, "%s array element type at byte %zu: arrays nested deeper than %d levels", ctx, at,
                       OXL_GGUF_MAX_NESTING);
    *n = rd_u64(r);
    if (*n > OXL_GGUF_MAX_ARRAY_LEN)
        return rd_fail(r, "%s array length %" PRIu64 " at byte %zu: more than the limit of %" PRIu64 " elements", ctx,
                       *n, at + 4, OXL_GGUF_MAX_ARRAY_LEN);
    if (*n > rd_left(r) / vtype_min_size(*type))
        return rd_fail(r,
                       "%s array length %" PRIu64 " at byte %zu: %s elements need at least %zu bytes each, %zu remain",
                       ctx, *n, at + 4, oxl_gguf_vtype_name((oxl_gguf_vtype)*type), vtype_min_size(*type), rd_left(r));
    return 0;
}

/* Walks n elements of type t (validating strings and nested arrays). When pos is non-NULL, the
 * file offset of each element is stored there (used for string arrays). */
static int rd_skip_elems(oxl_gguf_rd *r, const char *ctx, uint32_t t, uint64_t n, int depth, uint64_t *pos) {
    if (t != OXL_GGUF_STRING && t != OXL_GGUF_ARRAY) {
        /* fixed-size: the count check already proved the bytes are there */
        r->pos += (size_t)n * vtype_size(t);
        return 0;
    }
    char ectx[OXL_ERROR_MSG_MAX / 2];
    for (uint64_t j = 0; j < n; j++) {
        if (pos)
            pos[j] = r->pos;
        if (t == OXL_GGUF_STRING) {
            const uint8_t *s;
            uint64_t len;
            if (r->size - r->pos >= 8) {
                /* fast path: the common case needs no message context */
                uint64_t l;
                memcpy(&l, r->b + r->pos, 8);
                if (l <= OXL_GGUF_MAX_STRING_LEN && l <= r->size - r->pos - 8) {
                    r->pos += 8 + (size_t)l;
                    continue;
                }
            }
            snprintf(ectx, sizeof ectx, "%.200s element %" PRIu64, ctx, j);
            if (rd_str(r, ectx, "string", &s, &len))
                return -1;
        } else {
            uint32_t et;
            uint64_t en;
            snprintf(ectx, sizeof ectx, "%.200s element %" PRIu64, ctx, j);
            if (rd_array_header(r, ectx, depth + 1, &et, &en))
                return -1;
            if (rd_skip_elems(r, ectx, et, en, depth + 1, NULL))
                return -1;
        }
    }
    return 0;
}

/* ---- name tables ----------------------------------------------------------------------------- */

static uint64_t hash_name(const char *s, size_t n) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211u;
    return h;
}

static int names_init(oxl_gguf_names *t, int64_t n) {
    size_t cap = 16;
    while (cap < (size_t)n * 2)
        cap *= 2;
    t->slot = calloc(cap, sizeof *t->slot);
    t->mask = cap - 1;
    return t->slot ? 0 : -1;
}

/* Finds name among the first entries (name_of(ctx, i) gives entry i); -1 when absent. With
 * insert >= 0, adds that index when absent. */
typedef const char *(*name_of_fn)(const oxl_gguf *g, int64_t i, size_t *len);

static int64_t names_find(const oxl_gguf_names *t, const oxl_gguf *g, name_of_fn name_of, const char *s, size_t n,
                          int64_t insert) {
    if (!t->slot)
        return -1;
    for (size_t h = hash_name(s, n) & t->mask;; h = (h + 1) & t->mask) {
        int64_t v = t->slot[h];
        if (v == 0) {
            if (insert >= 0)
                t->slot[h] = insert + 1;
            return -1;
        }
        size_t len;
        const char *other = name_of(g, v - 1, &len);
        if (len == n && memcmp(other, s, n) == 0)
            return v - 1;
    }
}

static const char *kv_name_of(const oxl_gguf *g, int64_t i, size_t *len) {
    *len = g->kv[i].key_len;
    return g->kv[i].key;
}

static const char *tensor_name_of(const oxl_gguf *g, int64_t i, size_t *len) {
    *len = strlen(g->tensors[i].name);
    return g->tensors[i].name;
}

/* ---- parsing --------------------------------------------------------------------------------- */

static int parse_header(oxl_gguf *g, oxl_gguf_rd *r, int64_t *n_tensors, int64_t *n_kv) {
    if (rd_need(r, 4, "", "magic"))
        return -1;
    if (memcmp(r->b, OXL_GGUF_MAGIC, 4) != 0) {
        char m[4];
        for (int i = 0; i < 4; i++)
            m[i] = r->b[i] >= 0x20 && r->b[i] < 0x7f ? (char)r->b[i] : '?';
        if (memcmp(r->b, "FUGG", 4) == 0)
            return rd_fail(r, "magic 'FUGG' at byte 0: byte-swapped magic; big-endian GGUF files are not supported");
        return rd_fail(r, "magic '%.4s' at byte 0: not a GGUF file (expected 'GGUF')", m);
    }
    r->pos = 4;
    if (rd_need(r, 4, "", "version"))
        return -1;
    g->version = rd_u32(r);
    if (g->version == 0)
        return rd_fail(r, "version 0 at byte 4: invalid GGUF version");
    if ((g->version & 0xffffu) == 0)
        return rd_fail(r,
                       "version 0x%08" PRIx32 " at byte 4: the file is big-endian (byte-swapped version %" PRIu32
                       "); only little-endian GGUF files are supported",
                       g->version, __builtin_bswap32(g->version));
    if (g->version == 1)
        return rd_fail(r, "version 1 at byte 4: GGUF v1 is no longer supported (convert the file to v3)");
    if (g->version > OXL_GGUF_MAX_VERSION)
        return rd_fail(r, "version %" PRIu32 " at byte 4: newer than the supported versions 2 and 3", g->version);

    if (rd_need(r, 8, "", "tensor count"))
        return -1;
    *n_tensors = (int64_t)rd_u64(r);
    if (rd_need(r, 8, "", "key-value count"))
        return -1;
    *n_kv = (int64_t)rd_u64(r);
    if (*n_tensors < 0)
        return rd_fail(r, "tensor count %" PRId64 " at byte 8: negative", *n_tensors);
    if (*n_kv < 0)
        return rd_fail(r, "key-value count %" PRId64 " at byte 16: negative", *n_kv);
    if ((uint64_t)*n_kv > rd_left(r) / OXL_GGUF_MIN_KV_BYTES)
        return rd_fail(r,
                       "key-value count %" PRId64 " at byte 16: larger than the file can hold (%zu bytes remain, "
                       "a pair needs at least %d)",
                       *n_kv, rd_left(r), OXL_GGUF_MIN_KV_BYTES);
    if ((uint64_t)*n_tensors > (rd_left(r) - (size_t)*n_kv * OXL_GGUF_MIN_KV_BYTES) / OXL_GGUF_MIN_TENSOR_BYTES)
        return rd_fail(r,
                       "tensor count %" PRId64 " at byte 8: larger than the file can hold (%zu bytes remain, a "
                       "tensor info needs at least %d)",
                       *n_tensors, rd_left(r), OXL_GGUF_MIN_TENSOR_BYTES);
    return 0;
}

static int parse_kv(oxl_gguf *g, oxl_gguf_rd *r, int64_t i) {
    oxl_gguf_kv *kv = &g->kv[i];
    char ctx[OXL_ERROR_MSG_MAX / 2];
    snprintf(ctx, sizeof ctx, "key %" PRId64, i);

    kv->key_pos = r->pos;
    const uint8_t *s;
    uint64_t len;
    if (rd_str(r, ctx, "name", &s, &len))
        return -1;
    if (len == 0)
        return rd_fail(r, "key %" PRId64 " name at byte %zu: empty", i, kv->key_pos);
    if (memchr(s, 0, (size_t)len))
        return rd_fail(r, "key %" PRId64 " name at byte %zu: contains a NUL byte", i, kv->key_pos);
    kv->key = dup_bytes(s, (size_t)len);
    if (!kv->key)
        return rd_fail(r, "key %" PRId64 " at byte %zu: out of memory", i, kv->key_pos);
    kv->key_len = (size_t)len;
    int64_t prev = names_find(&g->kv_names, g, kv_name_of, kv->key, kv->key_len, i);
    if (prev >= 0)
        return rd_fail(r, "key %" PRId64 " ('%s') at byte %zu: duplicate of key %" PRId64 " at byte %zu", i, kv->key,
                       kv->key_pos, prev, g->kv[prev].key_pos);
    snprintf(ctx, sizeof ctx, "key %" PRId64 " ('%.200s')", i, kv->key);

    if (rd_need(r, 4, ctx, "value type"))
        return -1;
    size_t type_pos = r->pos;
    uint32_t t = rd_u32(r);
    if (t >= OXL_GGUF_VTYPE_COUNT)
        return rd_fail(r, "%s value type %" PRIu32 " at byte %zu: unknown value type", ctx, t, type_pos);
    kv->type = (oxl_gguf_vtype)t;
    kv->val_pos = r->pos;

    if (t == OXL_GGUF_STRING) {
        if (rd_str(r, ctx, "string value", &s, &len))
            return -1;
        kv->str = dup_bytes(s, (size_t)len);
        if (!kv->str)
            return rd_fail(r, "%s at byte %zu: out of memory", ctx, kv->val_pos);
        kv->str_len = (size_t)len;
        return 0;
    }
    if (t == OXL_GGUF_ARRAY) {
        uint32_t et;
        if (rd_array_header(r, ctx, 0, &et, &kv->arr_n))
            return -1;
        kv->arr_type = (oxl_gguf_vtype)et;
        kv->val_pos = r->pos;
        kv->arr_data = r->b + r->pos;
        if (et == OXL_GGUF_STRING) {
            /* the count check bounds this table by the file size (8 bytes per element) */
            kv->arr_str_pos = malloc((size_t)(kv->arr_n ? kv->arr_n : 1) * sizeof *kv->arr_str_pos);
            if (!kv->arr_str_pos)
                return rd_fail(r, "%s at byte %zu: out of memory", ctx, kv->val_pos);
        }
        return rd_skip_elems(r, ctx, et, kv->arr_n, 0, kv->arr_str_pos);
    }
    size_t n = vtype_size(t);
    if (rd_need(r, n, ctx, "value"))
        return -1;
    memcpy(&kv->bits, r->b + r->pos, n); /* little-endian host: low bytes */
    r->pos += n;
    return 0;
}

static int parse_alignment(oxl_gguf *g, oxl_gguf_rd *r) {
    g->alignment = OXL_GGUF_DEFAULT_ALIGNMENT;
    int64_t i = oxl_gguf_find_key(g, "general.alignment");
    if (i < 0)
        return 0;
    const oxl_gguf_kv *kv = &g->kv[i];
    if (kv->type != OXL_GGUF_UINT32)
        return rd_fail(r, "key %" PRId64 " ('general.alignment') value at byte %zu: type %s, must be uint32", i,
                       kv->val_pos, oxl_gguf_vtype_name(kv->type));
    uint32_t a = (uint32_t)kv->bits;
    if (a == 0 || (a & (a - 1)) != 0)
        return rd_fail(r, "key %" PRId64 " ('general.alignment') value %" PRIu32 " at byte %zu: not a power of two", i,
                       a, kv->val_pos);
    g->alignment = a;
    return 0;
}

static int parse_tensor_info(oxl_gguf *g, oxl_gguf_rd *r, int64_t i, size_t *offset_pos) {
    oxl_gguf_tensor *t = &g->tensors[i];
    char ctx[OXL_ERROR_MSG_MAX / 2];
    snprintf(ctx, sizeof ctx, "tensor %" PRId64, i);

    size_t name_pos = r->pos;
    const uint8_t *s;
    uint64_t len;
    if (rd_str(r, ctx, "name", &s, &len))
        return -1;
    if (len >= OXL_GGUF_MAX_NAME)
        return rd_fail(r, "tensor %" PRId64 " name length %" PRIu64 " at byte %zu: longer than %d bytes", i, len,
                       name_pos, OXL_GGUF_MAX_NAME - 1);
    if (memchr(s, 0, (size_t)len))
        return rd_fail(r, "tensor %" PRId64 " name at byte %zu: contains a NUL byte", i, name_pos);
    char *name = dup_bytes(s, (size_t)len);
    if (!name)
        return rd_fail(r, "tensor %" PRId64 " at byte %zu: out of memory", i, name_pos);
    t->name = name;
    int64_t prev = names_find(&g->tensor_names, g, tensor_name_of, name, (size_t)len, i);
    if (prev >= 0)
        return rd_fail(r, "tensor %" PRId64 " ('%s') name at byte %zu: duplicate of tensor %" PRId64, i, name, name_pos,
                       prev);
    snprintf(ctx, sizeof ctx, "tensor %" PRId64 " ('%s')", i, name);

    if (rd_need(r, 4, ctx, "n_dims"))
        return -1;
    size_t at = r->pos;
    t->n_dims = rd_u32(r);
    if (t->n_dims < 1 || t->n_dims > OXL_GGUF_MAX_DIMS)
        return rd_fail(r, "%s n_dims = %" PRIu32 " at byte %zu: must be 1..%d", ctx, t->n_dims, at, OXL_GGUF_MAX_DIMS);
    if (rd_need(r, (uint64_t)t->n_dims * 8, ctx, "dimensions"))
        return -1;
    size_t dims_pos = r->pos;
    for (uint32_t j = 0; j < OXL_GGUF_MAX_DIMS; j++) {
        t->ne[j] = 1;
        if (j >= t->n_dims)
            continue;
        at = r->pos;
        t->ne[j] = (int64_t)rd_u64(r);
        if (t->ne[j] < 0)
            return rd_fail(r, "%s dimension %" PRIu32 " = %" PRId64 " at byte %zu: negative", ctx, j, t->ne[j], at);
    }
    const int64_t *ne = t->ne;
    /* ggml's representability test, kept as written there (it also rejects a product of exactly
     * INT64_MAX); a zero dimension makes the tensor empty and trivially representable */
    if (ne[0] > 0 && ne[1] > 0 && ne[2] > 0 && ne[3] > 0 &&
        (INT64_MAX / ne[1] <= ne[0] || INT64_MAX / ne[2] <= ne[0] * ne[1] ||
         INT64_MAX / ne[3] <= ne[0] * ne[1] * ne[2]))
        return rd_fail(r,
                       "%s shape (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ") at byte %zu: element count "
                       "overflows int64",
                       ctx, ne[0], ne[1], ne[2], ne[3], dims_pos);

    if (rd_need(r, 4, ctx, "type"))
        return -1;
    at = r->pos;
    t->type = rd_u32(r);
    const oxl_type_traits *tr = oxl_type_traits_get(t->type);
    if (!tr || tr->blck_size <= 0 || tr->type_size == 0)
        return rd_fail(r, "%s type id %" PRIu32 " at byte %zu: unknown ggml type", ctx, t->type, at);
    int64_t blck = (int64_t)tr->blck_size;
    if (ne[0] % blck != 0)
        return rd_fail(
            r, "%s dimension 0 = %" PRId64 " at byte %zu: not a multiple of the block size %" PRId64 " of type %s", ctx,
            ne[0], dims_pos, blck, tr->name);
    /* an empty tensor has no bytes, however large its other dimensions */
    bool empty = ne[0] == 0 || ne[1] == 0 || ne[2] == 0 || ne[3] == 0;
    uint64_t nblocks = empty ? 0 : (uint64_t)(ne[0] / blck) * (uint64_t)(ne[1] * ne[2] * ne[3]);
    if (nblocks > SIZE_MAX / tr->type_size)
        return rd_fail(r,
                       "%s shape (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ") at byte %zu: size in bytes "
                       "of type %s overflows size_t",
                       ctx, ne[0], ne[1], ne[2], ne[3], dims_pos, tr->name);
    t->nbytes = (size_t)nblocks * tr->type_size;

    if (rd_need(r, 8, ctx, "offset"))
        return -1;
    *offset_pos = r->pos;
    t->offset = rd_u64(r);
    return 0;
}

typedef struct oxl_gguf_span {
    uint64_t offset, end;
    int64_t index;
} oxl_gguf_span;

static int cmp_span(const void *a, const void *b) {
    const oxl_gguf_span *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Places the data section and checks every tensor's data: aligned, inside the file, disjoint. */
static int place_tensor_data(oxl_gguf *g, oxl_gguf_rd *r, const size_t *offset_pos) {
    size_t end = r->pos;
    if (g->n_tensors > 0) {
        size_t pad = (g->alignment - end % g->alignment) % g->alignment;
        if (pad > r->size - end)
            return rd_fail(r,
                           "data section at byte %zu (tensor infos end at byte %zu, alignment %zu): past the end "
                           "of the file (%zu bytes)",
                           end + pad, end, g->alignment, r->size);
        end += pad;
    }
    g->data_offset = end;
    size_t avail = r->size - end;

    for (int64_t i = 0; i < g->n_tensors; i++) {
        oxl_gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment != 0)
            return rd_fail(r,
                           "tensor %" PRId64 " ('%s') offset %" PRIu64 " at byte %zu: not a multiple of the "
                           "alignment %zu",
                           i, t->name, t->offset, offset_pos[i], g->alignment);
        if (t->offset > avail || t->nbytes > avail - t->offset)
            return rd_fail(r,
                           "tensor %" PRId64 " ('%s') offset %" PRIu64 " at byte %zu: its %zu bytes of data end past "
                           "the end of the file (data section at byte %zu, %zu bytes long)",
                           i, t->name, t->offset, offset_pos[i], t->nbytes, g->data_offset, avail);
        t->data = g->base + g->data_offset + t->offset;
    }

    /* overlap: sort the non-empty tensors by offset; each must start at or after the furthest end
     * seen so far */
    oxl_gguf_span *span = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *span);
    if (!span)
        return rd_fail(r, "tensor infos: out of memory");
    size_t n = 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const oxl_gguf_tensor *t = &g->tensors[i];
        if (t->nbytes > 0)
            span[n++] = (oxl_gguf_span){t->offset, t->offset + t->nbytes, i};
    }
    qsort(span, n, sizeof *span, cmp_span);
    int rc = 0;
    size_t last = 0;
    for (size_t k = 1; k < n; k++) {
        if (span[k].offset < span[last].end) {
            const oxl_gguf_tensor *t = &g->tensors[span[k].index], *p = &g->tensors[span[last].index];
            rc = rd_fail(r,
                         "tensor %" PRId64 " ('%s') offset %" PRIu64 " at byte %zu: data [%" PRIu64 ", %" PRIu64
                         ") overlaps tensor %" PRId64 " ('%s') data [%" PRIu64 ", %" PRIu64 ")",
                         span[k].index, t->name, t->offset, offset_pos[span[k].index], span[k].offset, span[k].end,
                         span[last].index, p->name, span[last].offset, span[last].end);
            break;
        }
        if (span[k].end > span[last].end)
            last = k;
    }
    free(span);
    return rc;
}

static int parse(oxl_gguf *g, oxl_error *err) {
    oxl_gguf_rd r = {.b = g->base, .size = g->size, .pos = 0, .name = g->path, .err = err};
    int64_t n_tensors = 0, n_kv = 0;
    if (parse_header(g, &r, &n_tensors, &n_kv))
        return -1;

    /* counts were checked against the bytes remaining: these allocations are bounded by the file */
    g->kv = calloc((size_t)(n_kv ? n_kv : 1), sizeof *g->kv);
    if (!g->kv || names_init(&g->kv_names, n_kv))
        return rd_fail(&r, "key-value count %" PRId64 ": out of memory", n_kv);
    for (int64_t i = 0; i < n_kv; i++) {
        g->n_kv = i + 1; /* owned strings of pair i are freed on error */
        if (parse_kv(g, &r, i))
            return -1;
    }
    if (parse_alignment(g, &r))
        return -1;

    if ((uint64_t)n_tensors > rd_left(&r) / OXL_GGUF_MIN_TENSOR_BYTES)
        return rd_fail(&r,
                       "tensor count %" PRId64 " at byte 8: larger than the file can hold (tensor infos start at "
                       "byte %zu, %zu bytes remain, a tensor info needs at least %d)",
                       n_tensors, r.pos, rd_left(&r), OXL_GGUF_MIN_TENSOR_BYTES);
    g->tensors = calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *g->tensors);
    size_t *offset_pos = malloc((size_t)(n_tensors ? n_tensors : 1) * sizeof *offset_pos);
    if (!g->tensors || !offset_pos || names_init(&g->tensor_names, n_tensors)) {
        free(offset_pos);
        return rd_fail(&r, "tensor count %" PRId64 ": out of memory", n_tensors);
    }
    int rc = 0;
    for (int64_t i = 0; i < n_tensors && rc == 0; i++) {
        g->n_tensors = i + 1;
        rc = parse_tensor_info(g, &r, i, &offset_pos[i]);
    }
    if (rc == 0)
        rc = place_tensor_data(g, &r, offset_pos);
    free(offset_pos);
    return rc;
}

/* ---- opening and closing --------------------------------------------------------------------- */

static oxl_gguf *gguf_new(const void *data, size_t size, const char *name, oxl_error *err) {
    oxl_gguf *g = calloc(1, sizeof *g);
    if (g)
        g->path = dup_bytes((const uint8_t *)name, strlen(name));
    if (!g || !g->path) {
        free(g);
        oxl_err_set(err, "%s: out of memory", name);
        return NULL;
    }
    g->base = data;
    g->size = size;
    return g;
}

oxl_gguf *oxl_gguf_open_memory(const void *data, size_t size, const char *name, oxl_error *err) {
    if (!name)
        name = "<memory>";
    if (!data && size > 0) {
        oxl_err_set(err, "%s: no buffer given for %zu bytes", name, size);
        return NULL;
    }
    static const uint8_t empty[1];
    oxl_gguf *g = gguf_new(data ? data : empty, size, name, err);
    if (g && parse(g, err)) {
        oxl_gguf_close(g);
        return NULL;
    }
    return g;
}

#if !defined(__wasi__)
/* Maps size bytes of fd read-only. */
static int file_load(int fd, size_t size, const char *path, void **out, oxl_error *err) {
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return oxl_err_set(err, "%s: cannot map %zu bytes: %s", path, size, strerror(errno));
    *out = p;
    return 0;
}

static void file_unload(void *p, size_t size) {
    if (p)
        munmap(p, size);
}
#else
/* WASI has no mmap: the file is read into memory. */
static int file_load(int fd, size_t size, const char *path, void **out, oxl_error *err) {
    uint8_t *p = malloc(size);
    if (!p)
        return oxl_err_set(err, "%s: out of memory reading %zu bytes", path, size);
    for (size_t done = 0; done < size;) {
        ssize_t n = read(fd, p + done, size - done);
        if (n <= 0) {
            free(p);
            return oxl_err_set(err, "%s: read failed at byte %zu: %s", path, done,
                               n < 0 ? strerror(errno) : "end of file");
        }
        done += (size_t)n;
    }
    *out = p;
    return 0;
}

static void file_unload(void *p, size_t size) { free(p); }
#endif

oxl_gguf *oxl_gguf_open(const char *path, oxl_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        oxl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        oxl_err_set(err, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        oxl_err_set(err, "%s: file of %lld bytes does not fit in memory", path, (long long)st.st_size);
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    void *map = NULL;
    if (size > 0 && file_load(fd, size, path, &map, err)) {
        close(fd);
        return NULL;
    }
    close(fd);
    static const uint8_t empty[1];
    oxl_gguf *g = gguf_new(map ? map : empty, size, path, err);
    if (!g) {
        file_unload(map, size);
        return NULL;
    }
    g->map = map;
    if (parse(g, err)) {
        oxl_gguf_close(g);
        return NULL;
    }
    return g;
}

void oxl_gguf_close(oxl_gguf *g) {
    if (!g)
        return;
    for (int64_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].str);
        free(g->kv[i].arr_str_pos);
    }
    free(g->kv);
    free(g->kv_names.slot);
    for (int64_t i = 0; i < g->n_tensors; i++)
        free((char *)g->tensors[i].name);
    free(g->tensors);
    free(g->tensor_names.slot);
    for (int i = 0; i < g->n_parts; i++)
        oxl_gguf_close(g->parts[i]);
    free(g->parts);
    free(g->owned_buf);
    file_unload(g->map, g->size);
    free(g->path);
    free(g);
}

/* ---- file-level accessors -------------------------------------------------------------------- */

uint32_t oxl_gguf_version(const oxl_gguf *g) { return g->version; }
size_t oxl_gguf_alignment(const oxl_gguf *g) { return g->alignment; }
size_t oxl_gguf_data_offset(const oxl_gguf *g) { return g->data_offset; }
size_t oxl_gguf_file_size(const oxl_gguf *g) { return g->size; }
const char *oxl_gguf_path(const oxl_gguf *g) { return g->path; }

/* ---- metadata -------------------------------------------------------------------------------- */

static const oxl_gguf_kv *kv_at(const oxl_gguf *g, int64_t i) { return i >= 0 && i < g->n_kv ? &g->kv[i] : NULL; }

int64_t oxl_gguf_n_kv(const oxl_gguf *g) { return g->n_kv; }

int64_t oxl_gguf_find_key(const oxl_gguf *g, const char *key) {
    return names_find(&g->kv_names, g, kv_name_of, key, strlen(key), -1);
}

const char *oxl_gguf_key(const oxl_gguf *g, int64_t i) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    return kv ? kv->key : NULL;
}

/* OXL_GGUF_VTYPE_COUNT for an index out of range. */
oxl_gguf_vtype oxl_gguf_kv_type(const oxl_gguf *g, int64_t i) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    return kv ? kv->type : OXL_GGUF_VTYPE_COUNT;
}

/* The integer value of a scalar integer key, as signed (when it fits) and unsigned (when >= 0). */
static bool kv_integer(const oxl_gguf_kv *kv, int64_t *s, bool *s_ok, uint64_t *u, bool *u_ok) {
    uint64_t b = kv->bits;
    switch (kv->type) {
    case OXL_GGUF_UINT8:
    case OXL_GGUF_UINT16:
    case OXL_GGUF_UINT32:
    case OXL_GGUF_UINT64:
        *u = b, *u_ok = true;
        *s = (int64_t)b, *s_ok = b <= (uint64_t)INT64_MAX;
        return true;
    case OXL_GGUF_INT8: *s = (int8_t)b; break;
    case OXL_GGUF_INT16: *s = (int16_t)b; break;
    case OXL_GGUF_INT32: *s = (int32_t)b; break;
    case OXL_GGUF_INT64: *s = (int64_t)b; break;
    default: return false;
    }
    *s_ok = true;
    *u = (uint64_t)*s, *u_ok = *s >= 0;
    return true;
}

bool oxl_gguf_kv_int(const oxl_gguf *g, int64_t i, int64_t *out) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    int64_t s;
    uint64_t u;
    bool s_ok, u_ok;
    if (!kv || !kv_integer(kv, &s, &s_ok, &u, &u_ok) || !s_ok)
        return false;
    *out = s;
    return true;
}

bool oxl_gguf_kv_uint(const oxl_gguf *g, int64_t i, uint64_t *out) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    int64_t s;
    uint64_t u;
    bool s_ok, u_ok;
    if (!kv || !kv_integer(kv, &s, &s_ok, &u, &u_ok) || !u_ok)
        return false;
    *out = u;
    return true;
}

bool oxl_gguf_kv_float(const oxl_gguf *g, int64_t i, double *out) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    if (!kv)
        return false;
    if (kv->type == OXL_GGUF_FLOAT32) {
        float f;
        uint32_t b = (uint32_t)kv->bits;
        memcpy(&f, &b, 4);
        *out = f;
        return true;
    }
    if (kv->type == OXL_GGUF_FLOAT64) {
        memcpy(out, &kv->bits, 8);
        return true;
    }
    return false;
}

/* Any non-zero byte is true, as in ggml. */
bool oxl_gguf_kv_bool(const oxl_gguf *g, int64_t i, bool *out) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    if (!kv || kv->type != OXL_GGUF_BOOL)
        return false;
    *out = kv->bits != 0;
    return true;
}

const char *oxl_gguf_kv_str(const oxl_gguf *g, int64_t i, size_t *len) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    if (!kv || kv->type != OXL_GGUF_STRING)
        return NULL;
    if (len)
        *len = kv->str_len;
    return kv->str;
}

/* OXL_GGUF_VTYPE_COUNT when key i is not an array. */
oxl_gguf_vtype oxl_gguf_arr_type(const oxl_gguf *g, int64_t i) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    return kv && kv->type == OXL_GGUF_ARRAY ? kv->arr_type : OXL_GGUF_VTYPE_COUNT;
}

uint64_t oxl_gguf_arr_n(const oxl_gguf *g, int64_t i) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    return kv && kv->type == OXL_GGUF_ARRAY ? kv->arr_n : 0;
}

/* NULL for arrays of strings or arrays, and for keys that are not arrays. */
const void *oxl_gguf_arr_data(const oxl_gguf *g, int64_t i) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    if (!kv || kv->type != OXL_GGUF_ARRAY || vtype_size(kv->arr_type) == 0)
        return NULL;
    return kv->arr_data;
}

/* NULL when key i is not an array of strings or j is out of range. */
const char *oxl_gguf_arr_str(const oxl_gguf *g, int64_t i, uint64_t j, size_t *len) {
    const oxl_gguf_kv *kv = kv_at(g, i);
    if (!kv || kv->type != OXL_GGUF_ARRAY || kv->arr_type != OXL_GGUF_STRING || j >= kv->arr_n)
        return NULL;
    uint64_t n;
    memcpy(&n, g->base + kv->arr_str_pos[j], 8);
    if (len)
        *len = (size_t)n;
    return (const char *)g->base + kv->arr_str_pos[j] + 8;
}

/* ---- typed look-ups -------------------------------------------------------------------------- */

static int get_fail(const oxl_gguf *g, int64_t i, const char *want, oxl_error *err) {
    const oxl_gguf_kv *kv = &g->kv[i];
    if (kv->type == OXL_GGUF_ARRAY)
        return oxl_err_set(err, "%s: key '%s' at byte %zu: array of %s, expected %s", g->path, kv->key, kv->key_pos,
                           oxl_gguf_vtype_name(kv->arr_type), want);
    return oxl_err_set(err, "%s: key '%s' at byte %zu: %s value, expected %s", g->path, kv->key, kv->key_pos,
                       oxl_gguf_vtype_name(kv->type), want);
}

int oxl_gguf_get_int(const oxl_gguf *g, const char *key, int64_t *out, oxl_error *err) {
    int64_t i = oxl_gguf_find_key(g, key);
    if (i < 0)
        return 0;
    if (!oxl_gguf_kv_int(g, i, out))
        return get_fail(g, i, "an integer that fits int64", err);
    return 1;
}

int oxl_gguf_get_uint32(const oxl_gguf *g, const char *key, uint32_t *out, oxl_error *err) {
    int64_t i = oxl_gguf_find_key(g, key);
    if (i < 0)
        return 0;
    uint64_t u;
    if (!oxl_gguf_kv_uint(g, i, &u) || u > UINT32_MAX) {
        int64_t s;
        if (oxl_gguf_kv_int(g, i, &s))
            return oxl_err_set(err, "%s: key '%s' at byte %zu: value %" PRId64 " out of range for uint32", g->path, key,
                               g->kv[i].key_pos, s);
        if (oxl_gguf_kv_uint(g, i, &u))
            return oxl_err_set(err, "%s: key '%s' at byte %zu: value %" PRIu64 " out of range for uint32", g->path, key,
                               g->kv[i].key_pos, u);
        return get_fail(g, i, "an integer in 0..4294967295", err);
    }
    *out = (uint32_t)u;
    return 1;
}

int oxl_gguf_get_float(const oxl_gguf *g, const char *key, float *out, oxl_error *err) {
    int64_t i = oxl_gguf_find_key(g, key);
    if (i < 0)
        return 0;
    double d;
    if (!oxl_gguf_kv_float(g, i, &d))
        return get_fail(g, i, "float32 or float64", err);
    *out = (float)d;
    return 1;
}

int oxl_gguf_get_bool(const oxl_gguf *g, const char *key, bool *out, oxl_error *err) {
    int64_t i = oxl_gguf_find_key(g, key);
    if (i < 0)
        return 0;
    if (!oxl_gguf_kv_bool(g, i, out))
        return get_fail(g, i, "bool", err);
    return 1;
}

int oxl_gguf_get_str(const oxl_gguf *g, const char *key, const char **out, oxl_error *err) {
    int64_t i = oxl_gguf_find_key(g, key);
    if (i < 0)
        return 0;
    const char *s = oxl_gguf_kv_str(g, i, NULL);
    if (!s)
        return get_fail(g, i, "string", err);
    *out = s;
    return 1;
}

/* ---- tensors --------------------------------------------------------------------------------- */

int64_t oxl_gguf_n_tensors(const oxl_gguf *g) { return g->n_tensors; }

const oxl_gguf_tensor *oxl_gguf_tensor_at(const oxl_gguf *g, int64_t i) {
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const oxl_gguf_tensor *oxl_gguf_find_tensor(const oxl_gguf *g, const char *name) {
    int64_t i = names_find(&g->tensor_names, g, tensor_name_of, name, strlen(name), -1);
    return i >= 0 ? &g->tensors[i] : NULL;
}

/* ---- split models ---------------------------------------------------------------------------- */

void oxl_gguf_take_buffer(oxl_gguf *g, void *buf) {
    free(g->owned_buf);
    g->owned_buf = buf;
}

int oxl_gguf_n_parts(const oxl_gguf *g) { return 1 + g->n_parts; }

const oxl_gguf *oxl_gguf_part(const oxl_gguf *g, int k) {
    return k == 0 ? g : k > 0 && k <= g->n_parts ? g->parts[k - 1] : NULL;
}

int oxl_gguf_add_part(oxl_gguf *g, oxl_gguf *part, oxl_error *err) {
    oxl_gguf **parts = realloc(g->parts, (size_t)(g->n_parts + 1) * sizeof *parts);
    if (!parts) {
        oxl_gguf_close(part);
        return oxl_err_set(err, "%s: out of memory", g->path);
    }
    g->parts = parts;
    g->parts[g->n_parts++] = part;
    const int64_t n_old = g->n_tensors, n_new = n_old + part->n_tensors;
    oxl_gguf_tensor *t = realloc(g->tensors, (size_t)(n_new ? n_new : 1) * sizeof *t);
    if (!t)
        return oxl_err_set(err, "%s: out of memory", part->path);
    g->tensors = t;
    /* a table sized for all the tensors: the existing (unique) names again, then the part's */
    free(g->tensor_names.slot);
    g->tensor_names.slot = NULL;
    if (names_init(&g->tensor_names, n_new))
        return oxl_err_set(err, "%s: out of memory", part->path);
    for (int64_t i = 0; i < n_old; i++)
        names_find(&g->tensor_names, g, tensor_name_of, g->tensors[i].name, strlen(g->tensors[i].name), i);
    for (int64_t j = 0; j < part->n_tensors; j++) {
        const oxl_gguf_tensor *pt = &part->tensors[j];
        const int64_t i = g->n_tensors;
        g->tensors[i] = *pt;
        g->tensors[i].name = dup_bytes((const uint8_t *)pt->name, strlen(pt->name));
        if (!g->tensors[i].name)
            return oxl_err_set(err, "%s: out of memory", part->path);
        g->tensors[i].split = (uint32_t)g->n_parts;
        g->n_tensors = i + 1;
        const int64_t dup = names_find(&g->tensor_names, g, tensor_name_of, pt->name, strlen(pt->name), i);
        if (dup >= 0)
            return oxl_err_set(err, "%s: tensor '%s' is also in %s (a tensor in two parts of a split model)",
                               part->path, pt->name, oxl_gguf_part(g, (int)g->tensors[dup].split)->path);
    }
    return 0;
}
