#include "gguf_craft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void oxl_craft_free(oxl_craft *c) {
    free(c->buf);
    c->buf = NULL;
    c->len = 0;
}

void oxl_craft_bytes(oxl_craft *c, const void *p, size_t n) {
    uint8_t *b = realloc(c->buf, c->len + n + 1);
    if (!b) {
        fprintf(stderr, "gguf_craft: out of memory\n");
        abort();
    }
    c->buf = b;
    if (n)
        memcpy(b + c->len, p, n);
    c->len += n;
}

void oxl_craft_u8(oxl_craft *c, uint8_t v) { oxl_craft_bytes(c, &v, 1); }

void oxl_craft_u32(oxl_craft *c, uint32_t v) {
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    oxl_craft_bytes(c, b, 4);
}

void oxl_craft_u64(oxl_craft *c, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    oxl_craft_bytes(c, b, 8);
}

void oxl_craft_f32(oxl_craft *c, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    oxl_craft_u32(c, u);
}

void oxl_craft_str(oxl_craft *c, const char *s) {
    size_t n = strlen(s);
    oxl_craft_u64(c, n);
    oxl_craft_bytes(c, s, n);
}

void oxl_craft_zeros(oxl_craft *c, size_t n) {
    static const uint8_t z[256];
    while (n > 0) {
        size_t k = n < sizeof z ? n : sizeof z;
        oxl_craft_bytes(c, z, k);
        n -= k;
    }
}

void oxl_craft_pad(oxl_craft *c, size_t align) { oxl_craft_zeros(c, (align - c->len % align) % align); }

void oxl_craft_put_u32(oxl_craft *c, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++)
        c->buf[at + i] = (uint8_t)(v >> (8 * i));
}

void oxl_craft_put_u64(oxl_craft *c, size_t at, uint64_t v) {
    for (int i = 0; i < 8; i++)
        c->buf[at + i] = (uint8_t)(v >> (8 * i));
}

void oxl_craft_header(oxl_craft *c, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    oxl_craft_bytes(c, "GGUF", 4);
    oxl_craft_u32(c, version);
    oxl_craft_u64(c, n_tensors);
    oxl_craft_u64(c, n_kv);
}

void oxl_craft_kv_begin(oxl_craft *c, const char *key, uint32_t vtype) {
    oxl_craft_str(c, key);
    oxl_craft_u32(c, vtype);
}

void oxl_craft_kv_u32(oxl_craft *c, const char *key, uint32_t v) {
    oxl_craft_kv_begin(c, key, 4 /* UINT32 */);
    oxl_craft_u32(c, v);
}

void oxl_craft_kv_str(oxl_craft *c, const char *key, const char *v) {
    oxl_craft_kv_begin(c, key, 8 /* STRING */);
    oxl_craft_str(c, v);
}

void oxl_craft_kv_array(oxl_craft *c, const char *key, uint32_t elem_type, uint64_t n) {
    oxl_craft_kv_begin(c, key, 9 /* ARRAY */);
    oxl_craft_u32(c, elem_type);
    oxl_craft_u64(c, n);
}

void oxl_craft_tensor(oxl_craft *c, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type,
                      uint64_t offset) {
    oxl_craft_str(c, name);
    oxl_craft_u32(c, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        oxl_craft_u64(c, (uint64_t)ne[i]);
    oxl_craft_u32(c, type);
    oxl_craft_u64(c, offset);
}
