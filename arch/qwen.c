/* Qwen2 and Qwen3 ("qwen2", "qwen3"), as llama.cpp's src/models/qwen2.cpp and qwen3.cpp build them:
 * the LLaMA block with NeoX-style RoPE,
 *
 *   qwen2: q, k, v = W·rms(x) + b          (biases on the three projections, none on Wo)
 *   qwen3: q, k = rms_head(W·rms(x))       (per-head RMSNorm of q and k before RoPE, weights (head_dim);
 *                                           head_dim may differ from n_embd / n_head)
 *   then h = x + Wo · attention(rope(q), rope(k), v);  x = h + Wdown · (silu(Wgate·rms(h)) * Wup·rms(h))
 *   logits = output · rms(x) (+ output.bias for qwen2)   (tied to token_embd when output is absent)
 */
#include "decoder.h"

static const oxl_tensor_spec qwen2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),   OXL_OPT(T_OUTPUT_B),
    OXL_REQ(L_ATTN_NORM),  OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT),
    OXL_REQ(L_FFN_NORM),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP),   OXL_REQ(L_FFN_DOWN),
};

static const oxl_tensor_spec qwen3_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),     OXL_REQ(T_OUTPUT_NORM),     OXL_OPT(T_OUTPUT),
    OXL_REQ(L_ATTN_NORM),      OXL_REQ(L_QKV),             OXL_REQ(L_ATTN_OUT),
    OXL_REQ(L_Q_NORM_HEAD),    OXL_REQ(L_K_NORM_HEAD),
    OXL_REQ(L_FFN_NORM),       OXL_REQ(L_FFN_GATE),        OXL_REQ(L_FFN_UP),   OXL_REQ(L_FFN_DOWN),
};

static int qwen2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || OXL_DECODER_LOAD(m, &o, qwen2_tensors, err) ? -1 : 0;
}

static int qwen3_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || OXL_DECODER_LOAD(m, &o, qwen3_tensors, err) ? -1 : 0;
}

const oxl_arch oxl_arch_qwen2 = OXL_DECODER_ARCH("qwen2", qwen2_load);
const oxl_arch oxl_arch_qwen3 = OXL_DECODER_ARCH("qwen3", qwen3_load);
