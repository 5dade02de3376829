/* Shared building blocks of the architecture families: the GGUF hyper-parameter readers and tensor
 * binding of model loading, and (through ops.h, src/ops) the model math of the decoder graphs. */
#ifndef OXL_BLOCKS_H
#define OXL_BLOCKS_H

#include "arch.h"
#include "ops.h"

/* ---- work buffers ---------------------------------------------------------------------- */

/* Lays out n float buffers of sizes[i] floats one after another from base, each starting on a
 * 64-byte boundary, and stores the address of buffer i in *slots[i] when base is not NULL (base NULL:
 * only the size is computed). Returns the bytes they take: the families' work_size functions call
 * it once with NULL to size the work area and once with the area to carve it. */
size_t oxl_carve(void *base, float **const *slots, const size_t *sizes, size_t n);

/* The end of a decoder pass with a final RMS norm (weights output_norm, eps): every token's normed
 * row of x (E, n) goes to ub->embd when the context keeps embeddings; the rows of the ub->n_out
 * tokens whose logits are wanted (ub->out_ids) are normed (or taken from ub->embd) into xb and
 * multiplied by output into logits (n_vocab, n_out). xb and xout are (E, n) buffers of the caller's
 * work area, scratch the matmul's. As llama.cpp's graphs end: build_norm then build_lora_mm(output)
 * on the selected rows (inp_out_ids). */
void oxl_rms_output_head(oxl_pool *pool, const oxl_ubatch *ub, const float *x, int64_t E, int32_t n,
                         const oxl_tensor *output_norm, float eps, const oxl_tensor *output, int64_t n_vocab, float *xb,
                         float *xout, float *logits, void *scratch);

/* ---- loading ---------------------------------------------------------------------------- */

/* Reads an integer hyper-parameter `<arch>.<key>` into out (unchanged when absent and !required).
 * Returns -1 with err when required and absent, or the value is not a positive int32. */
int oxl_hp_int(const oxl_model *m, const char *key, int32_t *out, bool required, oxl_error *err);
int oxl_hp_float(const oxl_model *m, const char *key, float *out, bool required, oxl_error *err);
/* The same for counts that may be 0 (expert_shared_count, leading_dense_block_count, …). */
int oxl_hp_count(const oxl_model *m, const char *key, int32_t *out, bool required, oxl_error *err);
/* A per-layer count: either one integer for every layer or an array of n_layer int32/uint32 (jamba's
 * attention.head_count_kv; also any fixed-length array such as rope.dimension_sections), into
 * out[n_layer]; out unchanged when absent and !required. */
int oxl_hp_int_layers(const oxl_model *m, const char *key, int32_t *out, int32_t n_layer, bool required,
                      oxl_error *err);
/* A boolean `<arch>.<key>` (unchanged when absent and !required). */
int oxl_hp_bool(const oxl_model *m, const char *key, bool *out, bool required, oxl_error *err);
/* A string `<arch>.<key>`; *out unchanged when absent. The string lives as long as the model. */
int oxl_hp_str(const oxl_model *m, const char *key, const char **out, oxl_error *err);

/* Binds tensor `name` (printf-style with the layer index il; il < 0 for global tensors) and checks
 * that its shape is exactly (ne0, ne1) (ne1 = 0 for a 1-D tensor) and that its type has kernels.
 * A missing tensor is an error when required, else t->data = NULL and 0 is returned. */
int oxl_bind_tensor(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, int64_t ne1,
                    bool required, oxl_error *err);

/* A 3-D (ne0, ne1, ne2) tensor (experts, MLA's per-head k_b / v_b), required: binds the first
 * (ne0, ne1) slice after checking the whole shape; oxl_tensor_slice gives slice i. */
int oxl_bind_tensor_3d(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, int64_t ne1,
                       int64_t ne2, oxl_error *err);
oxl_tensor oxl_tensor_slice(const oxl_tensor *t, int64_t i);

/* Binds t to gt's data as a (ne0, ne1) matrix (ne1 = 0: a 1-D f32 vector) after checking that its
 * type has kernels; the caller has checked gt's shape (experts: the first (ne0, ne1) slice). */
int oxl_bind_tensor_view(const oxl_model *m, oxl_tensor *t, const oxl_gguf_tensor *gt, int64_t ne0, int64_t ne1,
                         oxl_error *err);

#endif
