/* Shared building blocks of the decoder graphs. Each reproduces the ggml op llama.cpp's graph uses
 * (ggml/src/ggml-cpu/ops.cpp, vec.h), including where ggml accumulates in double or rounds through
 * fp16, so logits track llama.cpp's to float rounding. Activations are column-major batches: a
 * (d, n) buffer holds n tokens of d floats each. */
#ifndef OXL_BLOCKS_H
#define OXL_BLOCKS_H

#include "arch.h"

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

/* ---- math -------------------------------------------------------------------------------- */

typedef enum oxl_norm_kind {
    OXL_NORM_RMS,   /* x / sqrt(mean(x^2) + eps)          (ggml_rms_norm) */
    OXL_NORM_LAYER, /* (x - mean) / sqrt(var(x) + eps)    (ggml_norm) */
} oxl_norm_kind;

/* y = norm(x) * w + b for each of n columns of length d, as llama.cpp's build_norm: the norm in
 * ggml's accumulation order (sums in double), then ggml_mul by w and ggml_add of b. w and b may be
 * NULL (or unbound); a 2-D w of (d, r) gives column c the weights of row c % r (per-head weights
 * broadcast over tokens). x and y may alias. */
void oxl_norm(oxl_norm_kind kind, const float *x, const oxl_tensor *w, const oxl_tensor *b, float *y, int64_t d,
              int64_t n, float eps);

typedef enum oxl_rope_mode {
    OXL_ROPE_NONE = -1,
    OXL_ROPE_NORM = 0,  /* GPT-J style: rotates adjacent pairs (2i, 2i+1)     (LLAMA_ROPE_TYPE_NORM) */
    OXL_ROPE_NEOX = 2,  /* GPT-NeoX style: rotates (i, i + n_rot/2)            (LLAMA_ROPE_TYPE_NEOX) */
    OXL_ROPE_MROPE = 8, /* multi-section NeoX (ggml_rope_multi, LLAMA_ROPE_TYPE_MROPE): pair i takes the
                         * position of its section (i % sum(sections)); for text the t, h, w positions
                         * are the token's and the fourth (extra) position is 0 */
} oxl_rope_mode;

/* The arguments of one ggml_rope_ext call. */
typedef struct oxl_rope {
    oxl_rope_mode mode;
    int n_rot; /* rotated dims at the start of each head; the rest pass through */
    float freq_base;
    float freq_scale;  /* 1 / linear scaling factor */
    float ext_factor;  /* YaRN extrapolation mix (0: off) */
    float attn_factor; /* multiplies cos and sin */
    float beta_fast, beta_slow;
    int32_t n_ctx_orig;   /* YaRN's original context (ggml_rope_yarn_corr_dims) */
    const float *factors; /* (n_rot/2) frequency divisors (llama3 rope_freqs, LongRoPE), or NULL */
    int32_t sections[4];  /* OXL_ROPE_MROPE: pairs per section (t, h, w, extra); sum in 1 .. head_dim */
} oxl_rope;

/* Rotary position embedding of n_head heads of head_dim floats at position pos, as ggml's
 * ggml_compute_forward_rope_flt: theta_i = pos * base^(-2i/n_rot) / factors[i] by repeated
 * multiplication, YaRN's ramp between interpolation and extrapolation when ext_factor != 0. */
void oxl_rope_apply(float *x, int n_head, int head_dim, int32_t pos, const oxl_rope *r);

/* g = silu(g) * u over n_rows rows of row values each, row by row as ggml_swiglu evaluates it
 * (ggml_vec_swiglu_f32: the generated swiglu kernel). */
void oxl_swiglu(float *g, const float *u, int64_t row, int64_t n_rows);
/* x = gelu(x) elementwise, through ggml's CPU table: x rounded to fp16, the tanh-approximation GELU of
 * that value rounded to fp16 (GGML_GELU_FP16); |x| >= 10 passes (0 below -10, x above 10). */
void oxl_gelu(float *x, int64_t n);
/* g = gelu(g) * u elementwise (ggml_geglu_split, the same fp16 table). */
void oxl_geglu(float *g, const float *u, int64_t n);

/* x += y elementwise. */
void oxl_add(float *x, const float *y, int64_t n);
/* y[:, j] += b for each of n columns of length d (b: (d) f32; unbound b does nothing). */
void oxl_add_bias(float *y, const oxl_tensor *b, int64_t d, int64_t n);
/* x *= s elementwise (ggml_scale). */
void oxl_scale(float *x, int64_t n, float s);
/* x = cap * tanh(x / cap) elementwise, as ggml_scale(1/cap), ggml_tanh, ggml_scale(cap). */
void oxl_softcap(float *x, int64_t n, float cap);

/* ---- attention --------------------------------------------------------------------------- */

/* Stores the keys and values of the pass's tokens (kv_dim floats each, column-major) in layer il's
 * cache, each at its sequence and position. */
void oxl_kv_store(oxl_ctx *ctx, int il, const oxl_ubatch *ub, const float *k, const float *v);

/* One attention layer's shape and score options (llama.cpp build_attn_mha). */
typedef struct oxl_attn_params {
    int n_head, n_head_kv, head_dim; /* query head h reads KV head h / (n_head / n_head_kv) */
    float scale;                     /* kq_scale */
    float softcap;                   /* 0: off; else scores = softcap * tanh(scores / softcap) */
    int32_t n_swa;      /* 0: full causal; else a query at p sees keys p - n_swa + 1 .. p (LLAMA_SWA_TYPE_STANDARD) */
    float max_bias;     /* 0: off; else ALiBi: head h adds slope_h * -(p_q - p_k), ggml's m0/m1 slopes */
    const float *sinks; /* (n_head) or NULL: head h's learned logit joins its softmax without a value
                         * (gpt-oss attention sinks: ggml_soft_max_add_sinks, flash-attn's sinks) */
} oxl_attn_params;

/* The Walsh-Hadamard rotation llama.cpp applies around a quantized KV cache (llama-kv-cache.cpp
 * attn_rot_k / attn_rot_v, computed by ggml_compute_forward_fwht): each run of n floats of x (total
 * of them, n a power of two) times 1/sqrtf(n), then the butterflies u + v, u - v with the run
 * length doubling. The rotation is its own inverse. */
void oxl_fwht_rows(float *x, int64_t total, int n);
/* The rotation sizes for this context's cache (0: none): K (with Q) when K is quantized and
 * head_dim % 64 == 0, the largest power of two dividing head_dim; V (and the attention output)
 * when V is quantized and head_dim % 64 == 0, 64. */
int oxl_kv_rot_k(const oxl_ctx *ctx, int head_dim);
int oxl_kv_rot_v(const oxl_ctx *ctx, int head_dim);

/* Causal multi-head attention for the pass's tokens: q (n_head*head_dim, n) → out
 * (n_head*head_dim, n), each token reading its sequence's cache within its mask: fused with an
 * online softmax (ggml_flash_attn_ext: score*scale, soft-cap, + slope*mask) unless
 * ctx->params.flash_attn is off, then the separate ops of llama.cpp's unfused graph (soft-cap of
 * the raw score, ggml_soft_max_ext(scale, ALiBi) summing in double, the weighted sum of values).
 * scores holds n_ctx + head_dim floats per thread. */
void oxl_attention(oxl_ctx *ctx, int il, const oxl_ubatch *ub, const float *q, float *out, const oxl_attn_params *p,
                   float *scores);

#endif
