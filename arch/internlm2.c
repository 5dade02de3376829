/* InternLM2 ("internlm2"), as llama.cpp's src/models/internlm2.cpp builds it: the LLaMA graph
 * (normal-mode RoPE, RMSNorm, SwiGLU) with the converter's Q/K/V split out of wqkv, optional
 * projection biases, and an untied output:
 *
 *   h = x + Wo · attention(rope(Wq·rms(x)), rope(Wk·rms(x)), Wv·rms(x));  x = h + swiglu_ffn(rms(h))
 *   logits = output · rms(x)
 */
#include "decoder.h"

static const oxl_tensor_spec internlm2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT),   OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_FFN_NORM),    OXL_REQ(L_FFN_GATE), OXL_REQ(L_FFN_UP),    OXL_REQ(L_FFN_DOWN),
};

static int internlm2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err) || OXL_DECODER_LOAD(m, &o, internlm2_tensors, err) ? -1 : 0;
}

const oxl_arch oxl_arch_internlm2 = OXL_DECODER_ARCH("internlm2", internlm2_load);
