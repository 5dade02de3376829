/* Inference context: KV cache, thread pool, work buffers, logits. Internal to the library. */
#ifndef OXL_CONTEXT_H
#define OXL_CONTEXT_H

#include "model.h"
#include "threads.h"

/* Per-layer key and value cache: for each sequence s, n_ctx rows of kv_dim = n_head_kv * head_dim
 * elements, position-major: row s*n_ctx + p holds the keys of position p of sequence s, heads
 * concatenated. */
typedef struct oxl_kv_cache {
    oxl_type type_k; /* OXL_TYPE_F32 or OXL_TYPE_F16 */
    oxl_type type_v;
    int32_t kv_dim;
    size_t k_row; /* bytes per cached position */
    size_t v_row;
    void **k; /* [n_layer] */
    void **v; /* [n_layer] */
} oxl_kv_cache;

/* One forward pass: at most n_batch tokens of a batch, with the tokens whose logits are wanted. */
typedef struct oxl_ubatch {
    int32_t n;
    const oxl_token *token; /* [n] */
    const int32_t *pos;     /* [n] position within its sequence */
    const int32_t *seq;     /* [n] sequence id */
    int32_t n_out;
    const int32_t *out_ids; /* [n_out] indices into this ubatch, ascending */
    float *embd;            /* (n_embd, n): the final norm of every token is written here; NULL: none */
} oxl_ubatch;

/* Mixture-of-experts dispatch counters (arch/moe.c), cumulative over the context's passes: one
 * dispatch runs one expert's matrices on the block of tokens routed to it in a pass's layer. */
typedef struct oxl_moe_stats {
    int64_t n_dispatch; /* expert blocks run */
    int64_t n_matmul;   /* expert matrix products (3 per dispatch: gate, up, down) */
    int64_t n_tokens;   /* tokens over all dispatches (each token counts once per selected expert) */
    int32_t min_tokens; /* fewest tokens of one dispatch (0: none yet) */
} oxl_moe_stats;

struct oxl_ctx {
    const oxl_model *model;
    oxl_ctx_params params;
    oxl_pool *pool;
    int32_t n_ctx; /* per sequence */
    int32_t n_seq_max;
    int32_t *n_past; /* [n_seq_max] */
    oxl_kv_cache kv;
    float **rs_conv; /* [n_layer] recurrent models: (n_embd_r, n_seq_max) conv states, zero at start */
    float **rs_ssm;  /* [n_layer] (n_embd_s, n_seq_max) scan states */
    void *work;      /* the architecture's activations for one pass */
    size_t work_size;
    float *logits; /* (n_vocab, logits_cap) rows of kept logits */
    int32_t logits_cap;
    int32_t *logit_row; /* [last_n] row in logits of each token of the last decode, or -1 */
    int32_t last_n;
    int32_t last_cap;
    int32_t *out_ids;    /* scratch for ubatch output indices, n_batch */
    oxl_pooling pooling; /* resolved (never unspecified); NONE without embeddings */
    float *embd;         /* (n_embd, embd_cap) final-norm output of each token of the last decode */
    int32_t embd_cap;
    float *embd_seq;   /* (n_embd, n_seq_max) pooled embeddings of the last decode */
    bool *embd_seq_ok; /* [n_seq_max] sequence had tokens in the last decode */
    int32_t *seq0_pos; /* oxl_decode's batch: pos[cap], seq[cap], keep[cap] in one block */
    int32_t seq0_cap;
    oxl_moe_stats moe_stats;
};

#endif
