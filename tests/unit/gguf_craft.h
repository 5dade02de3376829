/* A byte-buffer builder for GGUF files, for tests that need well-formed or deliberately malformed
 * files: every field is written explicitly, little-endian, so a test can put any value anywhere.
 * Layout reference: ggml docs/gguf.md. */
#ifndef OXL_GGUF_CRAFT_H
#define OXL_GGUF_CRAFT_H

#include <stddef.h>
#include <stdint.h>

typedef struct oxl_craft {
    uint8_t *buf; /* the bytes written so far (NULL while empty) */
    size_t len;
} oxl_craft;

void oxl_craft_free(oxl_craft *c);

/* Raw fields. Allocation failure aborts the test process (tests only). */
void oxl_craft_bytes(oxl_craft *c, const void *p, size_t n);
void oxl_craft_u8(oxl_craft *c, uint8_t v);
void oxl_craft_u32(oxl_craft *c, uint32_t v);
void oxl_craft_u64(oxl_craft *c, uint64_t v);
void oxl_craft_f32(oxl_craft *c, float v);
/* A GGUF string: u64 length, then the bytes (no NUL). */
void oxl_craft_str(oxl_craft *c, const char *s);
/* Zero bytes up to the next multiple of align (the padding before the data section). */
void oxl_craft_pad(oxl_craft *c, size_t align);
void oxl_craft_zeros(oxl_craft *c, size_t n);
/* Overwrites 4 or 8 bytes at a position already written. */
void oxl_craft_put_u32(oxl_craft *c, size_t at, uint32_t v);
void oxl_craft_put_u64(oxl_craft *c, size_t at, uint64_t v);

/* "GGUF", version, tensor count, key-value count. */
void oxl_craft_header(oxl_craft *c, uint32_t version, uint64_t n_tensors, uint64_t n_kv);
/* Key and value type; the caller writes the value. */
void oxl_craft_kv_begin(oxl_craft *c, const char *key, uint32_t vtype);
void oxl_craft_kv_u32(oxl_craft *c, const char *key, uint32_t v);
void oxl_craft_kv_str(oxl_craft *c, const char *key, const char *v);
/* Key, type ARRAY, element type and count; the caller writes the elements. */
void oxl_craft_kv_array(oxl_craft *c, const char *key, uint32_t elem_type, uint64_t n);
/* A tensor info: name, n_dims, ne[0..n_dims), ggml type id, offset in the data section. */
void oxl_craft_tensor(oxl_craft *c, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type,
                      uint64_t offset);

#endif
