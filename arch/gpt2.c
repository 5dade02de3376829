/* GPT-2 ("gpt2"), as llama.cpp's src/models/gpt2.cpp builds it: learned absolute positions and
 * pre-LayerNorm blocks with biases, no RoPE,
 *
 *   x = token_embd[tokens] + position_embd[positions]
 *   per layer:  h = x + Wo · attention(attn_qkv · LN(x) + b) + bo       (fused Q;K;V)
 *               x = h + Wdown · gelu(Wup·LN(h) + bup) + bdown
 *   logits = output · LN(x)                                            (tied when output is absent)
 */
#include "decoder.h"

static const oxl_tensor_spec gpt2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_POS_EMBD),  OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT_NORM_B),
    OXL_OPT(T_OUTPUT),     OXL_REQ(L_ATTN_NORM), OXL_REQ(L_ATTN_NORM_B), OXL_REQ(L_ATTN_QKV),
    OXL_REQ(L_ATTN_QKV_B), OXL_REQ(L_ATTN_OUT),  OXL_REQ(L_ATTN_OUT_B),  OXL_REQ(L_FFN_NORM),
    OXL_REQ(L_FFN_NORM_B), OXL_REQ(L_FFN_UP),    OXL_REQ(L_FFN_UP_B),    OXL_REQ(L_FFN_DOWN),
    OXL_REQ(L_FFN_DOWN_B),
};

static int gpt2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_GELU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NONE, err) || OXL_DECODER_LOAD(m, &o, gpt2_tensors, err) ? -1 : 0;
}

const oxl_arch oxl_arch_gpt2 = OXL_DECODER_ARCH("gpt2", gpt2_load);
