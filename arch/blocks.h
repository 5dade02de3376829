/* Shared building blocks of the decoder graphs. Each reproduces the ggml op llama.cpp's graph uses
 * (ggml/src/ggml-cpu/ops.cpp), including where ggml accumulates in double, so logits track
 * llama.cpp's to float rounding. Activations are column-major batches: a (d, n) buffer holds n
 * tokens of d floats each. */
#ifndef OXL_BLOCKS_H
#define OXL_BLOCKS_H

#include "arch.h"

/* ---- loading ---------------------------------------------------------------------------- */

/* Reads an integer hyper-parameter `<arch>.<key>` into out (unchanged when absent and !required).
 * Returns -1 with err when required and absent, or the value is not a positive int32. */
int oxl_hp_int(const oxl_model *m, const char *key, int32_t *out, bool required, oxl_error *err);
int oxl_hp_float(const oxl_model *m, const char *key, float *out, bool required, oxl_error *err);

/* Binds tensor `name` (printf-style with the layer index il; il < 0 for global tensors) and checks
 * that its shape is exactly (ne0, ne1) (ne1 = 0 for a 1-D tensor) and that its type has kernels.
 * A missing tensor is an error when required, else t->data = NULL and 0 is returned. */
int oxl_bind_tensor(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, int64_t ne1,
                    bool required, oxl_error *err);

/* ---- math -------------------------------------------------------------------------------- */

/* y = x / sqrt(mean(x^2) + eps) * w for each of n columns of length d (ggml_rms_norm + ggml_mul). */
void oxl_rms_norm(const float *x, const oxl_tensor *w, float *y, int64_t d, int64_t n, float eps);

/* Rotary position embedding in ggml's "normal" mode (pairs of adjacent elements, llama.cpp
 * LLAMA_ROPE_TYPE_NORM) on n_head heads of head_dim floats, rotating the first n_rot of each head
 * for position pos (ggml_rope_ext with ext_factor 0, attn_factor 1). */
void oxl_rope_norm(float *x, int n_head, int head_dim, int n_rot, int32_t pos, float freq_base, float freq_scale);

/* g = silu(g) * u elementwise (ggml_swiglu_split). */
void oxl_swiglu(float *g, const float *u, int64_t n);

/* x += y elementwise. */
void oxl_add(float *x, const float *y, int64_t n);

/* ---- attention --------------------------------------------------------------------------- */

/* Stores the keys and values of the pass's tokens (kv_dim floats each, column-major) in layer il's
 * cache, each at its sequence and position. */
void oxl_kv_store(oxl_ctx *ctx, int il, const oxl_ubatch *ub, const float *k, const float *v);

/* Causal multi-head attention with grouped KV heads for the pass's tokens:
 * q (n_head*head_dim, n) → out (n_head*head_dim, n), each token reading its sequence's cache up to its
 * position: fused with an online softmax (ggml_flash_attn_ext) unless ctx->params.flash_attn is off,
 * then softmax(q·k * scale) as ggml_soft_max_ext followed by the weighted sum. scores holds
 * n_ctx + head_dim floats per thread. */
void oxl_attention(oxl_ctx *ctx, int il, const oxl_ubatch *ub, const float *q, float *out, int n_head,
                   int n_head_kv, int head_dim, float scale, float *scores);

#endif
