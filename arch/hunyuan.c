/* Hunyuan dense and MoE ("hunyuan-dense", "hunyuan-moe"), as llama.cpp's src/models/hunyuan-vl.cpp
 * (whose loader and graph hunyuan-dense uses) and hunyuan-moe.cpp build them: the LLaMA block with
 * NeoX RoPE and per-head q/k RMSNorms applied AFTER RoPE,
 *
 *   q, k = rms_head(rope(Wq·rms(x))), rms_head(rope(Wk·rms(x)))   (weights (head_dim))
 *   h = x + Wo · attention(q, k, Wv·rms(x))
 *   hunyuan-dense: x = h + swiglu_ffn(rms(h))
 *   hunyuan-moe:   x = h + moe(rms(h)) + mlp(rms(h))
 *   moe: softmax router, top-k weights renormalised, experts n_ff = feed_forward_length
 *   mlp: an always-on SwiGLU MLP in the *_shexp tensors (expert_shared_feed_forward_length rows,
 *        feed_forward_length when absent)
 *   logits = output · rms(x)   (tied to token_embd when output is absent)
 *
 * hunyuan-dense reads rope.scaling.alpha (NTK-aware): the base becomes
 * freq_base * alpha^(head_dim / (head_dim - 2)) at load; hunyuan-moe's loader does not use it.
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec hunyuan_dense_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),      OXL_REQ(L_ATTN_NORM),
    OXL_REQ(L_QKV),        OXL_REQ(L_ATTN_OUT),    OXL_REQ(L_K_NORM_HEAD), OXL_REQ(L_Q_NORM_HEAD),
    OXL_REQ(L_FFN_NORM),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP),      OXL_REQ(L_FFN_DOWN),
};

static const oxl_tensor_spec hunyuan_moe_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),      OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_K_NORM_HEAD), OXL_REQ(L_Q_NORM_HEAD), OXL_REQ(L_FFN_NORM),  OXL_REQ(L_MOE),
};

/* Both graphs assert a fully rotated head. */
static int full_rotary(const oxl_model *m, oxl_error *err) {
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err, "%s: %s.rope.dimension_count = %d must equal the head size %d", oxl_gguf_path(m->gguf),
                           m->arch->name, m->hp.n_rot, m->hp.head_dim);
    }
    return 0;
}

static int hunyuan_dense_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .qk_norm_after_rope = true};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || full_rotary(m, err) || oxl_decoder_refuse_mrope(m, err) ||
        oxl_decoder_rope_alpha(m, &o, err)) {
        return -1;
    }
    return OXL_DECODER_LOAD(m, &o, hunyuan_dense_tensors, err);
}

static int hunyuan_moe_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS,
                          .ffn = OXL_FFN_SWIGLU,
                          .qk_norm_after_rope = true,
                          .moe_parts = OXL_MOE_HAS_SHEXP,
                          .moe = {.norm_w = true}};
    int32_t n_ff_exp = 0;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || full_rotary(m, err) ||
        oxl_hp_count(m, "expert_feed_forward_length", &n_ff_exp, true, err) ||
        oxl_moe_hparams(m, &o.moe, m->hp.n_ff, OXL_MOE_KEY_FF_SHEXP, err)) {
        return -1;
    }
    if (o.moe.n_expert == 0) {
        return oxl_err_set(err, "%s: hunyuan-moe.expert_count is missing or 0; this architecture needs experts",
                           oxl_gguf_path(m->gguf));
    }
    if (o.moe.n_ff_shexp == 0) {
        o.moe.n_ff_shexp = m->hp.n_ff;
    }
    return OXL_DECODER_LOAD(m, &o, hunyuan_moe_tensors, err);
}

const oxl_arch oxl_arch_hunyuan_dense = OXL_DECODER_ARCH("hunyuan-dense", hunyuan_dense_load);
const oxl_arch oxl_arch_hunyuan_moe = OXL_DECODER_ARCH("hunyuan-moe", hunyuan_moe_load);
