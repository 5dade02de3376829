/* DBRX ("dbrx"), as llama.cpp's src/models/dbrx.cpp builds it:
 *
 *   x = token_embd[tokens]
 *   per layer:  q, k, v = clamp(Wqkv · LN(x), -clamp_kqv, clamp_kqv)     (fused, LayerNorm without bias)
 *               h = x + Wo · attention(rope_neox(q), rope_neox(k), v)
 *               x = h + moe(LN(h, attn_output_norm))                    (softmax router, top-k renormalised)
 *   logits = output · LN(x)
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec dbrx_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM),       OXL_REQ(T_OUTPUT), OXL_REQ(L_ATTN_NORM), OXL_REQ(L_ATTN_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_ATTN_OUT_NORM_FFN), OXL_REQ(L_MOE),
};

static int dbrx_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_SWIGLU, .moe = {.norm_w = true}};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || oxl_moe_hparams(m, &o.moe, m->hp.n_ff, 0, err) ||
        oxl_hp_float(m, "attention.clamp_kqv", &o.clamp_kqv, true, err)) {
        return -1;
    }
    if (o.moe.n_expert == 0) {
        return oxl_err_set(err, "%s: dbrx.expert_count is missing or 0; DBRX needs experts", oxl_gguf_path(m->gguf));
    }
    return OXL_DECODER_LOAD(m, &o, dbrx_tensors, err);
}

const oxl_arch oxl_arch_dbrx = OXL_DECODER_ARCH("dbrx", dbrx_load);
