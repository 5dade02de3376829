/* The mixture-of-experts block (moe.h) on the Vulkan device: one pass records the router, the
 * routing, the chosen experts' products and their weighted sum, with nothing read back between
 * them (the experts' ids stay on the device, where topk_moe wrote them for mul_mat_id):
 *
 *   logits  = mul_mat(router, x)                                  (n_expert, n)
 *   ids, w  = topk_moe(logits + router bias)                      (n_used, n) each
 *   up, gate= mul_mat_id(up_exps / gate_exps, x, ids) + add_id(biases)   (n_ff_exp, n_used, n)
 *   a       = swiglu / geglu / swiglu_oai(gate, up)
 *   d       = mul_mat_id(down_exps, a, ids) + add_id(bias)        (n_embd, n_used, n)
 *   out     = moe_sum(d, w) (+ the shared experts' SwiGLU FFN, gated by silu(z) / z)
 *
 * Each step computes what arch/moe.c's oxl_moe_forward computes, in its order where the order is
 * fixed (the weighted sum of the slots). */
#ifndef OXL_MOE_GPU_H
#define OXL_MOE_GPU_H

#include "gpu.h"
#include "moe.h"

/* One layer's router and experts on the device: where each tensor of host's bytes lies (buf NULL:
 * the tensor is absent, as host's data is NULL). Shapes and types are host's. */
typedef struct oxl_moe_gpu_layer {
    const oxl_moe_layer *host;
    oxl_gpu_bind gate_inp, gate_inp_b, exp_probs_b;
    oxl_gpu_bind gate_exps, up_exps, down_exps;
    oxl_gpu_bind gate_exps_b, up_exps_b, down_exps_b;
    oxl_gpu_bind gate_inp_shexp, gate_shexp, up_shexp, down_shexp;
} oxl_moe_gpu_layer;

/* Uploads the tensors host binds (router, experts, their biases, shared experts) to g, one buffer
 * each: l->host = host and l's binds own the buffers (oxl_moe_gpu_layer_free). -1 + err (out of
 * device memory) with nothing left allocated. */
int oxl_moe_gpu_upload(oxl_gpu *g, const oxl_moe_layer *host, oxl_moe_gpu_layer *l, oxl_error *err);
/* Frees the buffers oxl_moe_gpu_upload made (a zeroed l: nothing). */
void oxl_moe_gpu_layer_free(oxl_gpu *g, oxl_moe_gpu_layer *l);

/* Whether the device block computes o's layers: NULL when it does, else a line naming what it lacks
 * (a weight type without a mul_mat_id shader, the k weights scaling the experts' input). */
const char *oxl_moe_gpu_unsupported(const oxl_gpu *g, const oxl_moe_opts *o, const oxl_moe_layer *l);

/* Bytes of device scratch oxl_moe_gpu_forward needs for n tokens of n_embd floats. */
size_t oxl_moe_gpu_work_size(const oxl_moe_opts *o, int64_t n_embd, int32_t n);

/* Records topk_moe: for n tokens, the router logits (n_expert, n) at logits (floats, without l's
 * router bias) give each token's chosen experts, best first, as int32 (n_expert_used, n) at ids and
 * their weights (n_expert_used, n) at w: what oxl_moe_route computes (the same ids; the weights
 * within the device's exp and division). -1 + err when it cannot be recorded. */
int oxl_moe_gpu_route(oxl_gpu *g, const oxl_moe_opts *o, const oxl_moe_gpu_layer *l, oxl_gpu_bind logits, int32_t n,
                      oxl_gpu_bind ids, oxl_gpu_bind w, oxl_error *err);

/* Records, into g's open command stream, out (n_embd, n) = the MoE block of x (n_embd, n), floats at
 * x.off / out.off (4-byte aligned); work is oxl_moe_gpu_work_size bytes of device scratch. Returns -1
 * with err set when a dispatch cannot be recorded. */
int oxl_moe_gpu_forward(oxl_gpu *g, const oxl_moe_opts *o, const oxl_moe_gpu_layer *l, int64_t n_embd, oxl_gpu_bind x,
                        int32_t n, oxl_gpu_bind out, oxl_gpu_bind work, oxl_error *err);

#endif
