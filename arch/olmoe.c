/* OLMoE ("olmoe"), as llama.cpp's src/models/olmoe.cpp builds it: the LLaMA block with NeoX RoPE,
 * q and k RMS-normalised over their whole projection width before the head split, and the MoE block
 * on every layer,
 *
 *   q, k = rms(Wq·rms(x)), rms(Wk·rms(x))    (weights (n_embd), as OLMo-2's)
 *   h = x + Wo · attention(rope(q), rope(k), Wv·rms(x))
 *   x = h + moe(rms(h))                      (softmax router, top-k weights NOT renormalised;
 *                                             experts n_ff = feed_forward_length)
 *   logits = output · rms(x)                 (output.weight required)
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec olmoe_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),  OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT),   OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_Q_NORM_FULL), OXL_REQ(L_K_NORM_FULL), OXL_REQ(L_ATTN_OUT), OXL_REQ(L_FFN_NORM),  OXL_REQ(L_MOE),
};

static int olmoe_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .qk_norm_full = true};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || oxl_moe_hparams(m, &o.moe, m->hp.n_ff, 0, err)) {
        return -1;
    }
    if (o.moe.n_expert == 0) {
        return oxl_err_set(err, "%s: olmoe.expert_count is missing or 0; this architecture needs experts",
                           oxl_gguf_path(m->gguf));
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err, "%s: olmoe.rope.dimension_count = %d must equal the head size %d",
                           oxl_gguf_path(m->gguf), m->hp.n_rot, m->hp.head_dim);
    }
    return OXL_DECODER_LOAD(m, &o, olmoe_tensors, err);
}

const oxl_arch oxl_arch_olmoe = OXL_DECODER_ARCH("olmoe", olmoe_load);
