/* GLM-4.5 ("glm4moe"), as llama.cpp's src/models/glm4-moe.cpp loads and builds it:
 *
 *   q, k, v = W·rms(x) + b;  q, k = rms_head(q), rms_head(k) when attn_q/k_norm exist
 *   h = x + Wo · attention(rope_neox(q), rope_neox(k), v)   (partial rotary: rope.dimension_count)
 *   the FFN reads rms(h, post_attention_norm):
 *   layers < leading_dense_block_count:  x = h + swiglu_ffn
 *   the others:                          x = h + moe + shared
 *   moe: expert_gating_func (absent or 0: sigmoid), exp_probs_b selection bias, the top-k weights
 *        renormalised when expert_weights_norm, then x expert_weights_scale
 *   shared: expert_shared_count experts side by side (n_ff_exp each), ungated SwiGLU
 *   logits = output · rms(x)   (tied to token_embd when output is absent)
 *
 * block_count includes nextn_predict_layers NextN/MTP blocks at the end (blk.N with the nextn.*
 * tensors): llama.cpp loads them as unused and runs the first block_count - nextn_predict_layers.
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec glm4moe_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),  OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),
    OXL_REQ(L_ATTN_NORM),   OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT),
    OXL_OPT(L_Q_NORM_HEAD), OXL_OPT(L_K_NORM_HEAD), OXL_REQ(L_POST_ATTN_NORM_FFN),
    OXL_OPT(L_FFN_GATE),    OXL_OPT(L_FFN_UP),      OXL_OPT(L_FFN_DOWN),
    OXL_REQ(L_MOE),
};

static int glm4moe_load(oxl_model *m, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .moe_parts = OXL_MOE_HAS_PROBS_B};
    int32_t gating = 0;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || oxl_decoder_refuse_mrope(m, err) ||
        oxl_decoder_skip_nextn(m, &o, err) || oxl_hp_count(m, "expert_gating_func", &gating, false, err) ||
        oxl_moe_hparams(m, &o.moe, 0, OXL_MOE_KEY_FF_EXP | OXL_MOE_KEY_DEEPSEEK, err)) {
        return -1;
    }
    if (gating == 0) {
        o.moe.gating = OXL_MOE_SIGMOID; /* llama.cpp's default for this architecture */
    }
    if (o.moe.n_expert == 0 || o.moe.n_ff_exp == 0) {
        return oxl_err_set(err, "%s: glm4moe.expert_count / expert_feed_forward_length missing or 0", path);
    }
    if (o.moe.n_ff_shexp > 0) {
        o.moe_parts |= OXL_MOE_HAS_SHEXP;
    }
    if (OXL_DECODER_LOAD(m, &o, glm4moe_tensors, err)) {
        return -1;
    }
    const oxl_decoder *d = m->weights;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const oxl_decoder_layer *l = &d->layers[il];
        if (il < o.moe.n_dense_lead && (!l->ffn_gate.data || !l->ffn_up.data || !l->ffn_down.data)) {
            return oxl_err_set(err, "%s: leading dense layer %d lacks blk.%d.ffn_gate/up/down.weight", path, il, il);
        }
        if (il >= o.moe.n_dense_lead && !l->moe.exp_probs_b.data) {
            return oxl_err_set(err, "%s: missing tensor 'blk.%d.exp_probs_b.bias'", path, il);
        }
    }
    return 0;
}

const oxl_arch oxl_arch_glm4moe = OXL_DECODER_ARCH("glm4moe", glm4moe_load);
