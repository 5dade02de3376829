/* Inference context: memory (KV cache and recurrent state, model_memory.h), thread pool, work buffers,
 * logits. Internal to the library. */
#ifndef OXL_CONTEXT_H
#define OXL_CONTEXT_H

#include "model_memory.h"
#include "model.h"
#include "pool.h"

/* Mixture-of-experts dispatch counters (arch/moe.c), cumulative over the context's passes: one
 * dispatch runs one expert's matrices on the block of tokens routed to it in a pass's layer. */
typedef struct oxl_moe_stats {
    int64_t n_dispatch; /* expert blocks run */
    int64_t n_matmul;   /* expert matrix products (3 per dispatch: gate, up, down) */
    int64_t n_tokens;   /* tokens over all dispatches (each token counts once per selected expert) */
    int32_t min_tokens; /* fewest tokens of one dispatch (0: none yet) */
} oxl_moe_stats;

/* Where a sequence's rope positions part from its cache rows (M-RoPE models; oxl_decode_image_embd):
 * after the image that ended at row row[i] (exclusive), rows r >= row[i] are at position r - lag[i],
 * lag ascending with i; rows before row[0] are at their row. */
typedef struct oxl_seq_lag {
    int32_t *row; /* [n] */
    int32_t *lag; /* [n] */
    int32_t n, cap;
} oxl_seq_lag;

struct oxl_ctx {
    const oxl_model *model;
    oxl_ctx_params params;
    oxl_pool *pool;
    bool exact_batch; /* oxl_ctx_set_exact_batch: decodes run with oxl_matmul_set_exact on */
    int32_t n_ctx;    /* per sequence */
    int32_t n_seq_max;
    int32_t *n_past;  /* [n_seq_max] */
    oxl_seq_lag *lag; /* [n_seq_max] image breakpoints of each sequence (none without M-RoPE) */
    int32_t *mpos;    /* M-RoPE models: (4, n_batch) rope positions of a pass */
    int32_t *pos_hi;  /* [n_batch] a non-causal pass's last visible position per token; NULL until one */
    oxl_memory *mem;  /* the KV cache and recurrent state (model_memory.h) */
    void *work;       /* the architecture's activations for one pass */
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
    struct oxl_adapters *adapters; /* LoRA adapters and control vector set on it (adapter.h), or NULL */
    void *gpu;                     /* the device side of an offloaded model (KV cache and activations on the
                                    * device: arch/decoder_gpu.c), made at the first pass; NULL */
    void (*gpu_free)(void *gpu);
};

/* oxl_decode_image_embd with the image's attention chosen by the caller, as mtmd_helper_decode_image_chunk
 * does from the projector (mtmd_decode_use_non_causal): non_causal makes every token of a pass see the
 * whole sequence in the cache, the pass's later tokens included (llama_set_causal_attn(false); a
 * sliding window still drops keys n_swa or more positions back), else causal. */
int oxl_decode_image_embd_attn(oxl_ctx *ctx, int32_t seq, const float *embd, int32_t n_tokens, int32_t grid_x,
                               int32_t grid_y, bool all_logits, bool non_causal, oxl_error *err);

#endif
