/* MiniMax-M2 ("minimax-m2"), as llama.cpp's src/models/minimax-m2.cpp builds it:
 *
 *   q, k = rms(Wq·rms(x)), rms(Wk·rms(x))   over ALL heads at once (weights (n_head*head_dim) and
 *                                            (n_head_kv*head_dim)), before the head split
 *   h = x + Wo · attention(rope_neox(q), rope_neox(k), Wv·rms(x))   (partial rotary:
 *                                            rope.dimension_count of head_dim)
 *   x = h + moe(rms(h))
 *   moe: expert_gating_func (required; the file's is sigmoid), exp_probs_b selection bias, the top-k
 *        weights renormalised; experts n_ff = feed_forward_length
 *   logits = output · rms(x)   (output.weight required)
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec minimax_m2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT),      OXL_REQ(L_QKV),      OXL_REQ(L_ATTN_OUT),
    OXL_REQ(L_ATTN_NORM),  OXL_REQ(L_Q_NORM_FULL), OXL_REQ(L_K_NORM_FULL), OXL_REQ(L_FFN_NORM), OXL_REQ(L_MOE),
};

static int minimax_m2_load(oxl_model *m, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS,
                          .ffn = OXL_FFN_SWIGLU,
                          .qk_norm_full = true,
                          .moe_parts = OXL_MOE_HAS_PROBS_B,
                          .moe = {.norm_w = true}};
    int32_t n_ff_exp = 0, gating = 0;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) ||
        oxl_hp_count(m, "expert_feed_forward_length", &n_ff_exp, true, err) ||
        oxl_hp_count(m, "expert_gating_func", &gating, false, err)) {
        return -1;
    }
    if (gating < OXL_MOE_SOFTMAX || gating > OXL_MOE_SOFTMAX_WEIGHT) {
        return oxl_err_set(err,
                           "%s: minimax-m2.expert_gating_func = %d is not 1 (softmax), 2 (sigmoid) or 3 (softmax "
                           "of the selected)",
                           path, gating);
    }
    o.moe.gating = (oxl_moe_gating)gating;
    if (oxl_moe_hparams(m, &o.moe, m->hp.n_ff, 0, err)) {
        return -1;
    }
    if (o.moe.n_expert == 0) {
        return oxl_err_set(err, "%s: minimax-m2.expert_count is missing or 0; this architecture needs experts", path);
    }
    if (OXL_DECODER_LOAD(m, &o, minimax_m2_tensors, err)) {
        return -1;
    }
    const oxl_decoder *d = m->weights;
    for (int il = 0; il < m->hp.n_layer; il++) {
        if (!d->layers[il].moe.exp_probs_b.data) {
            return oxl_err_set(err, "%s: missing tensor 'blk.%d.exp_probs_b.bias'", path, il);
        }
    }
    return 0;
}

const oxl_arch oxl_arch_minimax_m2 = OXL_DECODER_ARCH("minimax-m2", minimax_m2_load);
