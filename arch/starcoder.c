/* StarCoder and StarCoder2 ("starcoder", "starcoder2"), as llama.cpp's src/models/starcoder.cpp and
 * starcoder2.cpp build them: pre-LayerNorm blocks with biases everywhere and a GELU MLP,
 *
 *   starcoder:   x = token_embd[tokens] + position_embd[positions]      (learned positions, no RoPE)
 *                q, k, v = attn_qkv · LN(x) + b                          (fused; multi-query attention)
 *   starcoder2:  x = token_embd[tokens];  q, k, v = W · LN(x) + b         (NeoX RoPE on q and k)
 *   per layer:   h = x + Wo · attention(q, k, v) + bo;  x = h + Wdown · gelu(Wup·LN(h) + bup) + bdown
 *   logits = output · LN(x)                                               (tied when output is absent)
 */
#include "decoder.h"

static const oxl_tensor_spec starcoder_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_POS_EMBD),  OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT_NORM_B),
    OXL_OPT(T_OUTPUT),     OXL_REQ(L_ATTN_NORM), OXL_REQ(L_ATTN_NORM_B), OXL_REQ(L_ATTN_QKV),
    OXL_REQ(L_ATTN_QKV_B), OXL_REQ(L_ATTN_OUT),  OXL_REQ(L_ATTN_OUT_B),  OXL_REQ(L_FFN_NORM),
    OXL_REQ(L_FFN_NORM_B), OXL_REQ(L_FFN_UP),    OXL_REQ(L_FFN_UP_B),    OXL_REQ(L_FFN_DOWN),
    OXL_REQ(L_FFN_DOWN_B),
};

static const oxl_tensor_spec starcoder2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT_NORM_B), OXL_OPT(T_OUTPUT),
    OXL_REQ(L_ATTN_NORM),  OXL_REQ(L_ATTN_NORM_B), OXL_REQ(L_QKV),           OXL_REQ(L_ATTN_OUT),
    OXL_REQ(L_ATTN_OUT_B), OXL_REQ(L_FFN_NORM),    OXL_REQ(L_FFN_NORM_B),    OXL_REQ(L_FFN_UP),
    OXL_REQ(L_FFN_UP_B),   OXL_REQ(L_FFN_DOWN),    OXL_REQ(L_FFN_DOWN_B),
};

static int starcoder_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_GELU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NONE, err) || OXL_DECODER_LOAD(m, &o, starcoder_tensors, err) ? -1 : 0;
}

static int starcoder2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_GELU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || OXL_DECODER_LOAD(m, &o, starcoder2_tensors, err) ? -1 : 0;
}

const oxl_arch oxl_arch_starcoder = OXL_DECODER_ARCH("starcoder", starcoder_load);
const oxl_arch oxl_arch_starcoder2 = OXL_DECODER_ARCH("starcoder2", starcoder2_load);
