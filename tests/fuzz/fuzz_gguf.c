/* libFuzzer harness for the GGUF reader (src/gguf/gguf.c).
 *
 * Opens the input with oxl_gguf_open_memory; when the file is accepted, walks every accessor: each
 * key by index and by name, every scalar conversion, every array element (numeric arrays read in
 * full, every string of a string array), and every tensor, whose data is read end to end. libFuzzer
 * hands over an exact-size heap copy of the input, so any pointer the reader gives out past the end
 * of the file is caught by AddressSanitizer when it is read. Invariants the reader documents are
 * checked explicitly and trap when broken: a rejection always has a message; keys and tensor names
 * find themselves; tensor data is aligned, inside the data section, of the size its shape and type
 * give, and disjoint from every other tensor's. */
#include "gguf.h"
#include "oxl_types.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken invariant: report it and stop (libFuzzer saves the input). */
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

static volatile uint64_t g_sink; /* keeps the reads from being optimised away */

static uint64_t touch(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 31 + b[i];
    return s;
}

static int in_buffer(const uint8_t *base, size_t size, const void *p, size_t n) {
    const uint8_t *q = p;
    return q >= base && n <= size && (size_t)(q - base) <= size - n;
}

static void walk_kv(const oxl_gguf *g, const uint8_t *data, size_t size, int64_t i) {
    oxl_error err;
    const char *key = oxl_gguf_key(g, i);
    CHECK(key != NULL && key[0] != '\0');
    CHECK(oxl_gguf_find_key(g, key) == i);
    oxl_gguf_vtype t = oxl_gguf_kv_type(g, i);
    CHECK(t < OXL_GGUF_VTYPE_COUNT);
    CHECK(strcmp(oxl_gguf_vtype_name(t), "unknown") != 0);

    int64_t s;
    uint64_t u;
    double d;
    bool b;
    size_t len;
    if (oxl_gguf_kv_int(g, i, &s))
        g_sink += (uint64_t)s;
    if (oxl_gguf_kv_uint(g, i, &u))
        g_sink += u;
    if (oxl_gguf_kv_float(g, i, &d))
        g_sink += (uint64_t)(d == d);
    if (oxl_gguf_kv_bool(g, i, &b))
        g_sink += b;
    const char *str = oxl_gguf_kv_str(g, i, &len);
    CHECK((str != NULL) == (t == OXL_GGUF_STRING));
    if (str) {
        CHECK(len <= size);
        g_sink += touch(str, len + 1); /* the copy is NUL-terminated */
    }

    /* the typed look-ups by name: found (1) or refused with a message (-1), never absent */
    int32_t rc[5];
    int64_t vi;
    uint32_t vu;
    float vf;
    const char *vs;
    err.msg[0] = '\0';
    rc[0] = oxl_gguf_get_int(g, key, &vi, &err);
    rc[1] = oxl_gguf_get_uint32(g, key, &vu, &err);
    rc[2] = oxl_gguf_get_float(g, key, &vf, &err);
    rc[3] = oxl_gguf_get_bool(g, key, &b, &err);
    rc[4] = oxl_gguf_get_str(g, key, &vs, &err);
    for (int k = 0; k < 5; k++) {
        CHECK(rc[k] == 1 || rc[k] == -1);
        if (rc[k] < 0)
            CHECK(err.msg[0] != '\0');
    }

    oxl_gguf_vtype at = oxl_gguf_arr_type(g, i);
    uint64_t n = oxl_gguf_arr_n(g, i);
    CHECK((at != OXL_GGUF_VTYPE_COUNT) == (t == OXL_GGUF_ARRAY));
    if (t != OXL_GGUF_ARRAY)
        return;
    const void *arr = oxl_gguf_arr_data(g, i);
    if (at == OXL_GGUF_STRING) {
        CHECK(arr == NULL);
        for (uint64_t j = 0; j < n; j++) {
            const char *e = oxl_gguf_arr_str(g, i, j, &len);
            CHECK(e != NULL && in_buffer(data, size, e, len));
            g_sink += touch(e, len);
        }
        CHECK(oxl_gguf_arr_str(g, i, n, &len) == NULL);
    } else if (at != OXL_GGUF_ARRAY) {
        static const uint8_t elem_size[OXL_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        CHECK(arr != NULL && n <= size / elem_size[at] && in_buffer(data, size, arr, (size_t)n * elem_size[at]));
        g_sink += touch(arr, (size_t)n * elem_size[at]);
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void walk_tensors(const oxl_gguf *g, const uint8_t *data, size_t size) {
    int64_t n = oxl_gguf_n_tensors(g);
    size_t align = oxl_gguf_alignment(g), start = oxl_gguf_data_offset(g);
    CHECK(align > 0 && (align & (align - 1)) == 0 && start <= size);
    CHECK(n == 0 || start % align == 0);
    uint64_t *spans = malloc((size_t)(n ? n : 1) * 2 * sizeof *spans);
    size_t n_spans = 0;
    CHECK(spans != NULL);
    for (int64_t i = 0; i < n; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        CHECK(t != NULL && oxl_gguf_find_tensor(g, t->name) == t);
        CHECK(t->n_dims >= 1 && t->n_dims <= OXL_GGUF_MAX_DIMS);
        const oxl_type_traits *tr = oxl_type_traits_get(t->type);
        CHECK(tr != NULL && tr->blck_size > 0);
        int empty = 0;
        for (int d = 0; d < OXL_GGUF_MAX_DIMS; d++) {
            CHECK(t->ne[d] >= 0 && (d < (int)t->n_dims || t->ne[d] == 1));
            empty |= t->ne[d] == 0;
        }
        /* a non-empty tensor's element count fits int64 (an empty one may claim any dimensions) */
        uint64_t rows = 1;
        for (int d = 1; d < OXL_GGUF_MAX_DIMS && !empty; d++)
            CHECK(!__builtin_mul_overflow(rows, (uint64_t)t->ne[d], &rows));
        uint64_t want = 0;
        if (!empty) {
            CHECK(t->ne[0] % tr->blck_size == 0);
            CHECK(!__builtin_mul_overflow((uint64_t)(t->ne[0] / tr->blck_size), rows, &want));
            CHECK(!__builtin_mul_overflow(want, (uint64_t)tr->type_size, &want));
        }
        CHECK(t->nbytes == want);
        CHECK(t->offset % align == 0);
        CHECK((const uint8_t *)t->data == data + start + t->offset);
        CHECK(in_buffer(data, size, t->data, t->nbytes));
        g_sink += touch(t->data, t->nbytes);
        if (t->nbytes) {
            spans[2 * n_spans] = t->offset;
            spans[2 * n_spans + 1] = t->offset + t->nbytes;
            n_spans++;
        }
    }
    CHECK(oxl_gguf_tensor_at(g, n) == NULL && oxl_gguf_tensor_at(g, -1) == NULL);
    qsort(spans, n_spans, 2 * sizeof *spans, cmp_u64);
    for (size_t k = 1; k < n_spans; k++)
        CHECK(spans[2 * k] >= spans[2 * k - 1]);
    free(spans);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    oxl_error err;
    err.msg[0] = '\0';
    oxl_gguf *g = oxl_gguf_open_memory(data, size, "fuzz.gguf", &err);
    if (!g) {
        CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof err.msg) != NULL);
        return 0;
    }
    CHECK(oxl_gguf_version(g) == 2 || oxl_gguf_version(g) == 3);
    CHECK(oxl_gguf_file_size(g) == size);
    int64_t n_kv = oxl_gguf_n_kv(g);
    CHECK(n_kv >= 0 && (uint64_t)n_kv <= size);
    for (int64_t i = 0; i < n_kv; i++)
        walk_kv(g, data, size, i);
    CHECK(oxl_gguf_key(g, n_kv) == NULL && oxl_gguf_kv_type(g, -1) == OXL_GGUF_VTYPE_COUNT);
    walk_tensors(g, data, size);
    oxl_gguf_close(g);
    return 0;
}
