/* Phi-2 and Phi-3 ("phi2", "phi3"), as llama.cpp's src/models/phi2.cpp and phi3.cpp build them.
 * Both pre-scale the query by 1/sqrt(head_dim) (kq_scale 1) and use NeoX RoPE.
 *
 *   phi2:  a = LN(x) (with bias);  x = x + (Wo·attention(rope(q), rope(k), v) + bo) + gelu_ffn(a)
 *          (parallel attention and GELU MLP on one LayerNorm; fused QKV; partial rotary n_rot < head_dim)
 *          logits = output · LN(x) + output.bias
 *   phi3:  h = x + Wo · attention(rope(q), rope(k), v) with q, k, v from rms(x) (fused attn_qkv or split)
 *          x = h + Wdown · swiglu(Wup·rms(h))     (ffn_up holds gate;up, 2*n_ff rows)
 *          RoPE divides its frequencies by LongRoPE factors: rope_factors_short while the context
 *          (padded to 256) fits rope.scaling.original_context_length, else rope_factors_long;
 *          rope.scaling.attn_factor multiplies cos and sin. A sliding_window key is ignored, as
 *          llama.cpp disables Phi's sliding window.
 *   phimoe: the phi3 graph with the MoE block (softmax router, top-k renormalised) as the FFN; its
 *          norms are RMSNorm plus an additive bias, q/k/v/o and the output head carry biases.
 */
#include "decoder.h"
#include "errors.h"

#include <math.h>

static const oxl_tensor_spec phi2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT_NORM_B), OXL_REQ(T_OUTPUT),
    OXL_REQ(T_OUTPUT_B),   OXL_REQ(L_ATTN_NORM),   OXL_REQ(L_ATTN_NORM_B),   OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_ATTN_OUT_B),  OXL_REQ(L_FFN_UP),        OXL_REQ(L_FFN_UP_B),
    OXL_REQ(L_FFN_DOWN),   OXL_REQ(L_FFN_DOWN_B),
};

static const oxl_tensor_spec phi3_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),   OXL_OPT(T_ROPE_LONG),
    OXL_OPT(T_ROPE_SHORT), OXL_REQ(L_ATTN_NORM),   OXL_REQ(L_QKV),      OXL_REQ(L_ATTN_OUT),
    OXL_REQ(L_FFN_NORM),   OXL_REQ(L_FFN_UP_GATE), OXL_REQ(L_FFN_DOWN),
};

static const oxl_tensor_spec phimoe_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),  OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT_NORM_B), OXL_REQ(T_OUTPUT),
    OXL_REQ(T_OUTPUT_B),    OXL_OPT(T_ROPE_LONG),   OXL_OPT(T_ROPE_SHORT),    OXL_REQ(L_ATTN_NORM),
    OXL_REQ(L_ATTN_NORM_B), OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT),      OXL_REQ(L_ATTN_OUT_B),
    OXL_REQ(L_FFN_NORM),    OXL_REQ(L_FFN_NORM_B),  OXL_REQ(L_MOE),
};

static int phi2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_GELU, .parallel = true};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err)) {
        return -1;
    }
    o.q_scale = 1.0f / sqrtf((float)m->hp.head_dim);
    o.kq_scale = 1.0f;
    return OXL_DECODER_LOAD(m, &o, phi2_tensors, err);
}

static int phi3_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU_FUSED};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err)) {
        return -1;
    }
    o.q_scale = 1.0f / sqrtf((float)m->hp.head_dim);
    o.kq_scale = 1.0f;
    return OXL_DECODER_LOAD(m, &o, phi3_tensors, err);
}

const oxl_arch oxl_arch_phi2 = OXL_DECODER_ARCH("phi2", phi2_load);
const oxl_arch oxl_arch_phi3 = OXL_DECODER_ARCH("phi3", phi3_load);

static int phimoe_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .moe = {.norm_w = true}};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || oxl_moe_hparams(m, &o.moe, m->hp.n_ff, 0, err)) {
        return -1;
    }
    if (o.moe.n_expert == 0) {
        return oxl_err_set(err, "%s: phimoe.expert_count is missing or 0", oxl_gguf_path(m->gguf));
    }
    o.q_scale = 1.0f / sqrtf((float)m->hp.head_dim);
    o.kq_scale = 1.0f;
    return OXL_DECODER_LOAD(m, &o, phimoe_tensors, err);
}

const oxl_arch oxl_arch_phimoe = OXL_DECODER_ARCH("phimoe", phimoe_load);
