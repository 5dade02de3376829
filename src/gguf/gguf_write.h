/* GGUF v3 writer: metadata key/values and tensors laid out as ggml/src/gguf.cpp writes them
 * (gguf_write_out): header, key/values in order, tensor infos (n_dims trimmed of trailing 1s as
 * ggml_n_dims does), zero padding to the alignment, then each tensor's data padded with zeros to
 * the alignment. The alignment is general.alignment when that key is set (a u32 power of two),
 * else 32.
 *
 * Usage: new, set/copy key/values, add every tensor (name, type, shape), begin (writes the header
 * to a temporary file beside the output), write_data once per tensor in the order added, finish
 * (renames the temporary file onto the output). On any error, or free before finish, the temporary
 * file is removed: a failed write never leaves a truncated output.
 */
#ifndef OXL_GGUF_WRITE_H
#define OXL_GGUF_WRITE_H

#include "gguf.h"
#include "oxl_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct oxl_gguf_writer oxl_gguf_writer;

/* NULL with err on allocation failure. Owned by the caller; release with oxl_gguf_writer_free. */
oxl_gguf_writer *oxl_gguf_writer_new(oxl_error *err);
/* Frees w; removes the temporary file when finish did not succeed. NULL is a no-op. */
void oxl_gguf_writer_free(oxl_gguf_writer *w);

/* ---- metadata: setting a key that exists removes it first and appends the new value at the end
 * (gguf_set_val_* order) ---- */
int oxl_gguf_writer_set_u16(oxl_gguf_writer *w, const char *key, uint16_t v, oxl_error *err);
int oxl_gguf_writer_set_u32(oxl_gguf_writer *w, const char *key, uint32_t v, oxl_error *err);
int oxl_gguf_writer_set_i32(oxl_gguf_writer *w, const char *key, int32_t v, oxl_error *err);
int oxl_gguf_writer_set_f32(oxl_gguf_writer *w, const char *key, float v, oxl_error *err);
int oxl_gguf_writer_set_bool(oxl_gguf_writer *w, const char *key, bool v, oxl_error *err);
int oxl_gguf_writer_set_str(oxl_gguf_writer *w, const char *key, const char *v, oxl_error *err);
/* An array of n numeric or bool elements of type t, packed little-endian in data (GGUF element
 * sizes: 1, 2, 4 or 8 bytes; bool 1 byte). */
int oxl_gguf_writer_set_arr(oxl_gguf_writer *w, const char *key, oxl_gguf_vtype t, const void *data, uint64_t n,
                            oxl_error *err);
/* An array of n strings. */
int oxl_gguf_writer_set_arr_str(oxl_gguf_writer *w, const char *key, const char *const *v, uint64_t n, oxl_error *err);
/* Copies key/value i of src (any type, arrays included) under its own key. */
int oxl_gguf_writer_copy_kv(oxl_gguf_writer *w, const oxl_gguf *src, int64_t i, oxl_error *err);
/* Copies every key/value of src in file order (gguf_set_kv). */
int oxl_gguf_writer_copy_kvs(oxl_gguf_writer *w, const oxl_gguf *src, oxl_error *err);
/* Removes key if present; returns whether it was. */
bool oxl_gguf_writer_remove(oxl_gguf_writer *w, const char *key);

/* ---- tensors ---- */
/* Declares the next tensor: name (unique, < 64 bytes as ggml requires), ggml type, shape ne[0..n_dims)
 * in ggml order (ne0 a multiple of the type's block size). -1 with err on a duplicate name, an
 * unknown type, a bad shape. */
int oxl_gguf_writer_add_tensor(oxl_gguf_writer *w, const char *name, oxl_type type, uint32_t n_dims, const int64_t *ne,
                               oxl_error *err);
/* Bytes of tensor i's data (its rows of blocks), for callers preparing the data. */
size_t oxl_gguf_writer_tensor_nbytes(const oxl_gguf_writer *w, int64_t i);
int64_t oxl_gguf_writer_n_tensors(const oxl_gguf_writer *w);

/* ---- output ---- */
/* Creates path's temporary file and writes header, key/values and tensor infos. No key/value or
 * tensor may be added afterwards. */
int oxl_gguf_writer_begin(oxl_gguf_writer *w, const char *path, oxl_error *err);
/* Writes the data of the next tensor (nbytes must equal its size) and its padding. */
int oxl_gguf_writer_write_data(oxl_gguf_writer *w, const void *data, size_t nbytes, oxl_error *err);
/* After every tensor's data: flushes, closes and renames the temporary file onto path. */
int oxl_gguf_writer_finish(oxl_gguf_writer *w, oxl_error *err);
/* Bytes of the header, key/values and tensor infos with the padding after them, as begin would
 * write them now (ggml's gguf_get_meta_size). */
uint64_t oxl_gguf_writer_meta_size(const oxl_gguf_writer *w);
/* Bytes written so far (the file size after finish). */
uint64_t oxl_gguf_writer_bytes_written(const oxl_gguf_writer *w);

#endif
