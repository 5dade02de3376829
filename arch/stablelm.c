/* StableLM ("stablelm"), as llama.cpp's src/models/stablelm.cpp builds it: LayerNorm with bias,
 * partial NeoX RoPE (rope.dimension_count of each head), SwiGLU, optional q/k/v biases,
 *
 *   a = LN(x);  q, k, v = W·a (+ b);  StableLM-2-12B: q, k = LN_head(q), LN_head(k) (one weight per head)
 *   o = Wo · attention(rope(q), rope(k), v)
 *   with ffn_norm:     h = x + o;  x = h + swiglu_ffn(LN(h))
 *   without (12B):     x = x + o + swiglu_ffn(a)                  (parallel residual on the same norm)
 *   logits = output · LN(x)
 */
#include "decoder.h"

static const oxl_tensor_spec stablelm_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),   OXL_REQ(T_OUTPUT_NORM),  OXL_REQ(T_OUTPUT_NORM_B), OXL_REQ(T_OUTPUT),
    OXL_REQ(L_ATTN_NORM),    OXL_REQ(L_ATTN_NORM_B),  OXL_REQ(L_QKV),           OXL_REQ(L_ATTN_OUT),
    OXL_OPT(L_Q_NORM_HEADS), OXL_OPT(L_K_NORM_HEADS), OXL_OPT(L_FFN_NORM),      OXL_OPT(L_FFN_NORM_B),
    OXL_REQ(L_FFN_GATE),     OXL_REQ(L_FFN_UP),       OXL_REQ(L_FFN_DOWN),
};

static int stablelm_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_SWIGLU, .parallel_if_no_ffn_norm = true};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || OXL_DECODER_LOAD(m, &o, stablelm_tensors, err) ? -1 : 0;
}

const oxl_arch oxl_arch_stablelm = OXL_DECODER_ARCH("stablelm", stablelm_load);
