/* The gated delta net (linear attention) of the qwen3next, qwen35 and qwen35moe hybrids, as llama.cpp
 * builds it in src/models/qwen35.cpp, qwen3next.cpp (build_layer_attn_linear) and delta-net-base.cpp
 * (build_conv_state, build_recurrent_attn) with ggml's ssm_conv, l2_norm and gated_delta_net
 * (ggml/src/ggml-cpu/ops.cpp, ggml_compute_forward_gated_delta_net_one_chunk):
 *
 *   qkv = W_qkv · a                 (2 n_k d_k + n_v d_v rows: q | k | v)
 *   z   = W_gate · a                (n_v d_v)
 *   beta = sigmoid(W_beta · a), alpha = W_alpha · a      (n_v each; qwen3next: one fused W_ba whose
 *                                    rows are, per key head, [beta (n_v/n_k) | alpha (n_v/n_k)])
 *   g   = softplus(alpha + dt_bias) * ssm_a              (ssm_a holds -exp(A_log))
 *   qkv = silu(conv1d(qkv))         (causal depthwise, kernel d_conv, no bias)
 *   q, k = l2_norm per key head (eps = the model's RMS epsilon)
 *   per value head h, reading key head h % n_k (qwen35, tiled) or h / (n_v / n_k) (qwen3next):
 *       S = S * exp(g);  d = (v - S^T k) * beta;  S = S + k d^T;  o = S^T q / sqrt(d_k)
 *   y   = rms_norm(o, ssm_norm) * silu(z)                 (per value head of d_v floats)
 *   out = W_out · y
 *
 * The conv state (the last d_conv - 1 inputs of every conv channel) and the d_k x d_v state of every
 * value head live in the context's memory (oxl_memory_conv_state / oxl_memory_ssm_state) and advance
 * one token at a time in the order of the pass, so tokens of several sequences may share a pass. */
#ifndef OXL_DELTANET_H
#define OXL_DELTANET_H

#include "blocks.h"

#include <stdio.h>

typedef struct oxl_gdn_opts {
    int32_t d_conv;  /* ssm.conv_kernel */
    int32_t d_inner; /* ssm.inner_size = n_v * d_v */
    int32_t d_head;  /* ssm.state_size: d_k = d_v */
    int32_t n_k;     /* ssm.group_count: key heads */
    int32_t n_v;     /* ssm.time_step_rank: value heads */
    bool grouped;    /* value head h reads key head h / (n_v / n_k) (qwen3next); else h % n_k */
    bool fused_ba;   /* one ssm_ba projection (qwen3next); else ssm_beta and ssm_alpha */
    float norm_eps;  /* the model's RMS epsilon: the l2 norms and the gated RMSNorm */
} oxl_gdn_opts;

typedef struct oxl_gdn_layer {
    oxl_tensor qkv;    /* (n_embd, 2 n_k d_k + n_v d_v) attn_qkv */
    oxl_tensor gate;   /* (n_embd, n_v d_v) attn_gate */
    oxl_tensor beta;   /* (n_embd, n_v) ssm_beta */
    oxl_tensor alpha;  /* (n_embd, n_v) ssm_alpha */
    oxl_tensor ba;     /* (n_embd, 2 n_v) ssm_ba (fused) */
    oxl_tensor conv1d; /* (d_conv, conv channels) */
    oxl_tensor dt_b;   /* (n_v) ssm_dt.bias */
    oxl_tensor a;      /* (n_v) ssm_a = -exp(A_log) */
    oxl_tensor norm;   /* (d_v) ssm_norm */
    oxl_tensor out;    /* (n_v d_v, n_embd) ssm_out */
} oxl_gdn_layer;

/* Reads ssm.conv_kernel, inner_size, state_size, group_count and time_step_rank (as the three
 * llama.cpp loaders do) into o and the per-sequence state sizes into m->hp (n_embd_r, n_embd_s).
 * Returns -1 with err naming a key whose value is out of range or inconsistent (value heads a
 * multiple of key heads, inner_size = time_step_rank * state_size). */
int oxl_gdn_hparams(oxl_model *m, oxl_gdn_opts *o, bool grouped, bool fused_ba, oxl_error *err);

/* Binds layer il's delta-net tensors with their shapes; a missing or mis-shaped one is an error
 * naming it. */
int oxl_gdn_bind(const oxl_model *m, const oxl_gdn_opts *o, oxl_gdn_layer *l, int il, oxl_error *err);

/* Bytes of work oxl_gdn_forward needs for n tokens. */
size_t oxl_gdn_work_size(const oxl_gdn_opts *o, int64_t n_embd, int32_t n);

/* out (n_embd, n) = the delta net of layer il on a (n_embd, n), advancing the states of the pass's
 * sequences. work holds oxl_gdn_work_size bytes. */
void oxl_gdn_forward(oxl_ctx *ctx, const oxl_gdn_opts *o, const oxl_gdn_layer *l, int il, const oxl_ubatch *ub,
                     const float *a, float *out, void *work);

/* Prints the delta net's sizes (oxillama info). */
void oxl_gdn_describe(const oxl_gdn_opts *o, FILE *out);

#endif
