/* Matrix products of weights with activations through the kernel dispatch table.
 *
 * As ggml's CPU mul_mat (ggml/src/ggml-cpu/ggml-cpu.c): each activation column is first converted
 * to the weight format's vec_dot_type (Q8_0 for Q4_0/Q8_0, F16 for F16, …), then every output is one
 * vec_dot of a weight row with a converted column, except where ggml's AVX-512 build hands the
 * product to llamafile's tinyBLAS (f32 and f16 weights, n >= 2, k % 16 == 0, m % 4 == 0): there
 * the gemm kernel computes it in tinyBLAS's order (docs/kernels.md, "Summation order"). */
#ifndef OXL_MATMUL_H
#define OXL_MATMUL_H

#include "kernels.h"
#include "pool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A read-only 2-D weight (or a 1-D vector with ne[1] = 1), usually pointing into the GGUF file. */
typedef struct oxl_tensor {
    const char *name;
    oxl_type type;
    int64_t ne[2];   /* ne0 = row length (contiguous), ne1 = rows */
    size_t row_size; /* bytes per row */
    const void *data;
    /* The rows repacked at load into the CPU's interleaved layout (src/kernels/kernels.h repack), or NULL;
     * data stays the plain rows (embedding look-ups and slices read those). */
    const void *rp;
    /* For a 2-D slice of a 3-D tensor (oxl_tensor_slice: an expert, an MLA head): its index and the
     * tensor's ne2; 0 and 0 for a plain matrix. */
    int32_t slice, n_slice;
} oxl_tensor;

/* Bytes of scratch oxl_matmul needs for n columns of length k against weights of type t. */
size_t oxl_matmul_scratch_size(oxl_type t, int64_t k, int64_t n);

/* y = W x for n columns: W (k = ne0, m = ne1), x (k, n) f32 with column stride k, y (m, n) f32 with
 * column stride ldy (>= m). scratch holds oxl_matmul_scratch_size(W->type, k, n) bytes. */
void oxl_matmul(oxl_pool *pool, const oxl_tensor *w, const float *x, int64_t n, float *y, int64_t ldy, void *scratch);

/* The products y[i] = W[i] x (i < nw, 1 <= nw <= OXL_MATMUL_MANY_MAX) of weights that read the same n
 * columns x (k = W[i]->ne[0] for all; Q, K and V of one input; a FFN's gate and up): each y[i]
 * (W[i]->ne[1], n), column stride ldy[i], bit for bit what oxl_matmul writes, but the columns are
 * converted once and the rows of all the weights are one task of the pool, so the threads meet
 * once instead of nw times (a decode step of a small model spends much of its time on those
 * meetings). scratch as for oxl_matmul with W[0]. Weights with different vec_dot types (or, for
 * q8_0 partners, different types), any that oxl_matmul hands to the tiled gemm, and products with
 * an observer or addend set on this thread are computed one oxl_matmul after another. */
#define OXL_MATMUL_MANY_MAX 4
void oxl_matmul_many(oxl_pool *pool, int nw, const oxl_tensor *const *w, const float *x, int64_t n, float *const *y,
                     const int64_t *ldy, void *scratch);

/* Exact batches: while on (per thread), every oxl_matmul from this thread gives each column of a
 * batch the bits a product of that column alone gets wherever the weights' kernels can
 * (repacked Q4_0/Q8_0 on AVX-512 VNNI: batches of more than OXL_RP_EXACT_COLS columns, which the
 * kernel would multiply in register tiles summing in another order, run in chunks of that many;
 * the plain layouts are exact for any batch; f32/f16/bf16 products of the tiled gemm are not
 * changed). Speculative decoding's verification turns it on. Off by default. */
void oxl_matmul_set_exact(bool on);

/* An observer of the products' inputs, for statistics over the activations each weight meets
 * (llama-imatrix's collection, src/quantize/imatrix_collect.h). While one is set on a thread, every
 * oxl_matmul called from that thread first calls fn(user, w, x, n) with the weight and its n input
 * columns (x: w->ne[0] floats per column, as passed to oxl_matmul; read-only, valid during the call).
 * One observer per thread; fn NULL removes it. Unset, a product pays one thread-local load and branch. */
typedef void (*oxl_matmul_observer_fn)(void *user, const oxl_tensor *w, const float *x, int64_t n);
void oxl_matmul_set_observer(oxl_matmul_observer_fn fn, void *user);

/* A term added to the products' results, for low-rank adapters applied at run time (LoRA,
 * src/model/adapter.h): while one is set on a thread, every oxl_matmul called from that thread, once
 * y = W x is written, calls fn(user, pool, w, x, n, y, ldy), which may add to y (and may itself call
 * oxl_matmul: the term is not applied inside its own call). One per thread; fn NULL removes it. */
typedef void (*oxl_matmul_addend_fn)(void *user, oxl_pool *pool, const oxl_tensor *w, const float *x, int64_t n,
                                     float *y, int64_t ldy);
void oxl_matmul_set_addend(oxl_matmul_addend_fn fn, void *user);

/* Repacking W's rows into the CPU's interleaved layout for its type (kern->repack: Q4_0, Q8_0,
 * Q4_K, Q5_K, Q6_K on AVX-512 VNNI; Q4_0, Q4_K, Q6_K on AVX2), in three steps so that threads can
 * share the work:
 *   oxl_tensor_repack_bytes: the layout's size, or 0 when W has none (no kernel on this CPU, rows
 *     not a multiple of the layout's group, ne0 not of the block size, or already repacked);
 *   oxl_tensor_repack_alloc: a buffer of that size (page-aligned; NULL when memory is short: W then
 *     keeps its plain layout, with the same results up to float summation order), freed with
 *     oxl_tensor_repack_free;
 *   oxl_tensor_repack_rows: rows r0..r1 (multiples of the group) into dst;
 *   oxl_tensor_evict (optional, once all rows are done): the page-aligned interior of W's plain rows
 *     dropped from memory (MADV_DONTNEED): for a read-only file mapping only, where a later read
 *     pages it back in from the file.
 * The caller then sets W->rp = dst. */
size_t oxl_tensor_repack_bytes(const oxl_tensor *w);
void *oxl_tensor_repack_alloc(size_t bytes);
void oxl_tensor_repack_rows(const oxl_tensor *w, void *dst, int64_t r0, int64_t r1);
void oxl_tensor_evict(const oxl_tensor *w);
void oxl_tensor_repack_free(void *buf, size_t bytes);

/* The activation sums gemm_rp takes with q8_0 columns (src/kernels/kernels.h): for one column xq of k
 * elements (k / 32 q8_0 blocks), out[0 .. k/32) = each block's quant sum and out[k/32 .. k/32 + k/4)
 * = each group of 4's. */
void oxl_q8_0_sums(const void *xq, int64_t k, int32_t *out);

/* Dequantizes row r of W into out (ne0 floats): embedding look-ups. */
void oxl_tensor_get_row(const oxl_tensor *w, int64_t r, float *out);

#endif
