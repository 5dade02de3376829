/* Gemma 3n's residual mechanisms as shared blocks, each as llama.cpp's src/models/gemma3n.cpp builds
 * it (llama_model_gemma3n::graph):
 *
 *   AltUp (alternating updates): the residual stream is n_altup streams (E, n) of which one, the
 *   active stream i_act, goes through the layer. oxl_altup_expand makes the extra streams from the
 *   embeddings (the graph's constructor), oxl_altup_predict mixes the streams before the layer
 *   (altup_predict), oxl_altup_correct spreads the layer's result over them after it
 *   (altup_correct), oxl_altup_merge folds them back into one at the end.
 *   LAuReL (learned augmented residual, laurel): out = x + rms(laurel_r · laurel_l · x).
 *   Per-layer embeddings (build_inp_per_layer, project_per_layer_inputs): a (n_embd_pl) input per
 *   layer and token from a second embedding table and a projection of the embeddings, gated into
 *   each layer's output (oxl_ple_layer_forward).
 *
 * Activations are column-major batches: a (d, n) buffer holds n tokens of d floats each; the streams
 * are (E, n, n_altup): stream a of token j at st + (a * n + j) * E. The norms are RMSNorm. */
#ifndef OXL_ALTUP_H
#define OXL_ALTUP_H

#include "blocks.h"

typedef struct oxl_altup_opts {
    int32_t n_embd;
    int32_t n_altup; /* streams (altup_num_inputs) */
    int32_t i_act;   /* the active stream (altup_active_idx) */
    float eps;       /* RMSNorm epsilon */
} oxl_altup_opts;

typedef struct oxl_altup_layer {
    oxl_tensor router;        /* (n_embd, n_altup) altup_router */
    oxl_tensor router_norm;   /* (n_embd) altup_router_norm */
    oxl_tensor predict_coef;  /* (n_altup, n_altup^2) altup_predict_coef */
    oxl_tensor correct_coef;  /* (n_altup, n_altup) altup_correct_coef */
    oxl_tensor correct_scale; /* (n_embd) altup_correct_scale */
} oxl_altup_layer;

/* Binds layer il's AltUp tensors (blk.N.altup_*), all required. */
int oxl_altup_bind(const oxl_model *m, const oxl_altup_opts *o, oxl_altup_layer *l, int il, oxl_error *err);

/* Floats of work the AltUp functions need for n tokens. */
size_t oxl_altup_work_floats(const oxl_altup_opts *o, int32_t n);

/* The streams from the scaled embeddings x (E, n): stream 0 is x, stream a > 0 is slice a - 1 of proj
 * (altup_proj, a 3-D (E, E, n_altup - 1) tensor bound by oxl_bind_tensor_3d) times x, rescaled to x's
 * magnitude per token (|x| / |proj x| with |.| summed in double as ggml_sum_rows). */
void oxl_altup_expand(oxl_pool *pool, const oxl_altup_opts *o, const oxl_tensor *proj, const float *x, float *st,
                      int32_t n, float *work, void *scratch);

/* pred = st + coefs(router(st[i_act])) mixing of the streams: for each token, stream i of pred is
 * sum_k c[i * n_altup + k] * st[k] + st[i], with c = predict_coef · tanh(router · rms(st[i_act]) / E). */
void oxl_altup_predict(oxl_pool *pool, const oxl_altup_opts *o, const oxl_altup_layer *l, const float *st, float *pred,
                       int32_t n, float *work, void *scratch);

/* The layer's output y (E, n) spread over the streams: out[a] = (y - pred[i_act]) * (c[a] + 1) +
 * pred[a], with c = correct_coef · tanh(router · rms(y) / E). out may not alias pred. */
void oxl_altup_correct(oxl_pool *pool, const oxl_altup_opts *o, const oxl_altup_layer *l, const float *pred,
                       const float *y, float *out, int32_t n, float *work, void *scratch);

/* The streams folded into one (E, n): streams a > 0 through slice a - 1 of unembd_proj
 * (altup_unembd_proj), rescaled to the magnitude of st[i_act], then the mean of stream 0 and those. */
void oxl_altup_merge(oxl_pool *pool, const oxl_altup_opts *o, const oxl_tensor *unembd_proj, const float *st,
                     float *out, int32_t n, float *work, void *scratch);

/* ---- LAuReL ------------------------------------------------------------------------------ */

typedef struct oxl_laurel_layer {
    oxl_tensor l;         /* (n_embd, rank) laurel_l */
    oxl_tensor r;         /* (rank, n_embd) laurel_r */
    oxl_tensor post_norm; /* (n_embd) laurel_post_norm */
} oxl_laurel_layer;

int oxl_laurel_bind(const oxl_model *m, oxl_laurel_layer *l, int il, int32_t n_embd, int32_t rank, oxl_error *err);

/* out = x + rms(r · (l · x)) * post_norm for n tokens; work holds rank * n floats. */
void oxl_laurel_forward(oxl_pool *pool, const oxl_laurel_layer *l, const float *x, float *out, int32_t n, float eps,
                        float *work, void *scratch);

/* ---- per-layer embeddings ------------------------------------------------------------------ */

typedef struct oxl_ple {
    int32_t n_embd_pl; /* per layer and token (n_embd_altup) */
    int32_t n_layer;
    oxl_tensor tok_embd;   /* (n_embd_pl * n_layer, n_vocab) per_layer_token_embd */
    oxl_tensor model_proj; /* (n_embd, n_embd_pl * n_layer) per_layer_model_proj */
    oxl_tensor proj_norm;  /* (n_embd_pl) per_layer_proj_norm */
} oxl_ple;

typedef struct oxl_ple_layer {
    oxl_tensor inp_gate;  /* (n_embd, n_embd_pl) blk.N.inp_gate */
    oxl_tensor proj;      /* (n_embd_pl, n_embd) blk.N.proj */
    oxl_tensor post_norm; /* (n_embd) blk.N.post_norm */
} oxl_ple_layer;

/* Binds the model's per-layer embedding tensors (p->n_embd_pl and p->n_layer set), all required. */
int oxl_ple_bind(const oxl_model *m, oxl_ple *p, int32_t n_embd, oxl_error *err);
int oxl_ple_bind_layer(const oxl_model *m, const oxl_ple *p, oxl_ple_layer *l, int il, int32_t n_embd, oxl_error *err);

/* The per-layer inputs of n tokens into out (n_embd_pl, n_layer, n; out holds twice that, the rest work):
 * (rms(model_proj · x / sqrt(E))
 * * proj_norm + tok_embd[token] * sqrt(n_embd_pl)) / sqrt(2), x being the scaled embeddings (E, n);
 * layer il of token j at out + (j * n_layer + il) * n_embd_pl. */
void oxl_ple_inputs(oxl_pool *pool, const oxl_ple *p, const oxl_token *tokens, const float *x, int32_t n_embd,
                    int32_t n, float eps, float *out, void *scratch);

/* One layer's contribution from h (E, n), the active stream's corrected value times
 * altup_correct_scale: out = rms(proj · (gelu(inp_gate · h) * inp)) * post_norm, with inp the layer's
 * per-layer inputs (column j at inp + j * inp_stride); work holds n_embd_pl * n floats. */
void oxl_ple_layer_forward(oxl_pool *pool, const oxl_ple *p, const oxl_ple_layer *l, const float *h, const float *inp,
                           int64_t inp_stride, float *out, int32_t n, float eps, float *work, void *scratch);

#endif
