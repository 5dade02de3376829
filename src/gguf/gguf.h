/* GGUF v2/v3 reader (format: ggml docs/gguf.md; behaviour of ggml/src/gguf.cpp).
 *
 * The whole file is mapped read-only (or read into memory); every count, length, dimension, offset
 * and size is checked against the file size with overflow-safe arithmetic before it is used, so a
 * truncated or crafted file gets an error naming the field and its byte offset, never a crash and
 * never an allocation larger than the file could back.
 */
#ifndef OXL_GGUF_H
#define OXL_GGUF_H

#include "oxillama.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Metadata value types, numbered as in the GGUF specification. */
typedef enum oxl_gguf_vtype {
    OXL_GGUF_UINT8 = 0,
    OXL_GGUF_INT8 = 1,
    OXL_GGUF_UINT16 = 2,
    OXL_GGUF_INT16 = 3,
    OXL_GGUF_UINT32 = 4,
    OXL_GGUF_INT32 = 5,
    OXL_GGUF_FLOAT32 = 6,
    OXL_GGUF_BOOL = 7,
    OXL_GGUF_STRING = 8,
    OXL_GGUF_ARRAY = 9,
    OXL_GGUF_UINT64 = 10,
    OXL_GGUF_INT64 = 11,
    OXL_GGUF_FLOAT64 = 12,
    OXL_GGUF_VTYPE_COUNT
} oxl_gguf_vtype;

#define OXL_GGUF_MAX_DIMS 4
#define OXL_GGUF_DEFAULT_ALIGNMENT 32

typedef struct oxl_gguf oxl_gguf;

/* One tensor's description. data points into the mapped file (data section + offset). */
typedef struct oxl_gguf_tensor {
    const char *name;              /* NUL-terminated, owned by the oxl_gguf */
    uint32_t n_dims;               /* 1..4 */
    int64_t ne[OXL_GGUF_MAX_DIMS]; /* elements per dimension, ggml order (ne0 contiguous); unused = 1 */
    uint32_t type;                 /* ggml type id (known to oxl_type_traits_get) */
    uint64_t offset;               /* bytes from the start of the data section; aligned */
    size_t nbytes;                 /* bytes of data: ne1*ne2*ne3 rows of ne0/blck_size blocks */
    const void *data;              /* read-only, owned by the oxl_gguf */
    uint32_t split;                /* the file holding the data: oxl_gguf_part(g, split) */
} oxl_gguf_tensor;

/* Opens and validates a GGUF file. Returns NULL with err set on any error. */
oxl_gguf *oxl_gguf_open(const char *path, oxl_error *err);
/* The same on a memory buffer, which the caller keeps alive and unchanged until close (no copy).
 * name is used in error messages. */
oxl_gguf *oxl_gguf_open_memory(const void *data, size_t size, const char *name, oxl_error *err);
void oxl_gguf_close(oxl_gguf *g);

uint32_t oxl_gguf_version(const oxl_gguf *g);
size_t oxl_gguf_alignment(const oxl_gguf *g);
size_t oxl_gguf_data_offset(const oxl_gguf *g); /* file offset of the data section */
size_t oxl_gguf_file_size(const oxl_gguf *g);
const char *oxl_gguf_path(const oxl_gguf *g);

/* ---- metadata: keys are indexed 0 .. n_kv-1 in file order ---- */
int64_t oxl_gguf_n_kv(const oxl_gguf *g);
int64_t oxl_gguf_find_key(const oxl_gguf *g, const char *key); /* -1 if absent */
const char *oxl_gguf_key(const oxl_gguf *g, int64_t i);        /* NUL-terminated */
oxl_gguf_vtype oxl_gguf_kv_type(const oxl_gguf *g, int64_t i);
/* Scalar value of key i converted to the requested C type; false if the stored type does not
 * convert exactly (integers: any integer type whose value fits; floats: FLOAT32/FLOAT64). */
bool oxl_gguf_kv_int(const oxl_gguf *g, int64_t i, int64_t *out);
bool oxl_gguf_kv_uint(const oxl_gguf *g, int64_t i, uint64_t *out);
bool oxl_gguf_kv_float(const oxl_gguf *g, int64_t i, double *out);
bool oxl_gguf_kv_bool(const oxl_gguf *g, int64_t i, bool *out);
/* A STRING value: NUL-terminated copy owned by g (embedded NULs cut it short; len is exact). */
const char *oxl_gguf_kv_str(const oxl_gguf *g, int64_t i, size_t *len);
/* ARRAY values: element type, count, and for numeric/bool element types a pointer to the packed
 * little-endian elements inside the file (unaligned: read with memcpy). */
oxl_gguf_vtype oxl_gguf_arr_type(const oxl_gguf *g, int64_t i);
uint64_t oxl_gguf_arr_n(const oxl_gguf *g, int64_t i);
const void *oxl_gguf_arr_data(const oxl_gguf *g, int64_t i);
/* Element j of a STRING array: pointer into the file (not NUL-terminated) and its length. */
const char *oxl_gguf_arr_str(const oxl_gguf *g, int64_t i, uint64_t j, size_t *len);

/* Typed look-ups by key, for model loaders. Return 1 when found and converted, 0 when absent
 * (out untouched), -1 when present with an unusable type or value (err names key and type). */
int oxl_gguf_get_int(const oxl_gguf *g, const char *key, int64_t *out, oxl_error *err);
int oxl_gguf_get_uint32(const oxl_gguf *g, const char *key, uint32_t *out, oxl_error *err);
int oxl_gguf_get_float(const oxl_gguf *g, const char *key, float *out, oxl_error *err);
int oxl_gguf_get_bool(const oxl_gguf *g, const char *key, bool *out, oxl_error *err);
int oxl_gguf_get_str(const oxl_gguf *g, const char *key, const char **out, oxl_error *err);

/* ---- tensors, indexed 0 .. n_tensors-1 in file order ---- */
int64_t oxl_gguf_n_tensors(const oxl_gguf *g);
const oxl_gguf_tensor *oxl_gguf_tensor_at(const oxl_gguf *g, int64_t i);
const oxl_gguf_tensor *oxl_gguf_find_tensor(const oxl_gguf *g, const char *name); /* NULL if absent */

/* ---- split models (llama.cpp's gguf-split; gguf_split.c opens them) ---- */

/* Makes the tensors of part (a further file of the split model whose first file is g) tensors of
 * g, whose data stay in part's mapping; g owns part from then on, also on failure. Fails when a
 * tensor name is already in g (err names both files); then g can only be closed. */
int oxl_gguf_add_part(oxl_gguf *g, oxl_gguf *part, oxl_error *err);
/* Files of g: 1 + the parts added; part 0 is g itself (NULL for k out of range). */
int oxl_gguf_n_parts(const oxl_gguf *g);
const oxl_gguf *oxl_gguf_part(const oxl_gguf *g, int k);
/* g frees buf (from malloc or posix_memalign) when it is closed: the bytes given to
 * oxl_gguf_open_memory. */
void oxl_gguf_take_buffer(oxl_gguf *g, void *buf);

/* Name of a value type ("uint32", "array", …) for messages. */
const char *oxl_gguf_vtype_name(oxl_gguf_vtype t);

#endif
