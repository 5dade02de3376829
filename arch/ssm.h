/* The selective state-space (Mamba) mixers that mamba, mamba2 and jamba layers share, as llama.cpp's
 * build_mamba_layer / build_mamba2_layer (src/models/mamba-base.cpp) with ggml's ssm_conv and
 * ssm_scan (ggml/src/ggml-cpu/ops.cpp):
 *
 *   Mamba-1:  x | z = W_in · a                          (d_inner each)
 *             x = silu(conv1d(x) + b)                   (causal depthwise, kernel d_conv)
 *             dt | B | C = W_x · x                      (dt_rank, d_state, d_state; jamba: each RMS-normed)
 *             dt = W_dt · dt + b_dt                     (d_inner)
 *             per channel c: h = h * exp(softplus(dt) A[c]) + B x softplus(dt);  y = C · h   (A: d_state each)
 *             out = W_out · (silu(z) * (y + D x))
 *   Mamba-2:  z | xBC | dt = W_in · a                   (d_inner, d_inner + 2 n_group d_state, n_head)
 *             xBC = silu(conv1d(xBC) + b);  x | B | C = xBC (B, C: one d_state vector per group)
 *             per head h (head_dim channels, group h / (n_head / n_group)): the scan above with the
 *             scalar A[h] and dt[h] + b_dt[h]
 *             out = W_out · grouped_rms(silu(z) * (y + D[h] x), norm)   (groups of d_inner / n_group)
 *
 * The conv state (the last d_conv - 1 inputs of every conv channel) and the scan state (d_state per
 * channel) of each sequence live in the context's memory (oxl_memory_conv_state /
 * oxl_memory_ssm_state, src/model/model_memory.h) and advance one token at a time in the order of the
 * pass, so tokens of several sequences may share a pass. */
#ifndef OXL_SSM_H
#define OXL_SSM_H

#include "blocks.h"

typedef enum oxl_ssm_kind { OXL_SSM_NONE, OXL_SSM_MAMBA, OXL_SSM_MAMBA2 } oxl_ssm_kind;

typedef struct oxl_ssm_opts {
    oxl_ssm_kind kind;
    int32_t d_conv;  /* ssm.conv_kernel */
    int32_t d_inner; /* ssm.inner_size */
    int32_t d_state; /* ssm.state_size */
    int32_t dt_rank; /* ssm.time_step_rank (Mamba-2: the number of heads) */
    int32_t n_group; /* ssm.group_count (Mamba-2; Mamba-1: 1) */
    float norm_eps;  /* the model's RMS epsilon (jamba's dt/B/C norms, Mamba-2's grouped norm) */
    /* Mamba-2's ssm_norm may be absent (falcon-h1's loader): then no grouped norm */
    bool norm_optional;
} oxl_ssm_opts;

typedef struct oxl_ssm_layer {
    oxl_tensor in;       /* (n_embd, 2*d_inner) | Mamba-2: (n_embd, 2*d_inner + 2*n_group*d_state + n_head) */
    oxl_tensor conv1d;   /* (d_conv, conv_dim) conv_dim = d_inner | Mamba-2: d_inner + 2*n_group*d_state */
    oxl_tensor conv1d_b; /* (conv_dim) */
    oxl_tensor x;        /* (d_inner, dt_rank + 2*d_state) Mamba-1 */
    oxl_tensor dt;       /* (dt_rank, d_inner) Mamba-1 */
    oxl_tensor dt_b;     /* (d_inner) | Mamba-2: (n_head) */
    oxl_tensor dt_norm;  /* (dt_rank) jamba */
    oxl_tensor b_norm;   /* (d_state) jamba */
    oxl_tensor c_norm;   /* (d_state) jamba */
    oxl_tensor a;        /* (d_state, d_inner) | Mamba-2: (1, n_head); the file holds A = -exp(A_log) */
    oxl_tensor d;        /* (d_inner) | Mamba-2: (1, n_head) */
    oxl_tensor norm;     /* (d_inner / n_group, n_group) Mamba-2 grouped RMSNorm */
    oxl_tensor out;      /* (d_inner, n_embd) */
} oxl_ssm_layer;

/* Reads ssm.conv_kernel, inner_size, state_size, time_step_rank (and group_count for Mamba-2) into o
 * and the per-sequence state sizes into m->hp (n_embd_r, n_embd_s). Returns -1 with err naming a
 * missing or inconsistent key (llama.cpp requires d_inner = 2 n_embd for Mamba-1, and Mamba-2's heads
 * and groups to divide d_inner). */
int oxl_ssm_hparams(oxl_model *m, oxl_ssm_opts *o, oxl_ssm_kind kind, oxl_error *err);

/* Binds layer il's SSM tensors (names of llama.cpp's LLM_TENSOR_SSM_*) with their shapes; jamba's
 * dt/B/C norms when dt_b_c_norms. A missing or mis-shaped tensor is an error naming it. */
int oxl_ssm_bind(const oxl_model *m, const oxl_ssm_opts *o, oxl_ssm_layer *l, int il, bool dt_b_c_norms,
                 oxl_error *err);

/* Bytes of work oxl_ssm_forward needs for n tokens. */
size_t oxl_ssm_work_size(const oxl_ssm_opts *o, int32_t n);

/* out (n_embd, n) = the mixer of layer il on a (n_embd, n), advancing the recurrent states of the
 * pass's sequences. work holds oxl_ssm_work_size bytes. */
void oxl_ssm_forward(oxl_ctx *ctx, const oxl_ssm_opts *o, const oxl_ssm_layer *l, int il, const oxl_ubatch *ub,
                     const float *a, float *out, void *work);

/* Prints the SSM sizes (oxillama info). */
void oxl_ssm_describe(const oxl_ssm_opts *o, FILE *out);

#endif
