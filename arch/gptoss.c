/* gpt-oss ("gpt-oss"), as llama.cpp's src/models/openai-moe.cpp builds it:
 *
 *   x = token_embd[tokens]
 *   per layer:  q, k, v = W·rms(x) + b;  rope_neox(q), rope_neox(k)    (YaRN on every layer)
 *               h = x + Wo · attention(q, k, v) + bo                  (kq_scale 1/sqrt(n_rot); the
 *                   layer's learned sink logit per head joins the softmax; sliding window on the
 *                   layers of attention.sliding_window_pattern, default 2: even layers)
 *               x = h + moe(rms(h, post_attention_norm))
 *   moe: router with bias, the top-k chosen on the raw logits and softmaxed among themselves
 *        (SOFTMAX_WEIGHT), experts with biases and the clamped SwiGLU (alpha 1.702, limit 7):
 *        g = min(gate, 7), u = clamp(up, ±7), h = g * sigmoid(1.702 g) * (u + 1)
 *   logits = output · rms(x)
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec gptoss_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT),     OXL_REQ(L_ATTN_NORM),          OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_ATTN_OUT_B),  OXL_REQ(L_ATTN_SINKS), OXL_REQ(L_POST_ATTN_NORM_FFN), OXL_REQ(L_MOE),
};

static int gptoss_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS,
                          .ffn = OXL_FFN_SWIGLU,
                          .moe_parts = OXL_MOE_HAS_ROUTER_BIAS,
                          .moe = {.gating = OXL_MOE_SOFTMAX_WEIGHT, .act = OXL_MOE_SWIGLU_OAI}};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || oxl_moe_hparams(m, &o.moe, 0, OXL_MOE_KEY_FF_EXP, err) ||
        oxl_hp_int(m, "attention.sliding_window", &o.n_swa, true, err) || oxl_decoder_swa_pattern(m, &o, 2, err) ||
        oxl_hp_float(m, "rope.freq_base_swa", &o.rope_swa.freq_base, false, err)) {
        return -1;
    }
    if (o.moe.n_expert == 0 || o.moe.n_ff_exp == 0) {
        return oxl_err_set(err, "%s: gpt-oss.expert_count / expert_feed_forward_length missing or 0",
                           oxl_gguf_path(m->gguf));
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err, "%s: gpt-oss.rope.dimension_count = %d must equal the head size %d",
                           oxl_gguf_path(m->gguf), m->hp.n_rot, m->hp.head_dim);
    }
    return OXL_DECODER_LOAD(m, &o, gptoss_tensors, err);
}

const oxl_arch oxl_arch_gptoss = OXL_DECODER_ARCH("gpt-oss", gptoss_load);
