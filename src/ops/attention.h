/* Causal multi-head attention over a KV cache, as ggml's CPU backend computes llama.cpp's
 * build_attn_mha: the unfused graph, ggml_flash_attn_ext and its tiled variant. The cache is
 * described by a plain view (oxl_kv_view), which the model's memory module fills in
 * (src/model/model_memory.h). */
#ifndef OXL_ATTENTION_H
#define OXL_ATTENTION_H

#include "kernels.h"
#include "pool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One layer's KV cache and the pass's tokens, as attention reads them. For each sequence s the
 * cache holds n_ctx rows from row s * n_ctx, position-major: row s * n_ctx + p holds position p of
 * sequence s, the keys (values) of every KV head concatenated, head_dim elements of type_k
 * (type_v) each. Token j of the pass is at position pos[j] of sequence seq[j] and sees the rows of
 * its sequence up to its own position. */
typedef struct oxl_kv_view {
    oxl_type type_k; /* a format the spec marks kv_cache */
    oxl_type type_v;
    const void *k; /* the layer's keys */
    const void *v; /* the layer's values */
    size_t k_row;  /* bytes per cached position */
    size_t v_row;
    int32_t n_ctx;         /* rows per sequence */
    int32_t n_tokens;      /* the pass's tokens */
    int32_t n_stream;      /* query rows per stream as ggml shapes q (its ne1): n_tokens, or the tokens of
                            * one sequence when each sequence is a stream (oxl_ctx_params.seq_streams) */
    const int32_t *pos;    /* [n_tokens] position within its sequence */
    const int32_t *seq;    /* [n_tokens] sequence id */
    const int32_t *pos_hi; /* [n_tokens] the last position token j sees (>= pos[j]): llama.cpp's mask with
                            * causal attention off (llama_set_causal_attn(false): every row of the
                            * sequence in the cache, later tokens of the pass included, the sliding
                            * window still dropping keys p <= pos[j] - n_swa); NULL: causal, pos[j] */
} oxl_kv_view;

/* One attention layer's shape and score options (llama.cpp build_attn_mha). */
typedef struct oxl_attn_params {
    int n_head, n_head_kv, head_dim; /* query head h reads KV head h / (n_head / n_head_kv) */
    float scale;                     /* kq_scale */
    float softcap;                   /* 0: off; else scores = softcap * tanh(scores / softcap) */
    int32_t n_swa;      /* 0: full causal; else a query at p sees keys p - n_swa + 1 .. p (LLAMA_SWA_TYPE_STANDARD) */
    float max_bias;     /* 0: off; else ALiBi: head h adds slope_h * -(p_q - p_k), ggml's m0/m1 slopes */
    const float *sinks; /* (n_head) or NULL: head h's learned logit joins its softmax without a value
                         * (gpt-oss attention sinks: ggml_soft_max_add_sinks, flash-attn's sinks) */
    int32_t n_chunk;    /* 0: off; else a query at p sees keys floor(p / n_chunk) * n_chunk .. p
                         * (LLAMA_SWA_TYPE_CHUNKED, llama_hparams::is_masked_swa: llama4) */
} oxl_attn_params;

/* Causal (or, with kv->pos_hi, non-causal) multi-head attention for the pass's tokens: q (n_head*head_dim, n_tokens) →
 * out (n_head*head_dim, n_tokens), each token reading its sequence's cache within its mask: fused with an online
 * softmax (ggml_flash_attn_ext: score*scale, soft-cap, + slope*mask) when flash, else the separate ops of llama.cpp's
 * unfused graph (soft-cap of the raw score, ggml_soft_max_ext(scale, ALiBi) summing in double, the weighted sum of
 * values). The work is spread over pool's threads; scores holds kv->n_ctx + head_dim floats per thread. */
void oxl_attention(oxl_pool *pool, const oxl_kv_view *kv, const float *q, float *out, const oxl_attn_params *p,
                   bool flash, float *scores);

/* The positions token j of kv sees: [*lo, *n_kv) of its sequence (the causal or pos_hi end, the
 * sliding window or the chunk of p), as oxl_attention reads them (the GPU's attention takes them). */
/* Head h's ALiBi slope (ggml's m0 / m1 powers; 1 without ALiBi, whose bias is then 0). */
float oxl_attention_slope(const oxl_attn_params *p, int h);
void oxl_attention_range(const oxl_kv_view *kv, const oxl_attn_params *p, int32_t j, int32_t *lo, int32_t *n_kv);

/* The unfused attention of an f32 cache in ggml's summation order over llama.cpp's cells
 * (attention_cells.c), for graphs that show the last bit: cell c holds position c of a single
 * sequence, and the pass spans n_kv = oxl_attention_cells_n_kv cells (the used ones padded to 256,
 * at least 256, as llama_kv_cache::get_n_kv); kq is one f32 vec_dot per cell, masked cells -inf,
 * the softmax ggml_vec_soft_max_f32's (the softmax kernel), and V^T · w tinyBLAS's order (the gemm
 * kernel) for a batch of at least 2 tokens when n_kv % 16 == 0 and head_dim % 4 == 0, else one
 * vec_dot of n_kv per output. p->softcap, p->max_bias and p->sinks are not supported (0 / NULL).
 * work holds oxl_attention_cells_work(n_ctx, head_dim, pool threads) floats, n_ctx >= every
 * position + 1. */
void oxl_attention_cells(oxl_pool *pool, const oxl_kv_view *kv, const float *q, float *out, const oxl_attn_params *p,
                         float *work);
int32_t oxl_attention_cells_n_kv(const oxl_kv_view *kv);
size_t oxl_attention_cells_work(int32_t n_ctx, int head_dim, int n_threads);

#endif
