/* A context's memory: the KV cache of the attention layers and the recurrent state of the recurrent
 * layers (llama.cpp's llama_kv_cache and llama_memory_recurrent). The architectures reach both only
 * through these functions; attention reads the cache through the plain view of src/ops/attention.h.
 * Internal to the library. */
#ifndef OXL_MODEL_MEMORY_H
#define OXL_MODEL_MEMORY_H

#include "attention.h"
#include "model.h"
#include "rope.h"

#include <stdbool.h>
#include <stdint.h>

/* One forward pass: at most n_batch tokens of a batch, with the tokens whose logits are wanted. */
typedef struct oxl_ubatch {
    int32_t n;
    const oxl_token *token; /* [n] token ids, or NULL when inp_embd holds the input */
    const float *inp_embd;  /* (n_embd, n) input embeddings used as they are instead of token rows
                             * (llama_ubatch.embd: image embeddings), or NULL */
    const int32_t *pos;     /* [n] position within its sequence: the cache row */
    const int32_t *mpos;    /* M-RoPE models: (4, n) rope positions (t, h, w, extra) of each token, which
                             * after an image differ from its row; NULL: (pos, pos, pos, 0) */
    const int32_t *seq;     /* [n] sequence id */
    int32_t n_out;
    const int32_t *out_ids; /* [n_out] indices into this ubatch, ascending */
    float *embd;            /* (n_embd, n): the final norm of every token is written here; NULL: none */
    int32_t n_stream;       /* query rows per attention stream (oxl_kv_view.n_stream); 0: n */
    const int32_t *pos_hi;  /* [n] non-causal pass: the last position each token sees (oxl_kv_view.pos_hi);
                             * NULL: causal */
} oxl_ubatch;

/* Row j of the pass's input into dst (n_embd floats): the embedding inp_embd holds for it, or the
 * row of tok_embd of its token (llama.cpp's build_inp_embd: ggml_get_rows of the token ids, or the
 * batch's embeddings as they are). */
void oxl_ubatch_input_row(const oxl_ubatch *ub, const oxl_tensor *tok_embd, int32_t j, int64_t n_embd, float *dst);

/* Rotates token j's n_head heads by r at its rope positions (mpos when set, else its row). */
void oxl_ubatch_rope(const oxl_ubatch *ub, int32_t j, float *x, int n_head, int head_dim, const oxl_rope *r);

typedef struct oxl_memory oxl_memory;

/* The memory of a context of n_seq_max sequences of n_ctx positions each for a model of hp: a KV
 * cache of type_k / type_v (a format the spec marks kv_cache) with n_head_kv * head_dim elements per
 * position and layer (none when that is 0, nor for a layer that hp.kv_src points elsewhere), and when
 * hp->n_embd_s or n_embd_r > 0 a conv and a scan state per sequence and layer, zero until the first
 * token. NULL when memory is short. */
oxl_memory *oxl_memory_new(const oxl_hparams *hp, oxl_type type_k, oxl_type type_v, int32_t n_ctx, int32_t n_seq_max);
void oxl_memory_free(oxl_memory *mem);

/* Removes the positions from p0 on of sequence seq, as llama_memory_seq_rm: the cache rows need no
 * clearing (a position is written before it is read again), but a recurrent state holds the whole
 * history in one vector and cannot step back, so with recurrent state only p0 == 0 is accepted, which
 * zeroes the sequence's states. Returns false (nothing changed) when refused. */
bool oxl_memory_seq_rm(oxl_memory *mem, int32_t seq, int32_t p0);

/* Moves positions [p0, p1) of sequence seq to [p0 + delta, p1 + delta) in every layer with cache
 * rows of its own, re-rotating the moved K rows (n_head_kv heads of head_dim) by rope[il] at
 * position delta when rotate[il] (a quantized K row through f32, its Hadamard rotation undone and
 * redone). The caller checked the range. Returns false (nothing changed) when memory is short. */
bool oxl_memory_seq_shift(oxl_memory *mem, int32_t seq, int32_t p0, int32_t p1, int32_t delta, const oxl_rope *rope,
                          const bool *rotate, int n_head_kv, int head_dim);
/* Whether the memory holds recurrent state (which no shift can re-position). */
bool oxl_memory_has_recurrent(const oxl_memory *mem);

/* Stores the keys and values of the pass's tokens (kv_dim floats each, column-major) in layer il's
 * cache, each at its sequence and position, converted to the cache's types. A layer that shares
 * another's cache (hp.kv_src) has none to store into: nothing is written. */
void oxl_memory_kv_store(oxl_memory *mem, int il, const oxl_ubatch *ub, const float *k, const float *v);

/* Layer il's cache and the pass's tokens as attention reads them (oxl_attention); for a layer that
 * shares another's cache (hp.kv_src), that layer's cache. */
oxl_kv_view oxl_memory_kv_view(const oxl_memory *mem, int il, const oxl_ubatch *ub);

/* Bytes of KV cache rows allocated, over every layer (a layer reading another's cache has none). */
size_t oxl_memory_kv_bytes(const oxl_memory *mem);

/* The rotation sizes for this cache (0: none; oxl_fwht_rows): K (with Q) when K is quantized and
 * head_dim % 64 == 0, the largest power of two dividing head_dim; V (and the attention output) when
 * V is quantized and head_dim % 64 == 0, 64. */
int oxl_memory_rot_k(const oxl_memory *mem, int head_dim);
int oxl_memory_rot_v(const oxl_memory *mem, int head_dim);

/* Recurrent layer il's state of sequence seq: the conv state (hp.n_embd_r floats) and the scan state
 * (hp.n_embd_s floats), read and advanced in place by the layer. */
float *oxl_memory_conv_state(oxl_memory *mem, int il, int32_t seq);
float *oxl_memory_ssm_state(oxl_memory *mem, int il, int32_t seq);

/* What one sequence's saved state (src/model/state.c) holds: the cache types and row sizes, the
 * recurrent state sizes. */
typedef struct oxl_memory_layout {
    oxl_type type_k, type_v;
    int32_t n_layer;
    int32_t n_ctx;  /* positions per sequence */
    int32_t kv_dim; /* elements per cache row (0: no KV cache) */
    size_t k_row;   /* bytes per cached position and layer */
    size_t v_row;
    int32_t n_embd_r; /* conv floats per sequence and layer (0: no recurrent state) */
    int32_t n_embd_s; /* scan floats per sequence and layer */
} oxl_memory_layout;

oxl_memory_layout oxl_memory_get_layout(const oxl_memory *mem);
/* Bytes of sequence state for n_pos positions: for each layer with cache rows of its own its n_pos
 * K rows then its n_pos V rows (the cache's types, as stored), then for each layer the conv state
 * then the scan state (f32). */
size_t oxl_memory_seq_state_size(const oxl_memory *mem, int32_t n_pos);
/* Copies positions 0 .. n_pos-1 of sequence seq, and its recurrent state, into dst (that size). */
void oxl_memory_seq_state_read(const oxl_memory *mem, int32_t seq, int32_t n_pos, void *dst);
/* Writes them back from src into sequence seq (the caller checked the layout and n_pos <= n_ctx). */
void oxl_memory_seq_state_write(oxl_memory *mem, int32_t seq, int32_t n_pos, const void *src);

#endif
