/* ERNIE 4.5 MoE ("ernie4_5-moe"), as llama.cpp's src/models/ernie4-5.cpp loads it and
 * ernie4-5-moe.cpp builds it: the LLaMA block with normal (GPT-J) RoPE and an optional Wo bias,
 *
 *   h = x + Wo · attention(rope(q), rope(k), v) (+ bo)
 *   layers < leading_dense_block_count:  x = h + swiglu_ffn(rms(h))
 *   the others:                          x = h + moe(rms(h)) + shared(rms(h))
 *   moe: softmax router; exp_probs_b (optional) added to the probabilities for the selection only;
 *        the top-k weights renormalised; experts n_ff = expert_feed_forward_length
 *   shared: an ungated SwiGLU expert of expert_shared_feed_forward_length rows (absent when 0)
 *   logits = output · rms(x)   (tied to token_embd when output is absent)
 *
 * interleave_moe_layer_step must be 1: llama.cpp creates expert tensors on every layer past the dense
 * ones, so another step leaves its graph without the FFN it asks for.
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec ernie4_5moe_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),     OXL_REQ(L_ATTN_NORM),
    OXL_REQ(L_QKV),        OXL_REQ(L_ATTN_OUT),    OXL_OPT(L_ATTN_OUT_B), OXL_REQ(L_FFN_NORM),
    OXL_OPT(L_FFN_GATE),   OXL_OPT(L_FFN_UP),      OXL_OPT(L_FFN_DOWN),   OXL_REQ(L_MOE),
};

static int ernie4_5moe_load(oxl_model *m, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .moe_parts = OXL_MOE_HAS_PROBS_B};
    o.moe.norm_w = true;
    int32_t n_ff_exp = 0, step = 0;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err) ||
        oxl_hp_count(m, "expert_feed_forward_length", &n_ff_exp, true, err) ||
        oxl_hp_count(m, "interleave_moe_layer_step", &step, true, err) ||
        oxl_moe_hparams(m, &o.moe, n_ff_exp, OXL_MOE_KEY_FF_EXP | OXL_MOE_KEY_FF_SHEXP, err) ||
        oxl_hp_count(m, "leading_dense_block_count", &o.moe.n_dense_lead, false, err)) {
        return -1;
    }
    if (o.moe.n_expert == 0 || o.moe.n_ff_exp == 0) {
        return oxl_err_set(err, "%s: ernie4_5-moe.expert_count / expert_feed_forward_length missing or 0", path);
    }
    if (step != 1) {
        return oxl_err_set(err, "%s: ernie4_5-moe.interleave_moe_layer_step = %d is unsupported (only 1)", path, step);
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err, "%s: ernie4_5-moe.rope.dimension_count = %d must equal the head size %d", path,
                           m->hp.n_rot, m->hp.head_dim);
    }
    if (o.moe.n_ff_shexp > 0) {
        o.moe_parts |= OXL_MOE_HAS_SHEXP;
    }
    if (OXL_DECODER_LOAD(m, &o, ernie4_5moe_tensors, err)) {
        return -1;
    }
    const oxl_decoder *d = m->weights;
    for (int il = 0; il < o.moe.n_dense_lead && il < m->hp.n_layer; il++) {
        const oxl_decoder_layer *l = &d->layers[il];
        if (!l->ffn_gate.data || !l->ffn_up.data || !l->ffn_down.data) {
            return oxl_err_set(err, "%s: leading dense layer %d lacks blk.%d.ffn_gate/up/down.weight", path, il, il);
        }
    }
    return 0;
}

const oxl_arch oxl_arch_ernie4_5moe = OXL_DECODER_ARCH("ernie4_5-moe", ernie4_5moe_load);
