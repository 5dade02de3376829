/* The decoder-only transformer that llama.cpp's dense architectures share, with the choices between
 * them as options: an architecture file reads its keys into an oxl_decoder_opts, lists the tensors
 * its llama.cpp loader creates (oxl_tensor_spec), and the one forward pass here runs the graph.
 *
 * One layer, in the order llama.cpp's src/models/<arch>.cpp files build it:
 *
 *   a   = norm(x, attn_norm)                   (absent: a = x; falcon-40b: attention reads attn_norm_2)
 *   q,k,v = W·a + b                            (fused attn_qkv, or attn_q / attn_k / attn_v)
 *   q,k = q_norm / k_norm                      (per head, per head with own weights, or full width)
 *   q,k = rope(q,k)                            (per-layer parameters: sliding-window layers may differ;
 *                                               NoPE layers skip it: no_rope_step, no_rope_global)
 *   q  *= attention temperature(pos)           (attn_temp); q,k = rms(q), rms(k) (qk_rms_after_rope)
 *   o   = Wo · attention(q * q_scale, k, v) + bo,  then post-attention norm, residual_scale
 *         (sliding-window layers: a window of n_swa, or with swa_chunked their chunk of n_swa)
 *   sequential: x = x + o;  x = x + residual_scale * post_ffn_norm(ffn(norm(x, ffn_norm)))
 *   ffn = the dense FFN, or on layers with a router the MoE block (moe.h), or both summed and
 *         scaled by moe_dense_scale (Grok); layers without FFN tensors (Mamba) skip it
 *   recurrent layers (ssm.h) replace the attention block by the Mamba mixer: o = ssm(a)
 *   layers with latent attention (mla.h, DeepSeek-2) replace it by o = mla(a)
 *   parallel:   x = x + o + ffn(norm(x, ffn_norm) or a)
 */
#ifndef OXL_DECODER_H
#define OXL_DECODER_H

#include "mla.h"
#include "moe.h"
#include "ssm.h"

#include <stdio.h>

/* Attention temperature (llama.cpp's llm_graph_input_attn_temp::set_input, src/llama-graph.cpp):
 * the queries of the token at position pos are multiplied by
 *   1 + scale * ln(1 + floor((pos + offset) / floor_scale))
 * (llama4: scale 0.1, offset 1, floor 8192; mistral3: attention.temperature_scale, offset 0, floor =
 * rope.scaling.original_context_length). */
typedef struct oxl_attn_temp {
    float scale; /* 0: off */
    float offset;
    uint32_t floor_scale; /* > 0 when scale != 0 */
} oxl_attn_temp;

/* The query multiplier of the attention temperature t at position pos (computed in double as
 * llama.cpp does, then rounded to float). */
float oxl_attn_temp_scale(const oxl_attn_temp *t, int32_t pos);

typedef enum oxl_ffn_kind {
    OXL_FFN_SWIGLU,       /* down · (silu(gate·x) * up·x)                         (LLM_FFN_SILU, PAR) */
    OXL_FFN_GEGLU,        /* down · (gelu(gate·x) * up·x)                         (LLM_FFN_GELU, PAR) */
    OXL_FFN_GELU,         /* down · gelu(up·x + b) + b                            (LLM_FFN_GELU, SEQ) */
    OXL_FFN_SWIGLU_FUSED, /* up has 2*n_ff rows: down · (silu(first half) * second half) (LLM_FFN_SWIGLU) */
    OXL_FFN_XIELU,        /* down · xielu(up·x), no gate, parameters per layer (apertus: ggml_xielu) */
} oxl_ffn_kind;

/* Everything an architecture decides about the graph; zero means "not used" for the scales. */
typedef struct oxl_decoder_opts {
    oxl_norm_kind norm; /* every norm of the model, q/k norms included */
    float norm_eps;     /* layer_norm_rms_epsilon or layer_norm_epsilon, as the architecture reads */
    oxl_ffn_kind ffn;
    bool parallel;                   /* attention and FFN both read the layer input: x + attn + ffn */
    bool parallel_if_no_ffn_norm;    /* a layer without ffn_norm is parallel (StableLM-2-12B) */
    bool qk_norm_full;               /* q/k norms span the whole projection (OLMo-2), not each head */
    float embd_scale;                /* token embeddings *= (gemma: sqrt(n_embd); granite: embedding_scale);
                                      * llama.cpp's build_inp_embd scales a batch's embeddings by granite's
                                      * f_embedding_scale too, and src/models/gemma2.cpp scales either input */
    bool embd_scale_tokens_only;     /* embd_scale only for token rows, not a batch's embeddings (gemma,
                                      * gemma3: src/models/gemma.cpp, gemma3.cpp scale by
                                      * ubatch.token ? sqrt(n_embd) : 1, so image embeddings pass as they are) */
    float residual_scale;            /* branch outputs *= before each residual add (granite) */
    float q_scale;                   /* q *= after RoPE (gemma, phi), with kq_scale then 1 */
    float kq_scale;                  /* softmax scale of the scores */
    float attn_softcap;              /* attention scores soft-cap (gemma2) */
    float max_alibi_bias;            /* ALiBi (bloom) */
    float logit_scale;               /* logits *= (command-r: logit_scale; granite: 1 / logit_scale) */
    float final_softcap;             /* logits soft-cap (gemma2) */
    int32_t n_swa;                   /* 0: no sliding-window layers; else the window of the swa layers */
    uint32_t swa_pattern;            /* layer il is swa when il % pattern < pattern - 1 (0: every layer) */
    oxl_rope rope;                   /* full-attention layers; mode OXL_ROPE_NONE: no RoPE */
    oxl_rope rope_swa;               /* sliding-window layers */
    bool long_factors;               /* LongRoPE: rope_factors_long when the padded context exceeds n_ctx_orig */
    int32_t n_ctx_orig;              /* rope.scaling.original_context_length (default context_length) */
    float clamp_kqv;                 /* q, k, v (or the fused qkv) clamped to [-c, c] (dbrx) */
    oxl_moe_opts moe;                /* experts of the layers that bind OXL_L_MOE */
    unsigned moe_parts;              /* OXL_MOE_HAS_* flags: which optional MoE tensors the loader creates */
    float moe_dense_scale;           /* layers with both a dense FFN and experts: (dense + moe) * this (grok) */
    oxl_ssm_opts ssm;                /* kind != OXL_SSM_NONE: recurrent layers exist */
    bool ssm_dt_b_c_norms;           /* the Mamba-1 mixer RMS-normalises dt, B and C (jamba) */
    oxl_mla_opts mla;                /* kv_lora_rank > 0: layers bind OXL_L_MLA (value_length may differ) */
    const int32_t *n_head_kv_layers; /* read at load only: per-layer head_count_kv, 0 marking a recurrent
                                      * layer (jamba); NULL with ssm.kind set: every layer recurrent */
    uint32_t no_rope_step;           /* layer il attends without RoPE when (il + 1) % step == 0
                                      * (llama.cpp's n_no_rope_layer_step: smollm3, llama4); 0: none */
    bool no_rope_global;             /* the full-attention (non-swa) layers attend without RoPE (exaone4) */
    bool swa_chunked;                /* swa layers see their chunk of n_swa positions, not a window
                                      * (LLAMA_SWA_TYPE_CHUNKED: llama4) */
    bool qk_rms_after_rope;          /* q, k RMS-normalised without weights after RoPE, on RoPE layers
                                      * (llama4's L2 norm, ggml_rms_norm with norm_eps) */
    oxl_attn_temp attn_temp;         /* scale != 0: q *= oxl_attn_temp_scale(pos) after RoPE */
    bool attn_temp_no_rope_only;     /* the temperature applies to the layers without RoPE only (llama4) */
    bool qk_norm_after_rope;         /* the q/k norms act on the rotated q and k (hunyuan) */
    float rope_alpha;                /* rope.scaling.alpha that raised the RoPE base at load (0: none) */
    int32_t n_layer_nextn;           /* NextN/MTP blocks after the n_layer evaluated ones (glm4moe) */
} oxl_decoder_opts;

/* ---- tensors ----------------------------------------------------------------------------- */

/* Every tensor a dense decoder may have; names and shapes as llama.cpp's src/llama-arch.cpp and the
 * load_arch_tensors of each model (shape letters in decoder.c's table). */
typedef enum oxl_tensor_kind {
    OXL_T_TOKEN_EMBD,
    OXL_T_TOKEN_EMBD_NORM,
    OXL_T_TOKEN_EMBD_NORM_B,
    OXL_T_POS_EMBD,
    OXL_T_OUTPUT_NORM,
    OXL_T_OUTPUT_NORM_B,
    OXL_T_OUTPUT,
    OXL_T_OUTPUT_B,
    OXL_T_ROPE_FREQS,
    OXL_T_ROPE_LONG,
    OXL_T_ROPE_SHORT,
    OXL_L_ATTN_NORM,
    OXL_L_ATTN_NORM_B,
    OXL_L_ATTN_NORM_2,
    OXL_L_ATTN_NORM_2_B,
    OXL_L_QKV, /* attn_qkv (+ bias) when present, else attn_q/k/v (+ biases): create_tensor_qkv */
    OXL_L_ATTN_QKV,
    OXL_L_ATTN_QKV_B,
    OXL_L_Q_NORM_HEAD,
    OXL_L_K_NORM_HEAD, /* (head_dim), shared by all heads */
    OXL_L_Q_NORM_HEADS,
    OXL_L_K_NORM_HEADS, /* (head_dim, n_head[_kv]), one per head */
    OXL_L_Q_NORM_FULL,
    OXL_L_K_NORM_FULL, /* (n_head*head_dim) / (n_head_kv*head_dim) */
    OXL_L_ATTN_OUT,
    OXL_L_ATTN_OUT_B,
    OXL_L_ATTN_POST_NORM,
    OXL_L_FFN_NORM,
    OXL_L_FFN_NORM_B,
    OXL_L_FFN_GATE,
    OXL_L_FFN_GATE_B,
    OXL_L_FFN_UP,
    OXL_L_FFN_UP_B,
    OXL_L_FFN_UP_GATE,
    OXL_L_FFN_DOWN,
    OXL_L_FFN_DOWN_B,
    OXL_L_FFN_POST_NORM,
    OXL_L_ATTN_OUT_NORM,      /* attn_output_norm as the post-attention norm (grok) */
    OXL_L_ATTN_OUT_NORM_FFN,  /* attn_output_norm as the FFN's pre-norm (dbrx) */
    OXL_L_LAYER_OUT_NORM,     /* layer_output_norm as the post-FFN norm (grok) */
    OXL_L_MOE,                /* router and experts (moe.h), with the optional parts of opts.moe_parts; layers
                               * below opts.moe.n_dense_lead skip it; with OXL_MOE_OPTIONAL, layers without a
                               * router keep their dense FFN */
    OXL_L_POST_ATTN_NORM_FFN, /* post_attention_norm as the FFN's pre-norm (gpt-oss) */
    OXL_L_ATTN_SINKS,         /* (n_head) attention sink logits (gpt-oss) */
    OXL_L_MLA,                /* latent attention (mla.h): q/q_a/q_b, kv_a_mqa, k_b, v_b, attn_output */
    OXL_L_SSM,                /* the Mamba mixer's tensors (ssm.h), on recurrent layers only; the attention
                               * kinds (q/k/v, q/k norms, attn_output) are skipped there */
    OXL_TENSOR_KIND_COUNT
} oxl_tensor_kind;

/* One line of an architecture's tensor list. */
typedef struct oxl_tensor_spec {
    oxl_tensor_kind kind;
    bool required;
} oxl_tensor_spec;

#define OXL_REQ(k)                                                                                                     \
    { OXL_##k, true }
#define OXL_OPT(k)                                                                                                     \
    { OXL_##k, false }

typedef struct oxl_decoder_layer {
    oxl_tensor attn_norm;      /* (n_embd) */
    oxl_tensor attn_norm_b;    /* (n_embd) */
    oxl_tensor attn_norm_2;    /* (n_embd) falcon-40b: the norm attention reads */
    oxl_tensor attn_norm_2_b;  /* (n_embd) */
    oxl_tensor wqkv;           /* (n_embd, (n_head + 2*n_head_kv)*head_dim) fused Q;K;V projection */
    oxl_tensor bqkv;           /* ((n_head + 2*n_head_kv)*head_dim) */
    oxl_tensor wq;             /* (n_embd, n_head*head_dim) query projection */
    oxl_tensor bq;             /* (n_head*head_dim) */
    oxl_tensor wk;             /* (n_embd, n_head_kv*head_dim) key projection */
    oxl_tensor bk;             /* (n_head_kv*head_dim) */
    oxl_tensor wv;             /* (n_embd, n_head_kv*head_dim) value projection */
    oxl_tensor bv;             /* (n_head_kv*head_dim) */
    oxl_tensor q_norm;         /* (head_dim), (head_dim, n_head) or (n_head*head_dim) query norm weights */
    oxl_tensor k_norm;         /* (head_dim), (head_dim, n_head_kv) or (n_head_kv*head_dim) */
    oxl_tensor wo;             /* (n_head*head_dim, n_embd) attention output */
    oxl_tensor bo;             /* (n_embd) */
    oxl_tensor attn_post_norm; /* (n_embd) norm of the attention output before the residual add */
    oxl_tensor ffn_norm;       /* (n_embd) */
    oxl_tensor ffn_norm_b;     /* (n_embd) */
    oxl_tensor ffn_gate;       /* (n_embd, n_ff) */
    oxl_tensor ffn_gate_b;     /* (n_ff) */
    oxl_tensor ffn_up;         /* (n_embd, n_ff), or (n_embd, 2*n_ff) gate;up for OXL_FFN_SWIGLU_FUSED */
    oxl_tensor ffn_up_b;       /* (n_ff) */
    oxl_tensor ffn_down;       /* (n_ff, n_embd) */
    oxl_tensor ffn_down_b;     /* (n_embd) */
    oxl_tensor ffn_post_norm;  /* (n_embd) norm of the FFN output before the residual add */
    oxl_moe_layer moe;         /* router and experts; moe.gate_inp.data == NULL on dense layers */
    oxl_tensor attn_sinks;     /* (n_head) learned logit per head joining the attention softmax */
    oxl_mla_layer mla;         /* latent attention; mla.wkv_a.data == NULL elsewhere */
    bool recurrent;            /* the layer mixes with ssm instead of attention */
    oxl_ssm_layer ssm;         /* Mamba mixer of a recurrent layer */
    bool no_rope;              /* the layer attends without RoPE (opts.no_rope_step, no_rope_global) */
    float xielu[4];            /* OXL_FFN_XIELU: alpha_n, alpha_p, beta, eps as stored (the architecture
                                * sets them after oxl_decoder_load) */
} oxl_decoder_layer;

typedef struct oxl_decoder {
    oxl_decoder_opts o;
    oxl_tensor token_embd;        /* (n_embd, n_vocab) */
    oxl_tensor token_embd_norm;   /* (n_embd) norm of the embeddings (bloom) */
    oxl_tensor token_embd_norm_b; /* (n_embd) */
    oxl_tensor pos_embd;          /* (n_embd, n_ctx_train) learned absolute positions */
    oxl_tensor output_norm;       /* (n_embd) */
    oxl_tensor output_norm_b;     /* (n_embd) */
    oxl_tensor output;            /* (n_embd, n_vocab); token_embd when the model ties them */
    oxl_tensor output_b;          /* (n_vocab) */
    oxl_tensor rope_freqs;        /* (n_rot/2) llama3 frequency divisors */
    oxl_tensor rope_long;         /* (n_rot/2) LongRoPE divisors past n_ctx_orig */
    oxl_tensor rope_short;        /* (n_rot/2) LongRoPE divisors within n_ctx_orig */
    oxl_decoder_layer *layers;    /* [n_layer] */
    struct oxl_decoder_gpu *gpu;  /* the offloaded layers' weights on the Vulkan device (decoder_gpu.h), or NULL */
} oxl_decoder;

/* ---- loading ----------------------------------------------------------------------------- */

/* The hyper-parameters every decoder reads as llama.cpp's llama_model_base::load_hparams does:
 * context_length, embedding_length, block_count, feed_forward_length, attention.head_count(_kv),
 * attention.key_length (head_count_kv may be a per-layer array: its largest value, the other layers
 * being recurrent), rope.dimension_count, rope.freq_base, rope.scaling.{type, factor,
 * attn_factor, original_context_length}, the norm epsilon of o->norm (attention.layer_norm_rms_epsilon
 * or attention.layer_norm_epsilon, required), and o->rope / o->rope_swa set from them as llama_context
 * derives its rope parameters (YaRN's ext_factor and attn_factor). mode is the architecture's rope
 * type. Returns -1 with err naming a missing or unsupported key. */
int oxl_decoder_hparams(oxl_model *m, oxl_decoder_opts *o, oxl_rope_mode mode, oxl_error *err);

/* Sliding-window layers as llama_hparams::set_swa_pattern: layer il is swa when
 * il % pattern < pattern - 1 (pattern from attention.sliding_window_pattern, else the default). */
int oxl_decoder_swa_pattern(oxl_model *m, oxl_decoder_opts *o, uint32_t default_pattern, oxl_error *err);

/* NTK-aware alpha (llama.cpp's llama_model_hunyuan_vl::load_arch_hparams): with rope.scaling.alpha
 * a > 0, the RoPE base becomes freq_base * a^(head_dim / (head_dim - 2)) in o->rope and o->rope_swa;
 * o->rope_alpha keeps a. Returns -1 with err naming an out-of-range value. */
int oxl_decoder_rope_alpha(oxl_model *m, oxl_decoder_opts *o, oxl_error *err);

/* The NextN/MTP blocks at the end of block_count (llama.cpp's nextn_predict_layers, as
 * llama_model_glm4_moe reads it): hp.n_layer drops them, so their tensors are neither bound nor run;
 * o->n_layer_nextn keeps their count. Returns -1 with err when they are not fewer than block_count. */
int oxl_decoder_skip_nextn(oxl_model *m, oxl_decoder_opts *o, oxl_error *err);

/* Refuses a file with rope.dimension_sections: llama.cpp's glm4moe and hunyuan graphs switch to
 * M-RoPE (ggml_rope_multi) for those (vision variants), which these text families do not run. */
int oxl_decoder_refuse_mrope(const oxl_model *m, oxl_error *err);

/* Binds the listed tensors with their shape checks, ties output to token_embd when absent, and
 * installs the decoder (m->weights) with opts o. */
int oxl_decoder_load(oxl_model *m, const oxl_decoder_opts *o, const oxl_tensor_spec *spec, size_t n_spec,
                     oxl_error *err);

/* Whether layer il uses the sliding window and rope_swa (llama_hparams::is_swa). */
bool oxl_decoder_is_swa(const oxl_decoder_opts *o, int il);

/* oxl_decoder_load with the length of a static spec array. */
#define OXL_DECODER_LOAD(m, o, spec, err) oxl_decoder_load((m), (o), (spec), sizeof(spec) / sizeof((spec)[0]), (err))

/* The oxl_arch hooks every decoder architecture shares. */
void oxl_decoder_free(void *weights);
size_t oxl_decoder_work_size(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads);
void oxl_decoder_forward(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits);
void oxl_decoder_describe(const oxl_model *m, FILE *out);
void oxl_decoder_repack(oxl_model *m, bool evict);
/* The RoPE of layer il's cached keys for a position shift (oxl_arch.k_rope): the layer's rope or
 * rope_swa with this context's frequency factors; none on NoPE layers and without RoPE; refused
 * for recurrent layers, latent attention and M-RoPE. */
int oxl_decoder_k_rope(const oxl_ctx *ctx, int il, oxl_rope *rope, oxl_error *err);

/* oxl_arch.offload of the decoder families (arch/decoder_gpu.c). */
int oxl_decoder_offload(oxl_model *m, int32_t n_gpu_layers, int32_t device, oxl_error *err);

/* An oxl_arch entry for a decoder architecture with its load function. */
#define OXL_DECODER_ARCH(arch_name, load_fn)                                                                           \
    {                                                                                                                  \
        .name = (arch_name), .load = (load_fn), .free_weights = oxl_decoder_free, .work_size = oxl_decoder_work_size,  \
        .forward = oxl_decoder_forward, .describe = oxl_decoder_describe, .repack = oxl_decoder_repack,                \
        .k_rope = oxl_decoder_k_rope, .embd_input = true, .offload = oxl_decoder_offload                               \
    }

#endif
