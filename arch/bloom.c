/* BLOOM ("bloom"), as llama.cpp's src/models/bloom.cpp builds it: no RoPE; position enters through
 * ALiBi biases on the attention scores (max_bias 8, fixed in llama.cpp, with ggml's slopes for a
 * head count that is not a power of two),
 *
 *   x = LN(token_embd[tokens])                                    (token_embd_norm, with bias)
 *   per layer:  h = x + Wo · alibi_attention(attn_qkv · LN(x) + b) + bo
 *               x = h + Wdown · gelu(Wup·LN(h) + bup) + bdown
 *   logits = output · LN(x)                                       (tied when output is absent)
 */
#include "decoder.h"

static const oxl_tensor_spec bloom_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),  OXL_REQ(T_TOKEN_EMBD_NORM), OXL_REQ(T_TOKEN_EMBD_NORM_B),
    OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT_NORM_B),   OXL_OPT(T_OUTPUT),
    OXL_REQ(L_ATTN_NORM),   OXL_REQ(L_ATTN_NORM_B),     OXL_REQ(L_ATTN_QKV),
    OXL_REQ(L_ATTN_QKV_B),  OXL_REQ(L_ATTN_OUT),        OXL_REQ(L_ATTN_OUT_B),
    OXL_REQ(L_FFN_NORM),    OXL_REQ(L_FFN_NORM_B),      OXL_REQ(L_FFN_UP),
    OXL_REQ(L_FFN_UP_B),    OXL_REQ(L_FFN_DOWN),        OXL_REQ(L_FFN_DOWN_B),
};

static int bloom_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_GELU, .max_alibi_bias = 8.0f};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NONE, err) || OXL_DECODER_LOAD(m, &o, bloom_tensors, err) ? -1 : 0;
}

const oxl_arch oxl_arch_bloom = OXL_DECODER_ARCH("bloom", bloom_load);
