/* The mixture-of-experts feed-forward block every MoE architecture shares, as llama.cpp's
 * build_moe_ffn (src/llama-graph.cpp) computes it, plus the shared experts its callers add:
 *
 *   logits  = router · x (+ router bias)                      (n_expert, n)
 *   probs   = softmax(logits) | sigmoid(logits) | logits      (gating)
 *   select  = top-k of probs (+ exp_probs_b), restricted to the best n_group_used groups of experts
 *             when the experts are grouped (group score: the sum of its two best)
 *   w       = probs[select]; softmax over the k (SOFTMAX_WEIGHT); / their sum (norm_w); * w_scale
 *   out     = sum over the k slots of w * down_e(act(gate_e · x, up_e · x))
 *           + shared experts' FFN (times sigmoid(x · gate_inp_shexp) when that gate exists)
 *
 * Dispatch is per expert, not per token: the tokens routed to expert e are gathered into one
 * contiguous block, each of e's matrices is applied to the block in one oxl_matmul, and the rows
 * are scattered back into each token's slot, then the slots are summed in llama.cpp's order. */
#ifndef OXL_MOE_H
#define OXL_MOE_H

#include "blocks.h"

/* expert_gating_func values (llama.cpp's llama_expert_gating_func_type). */
typedef enum oxl_moe_gating {
    OXL_MOE_SOFTMAX = 1,        /* probs = softmax(logits) over all experts */
    OXL_MOE_SIGMOID = 2,        /* probs = sigmoid(logits) */
    OXL_MOE_SOFTMAX_WEIGHT = 3, /* probs = logits; softmax over the selected k only (gpt-oss) */
} oxl_moe_gating;

typedef enum oxl_moe_act {
    OXL_MOE_SILU,       /* silu(gate) * up                                              (LLM_FFN_SILU) */
    OXL_MOE_GELU,       /* gelu(gate) * up                                              (LLM_FFN_GELU) */
    OXL_MOE_SWIGLU_OAI, /* g = min(gate, 7), u = clamp(up, ±7): g * sigmoid(1.702 g) * (u + 1) (gpt-oss) */
} oxl_moe_act;

/* What an architecture decides about its experts (read by oxl_moe_hparams, adjusted by the arch). */
typedef struct oxl_moe_opts {
    int32_t n_expert;      /* <arch>.expert_count; 0: no MoE layers */
    int32_t n_expert_used; /* <arch>.expert_used_count (top-k) */
    int32_t n_ff_exp;      /* rows of each expert's gate/up: expert_feed_forward_length */
    int32_t n_ff_shexp;    /* rows of the shared experts' gate/up (all shared experts side by side) */
    int32_t n_group;       /* expert_group_count (<= 1: no groups) */
    int32_t n_group_used;  /* expert_group_used_count */
    int32_t n_dense_lead;  /* leading_dense_block_count: layers 0 .. n-1 keep a dense FFN */
    oxl_moe_gating gating;
    bool norm_w;   /* divide the k weights by their sum */
    float w_scale; /* expert_weights_scale; 0 or 1: none */
    oxl_moe_act act;
    bool weight_before_ffn; /* the k weights scale each expert's input, not its output (llama4:
                             * build_moe_ffn's weight_before_ffn) */
    bool select_logits;     /* the top-k is chosen on the raw router logits, the gating only giving
                             * the weights (llama4) */
} oxl_moe_opts;

/* One layer's router and experts. Expert matrices are bound as ggml's 3-D tensors (ne0, ne1,
 * n_expert); the oxl_tensor holds expert 0's (ne0, ne1) view and expert e starts e*ne1 rows on. */
typedef struct oxl_moe_layer {
    oxl_tensor gate_inp;       /* (n_embd, n_expert) router */
    oxl_tensor gate_inp_b;     /* (n_expert) router bias (gpt-oss) */
    oxl_tensor exp_probs_b;    /* (n_expert) selection bias (DeepSeek-V3) */
    oxl_tensor gate_exps;      /* (n_embd, n_ff_exp) x n_expert */
    oxl_tensor up_exps;        /* (n_embd, n_ff_exp) x n_expert */
    oxl_tensor down_exps;      /* (n_ff_exp, n_embd) x n_expert */
    oxl_tensor gate_exps_b;    /* (n_ff_exp, n_expert) per-expert biases (gpt-oss) */
    oxl_tensor up_exps_b;      /* (n_ff_exp, n_expert) */
    oxl_tensor down_exps_b;    /* (n_embd, n_expert) */
    oxl_tensor gate_inp_shexp; /* (n_embd) shared-expert gate: sigmoid(x · w) (qwen2moe) */
    oxl_tensor gate_shexp;     /* (n_embd, n_ff_shexp) shared experts */
    oxl_tensor up_shexp;       /* (n_embd, n_ff_shexp) */
    oxl_tensor down_shexp;     /* (n_ff_shexp, n_embd) */
} oxl_moe_layer;

/* Which optional parts a model's loader creates. */
enum {
    OXL_MOE_HAS_ROUTER_BIAS = 1 << 0, /* ffn_gate_inp.bias and ffn_{gate,up,down}_exps.bias */
    OXL_MOE_HAS_PROBS_B = 1 << 1,     /* exp_probs_b.bias (optional in the file) */
    OXL_MOE_HAS_SHEXP = 1 << 2,       /* ffn_{gate,up,down}_shexp */
    OXL_MOE_HAS_SHEXP_GATE = 1 << 3,  /* ffn_gate_inp_shexp */
    OXL_MOE_OPTIONAL = 1 << 4,        /* a layer without ffn_gate_inp is dense (jamba): bind nothing */
};

/* Which keys beyond llama_model_base's an architecture's loader reads. */
enum {
    OXL_MOE_KEY_FF_EXP = 1 << 0,   /* expert_feed_forward_length (else n_ff_default) */
    OXL_MOE_KEY_FF_SHEXP = 1 << 1, /* expert_shared_feed_forward_length */
    OXL_MOE_KEY_DEEPSEEK = 1 << 2, /* expert_shared_count (required; the shared width is count * n_ff_exp),
                                    * leading_dense_block_count, expert_gating_func (absent or 0:
                                    * softmax), expert_weights_scale, expert_weights_norm;
                                    * expert_feed_forward_length then required */
};

/* Reads expert_count, expert_used_count, expert_group_count and expert_group_used_count (as
 * llama_model_base::load_hparams does for every architecture) and the keys of `keys`; n_expert 0
 * (key absent) means a dense model. o->gating, o->norm_w and o->act keep the caller's values unless a
 * key sets them. Returns -1 with err naming a key whose value is out of range (used > count, groups
 * not dividing the experts, unknown gating function). */
int oxl_moe_hparams(oxl_model *m, oxl_moe_opts *o, int32_t n_ff_default, unsigned keys, oxl_error *err);

/* Binds layer il's router and experts (names of llama.cpp's LLM_TENSOR_FFN_*_EXPS) with their shapes;
 * a missing or mis-shaped router or expert tensor is an error naming it. */
int oxl_moe_bind(const oxl_model *m, const oxl_moe_opts *o, oxl_moe_layer *l, int il, unsigned parts, oxl_error *err);

/* Bytes of work oxl_moe_forward needs for n tokens of n_embd floats. */
size_t oxl_moe_work_size(const oxl_moe_opts *o, int64_t n_embd, int32_t n);

/* out (n_embd, n) = the MoE block of x (n_embd, n), as described at the top. work holds
 * oxl_moe_work_size bytes (64-byte aligned). Counts its expert dispatches in ctx->moe_stats. */
void oxl_moe_forward(oxl_ctx *ctx, const oxl_moe_opts *o, const oxl_moe_layer *l, const float *x, int32_t n, float *out,
                     void *work);

/* The routing step of oxl_moe_forward for n tokens: probs (n_expert, n) holds the router logits
 * (without l's router bias) and becomes the gating's output; topk (n_expert_used, n) receives each
 * token's experts best first (ties: the lower index, as ggml_argsort_top_k) and w (n_expert_used, n)
 * their weights. Reads l's gate_inp_b and exp_probs_b only; sel is n_expert floats of scratch. */
void oxl_moe_route(const oxl_moe_opts *o, const oxl_moe_layer *l, float *probs, int32_t n, int32_t *topk, float *w,
                   float *sel);

/* Prints the routing of o (oxillama info). */
void oxl_moe_describe(const oxl_moe_opts *o, FILE *out);

#endif
