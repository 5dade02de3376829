/* GPT-NeoX / Pythia ("gptneox"), as llama.cpp's src/models/gptneox.cpp builds it: fused QKV with
 * bias, partial NeoX RoPE (rope.dimension_count of each head), GELU MLP with biases, and
 * use_parallel_residual choosing between
 *
 *   parallel:    x = x + (Wo · attention(LN1(x)) + bo) + (Wdown · gelu(Wup·LN2(x) + bup) + bdown)
 *   sequential:  h = x + Wo · attention(LN1(x)) + bo;  x = h + Wdown · gelu(Wup·LN2(h) + bup) + bdown
 *   logits = output · LN(x)
 */
#include "decoder.h"

static const oxl_tensor_spec gptneox_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT_NORM_B), OXL_REQ(T_OUTPUT),
    OXL_REQ(L_ATTN_NORM),  OXL_REQ(L_ATTN_NORM_B), OXL_REQ(L_ATTN_QKV),      OXL_REQ(L_ATTN_QKV_B),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_ATTN_OUT_B),  OXL_REQ(L_FFN_NORM),      OXL_REQ(L_FFN_NORM_B),
    OXL_REQ(L_FFN_UP),     OXL_REQ(L_FFN_UP_B),    OXL_REQ(L_FFN_DOWN),      OXL_REQ(L_FFN_DOWN_B),
};

static int gptneox_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_GELU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) ||
                   oxl_hp_bool(m, "use_parallel_residual", &o.parallel, true, err) ||
                   OXL_DECODER_LOAD(m, &o, gptneox_tensors, err)
               ? -1
               : 0;
}

const oxl_arch oxl_arch_gptneox = OXL_DECODER_ARCH("gptneox", gptneox_load);
