/* Inference context: KV cache, thread pool, work buffers, logits. Internal to the library. */
#ifndef OXL_CONTEXT_H
#define OXL_CONTEXT_H

#include "model.h"
#include "threads.h"

/* Per-layer key and value cache: n_ctx rows of kv_dim = n_head_kv * head_dim elements each,
 * position-major (row p holds the keys of position p, heads concatenated). */
typedef struct oxl_kv_cache {
    oxl_type type_k;  /* OXL_TYPE_F32 or OXL_TYPE_F16 */
    oxl_type type_v;
    int32_t kv_dim;
    size_t k_row;     /* bytes per cached position */
    size_t v_row;
    void **k;         /* [n_layer] */
    void **v;         /* [n_layer] */
} oxl_kv_cache;

struct oxl_ctx {
    const oxl_model *model;
    oxl_ctx_params params;
    oxl_pool *pool;
    int32_t n_ctx;
    int32_t n_past;
    oxl_kv_cache kv;
    void *work;        /* the architecture's activations for one batch */
    size_t work_size;
    float *logits;     /* (n_vocab, n_logits) */
    int32_t n_logits;  /* rows kept by the last decode */
    int32_t n_last;    /* tokens in the last decode */
};

#endif
