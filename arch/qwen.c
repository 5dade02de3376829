/* Qwen2 and Qwen3 ("qwen2", "qwen3"), as llama.cpp's src/models/qwen2.cpp and qwen3.cpp build them:
 * the LLaMA block with NeoX-style RoPE,
 *
 *   qwen2: q, k, v = W·rms(x) + b          (biases on the three projections, none on Wo)
 *   qwen3: q, k = rms_head(W·rms(x))       (per-head RMSNorm of q and k before RoPE, weights (head_dim);
 *                                           head_dim may differ from n_embd / n_head)
 *   then h = x + Wo · attention(rope(q), rope(k), v);  x = h + Wdown · (silu(Wgate·rms(h)) * Wup·rms(h))
 *   logits = output · rms(x) (+ output.bias for qwen2)   (tied to token_embd when output is absent)
 *
 * The MoE variants replace the FFN with the MoE block (moe.h), softmax router:
 *   qwen2moe: qwen2's attention; top-k weights NOT renormalised, plus a shared SwiGLU expert gated by
 *             sigmoid(x · ffn_gate_inp_shexp); expert width defaults to n_ff / n_expert_used
 *   qwen3moe: qwen3's attention; top-k weights renormalised
 *
 * qwen2vl's text path is qwen2 with M-RoPE (ggml_rope_multi): rope.dimension_sections split the
 * rotated pairs into t, h, w and extra sections; text tokens have t = h = w = their position and
 * extra = 0. Its llama.cpp loader reads only the sections, so RMSNorm runs with eps 0 whatever
 * attention.layer_norm_rms_epsilon says.
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec qwen2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),   OXL_OPT(T_OUTPUT_B),
    OXL_REQ(L_ATTN_NORM),  OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT), OXL_REQ(L_FFN_NORM),
    OXL_REQ(L_FFN_GATE),   OXL_REQ(L_FFN_UP),      OXL_REQ(L_FFN_DOWN),
};

static const oxl_tensor_spec qwen3_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),      OXL_REQ(L_ATTN_NORM),
    OXL_REQ(L_QKV),        OXL_REQ(L_ATTN_OUT),    OXL_REQ(L_Q_NORM_HEAD), OXL_REQ(L_K_NORM_HEAD),
    OXL_REQ(L_FFN_NORM),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP),      OXL_REQ(L_FFN_DOWN),
};

static const oxl_tensor_spec qwen2moe_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT),   OXL_REQ(L_ATTN_NORM),
    OXL_REQ(L_QKV),        OXL_REQ(L_ATTN_OUT),    OXL_REQ(L_FFN_NORM), OXL_REQ(L_MOE),
};

static const oxl_tensor_spec qwen3moe_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),      OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_Q_NORM_HEAD), OXL_REQ(L_K_NORM_HEAD), OXL_REQ(L_FFN_NORM),  OXL_REQ(L_MOE),
};

/* Both MoE variants refuse a model without experts, as llama.cpp's loaders do. */
static int moe_keys(oxl_model *m, oxl_decoder_opts *o, int32_t n_ff_default, unsigned keys, oxl_error *err) {
    if (oxl_moe_hparams(m, &o->moe, n_ff_default, keys, err)) {
        return -1;
    }
    if (o->moe.n_expert == 0) {
        return oxl_err_set(err, "%s: %s.expert_count is missing or 0; this architecture needs experts",
                           oxl_gguf_path(m->gguf), m->arch->name);
    }
    return 0;
}

static int qwen2moe_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {
        .norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .moe_parts = OXL_MOE_HAS_SHEXP | OXL_MOE_HAS_SHEXP_GATE};
    int32_t used = 1;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || oxl_hp_count(m, "expert_used_count", &used, false, err)) {
        return -1;
    }
    if (moe_keys(m, &o, m->hp.n_ff / (used > 0 ? used : 1), OXL_MOE_KEY_FF_EXP | OXL_MOE_KEY_FF_SHEXP, err)) {
        return -1;
    }
    if (o.moe.n_ff_shexp == 0) {
        o.moe.n_ff_shexp = m->hp.n_ff;
    }
    return OXL_DECODER_LOAD(m, &o, qwen2moe_tensors, err);
}

static int qwen3moe_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .moe = {.norm_w = true}};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || moe_keys(m, &o, m->hp.n_ff, OXL_MOE_KEY_FF_EXP, err)) {
        return -1;
    }
    return OXL_DECODER_LOAD(m, &o, qwen3moe_tensors, err);
}

static int qwen2vl_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_MROPE, err) ||
        oxl_hp_int_layers(m, "rope.dimension_sections", o.rope.sections, 4, true, err)) {
        return -1;
    }
    const int32_t *sec = o.rope.sections;
    const int64_t sum = (int64_t)sec[0] + sec[1] + sec[2] + sec[3];
    if (sum < 1 || sum > m->hp.head_dim) {
        return oxl_err_set(err, "%s: qwen2vl.rope.dimension_sections [%d, %d, %d, %d] must sum to 1 .. head size %d",
                           oxl_gguf_path(m->gguf), sec[0], sec[1], sec[2], sec[3], m->hp.head_dim);
    }
    o.rope_swa = o.rope;
    o.norm_eps = 0.0f;
    return OXL_DECODER_LOAD(m, &o, qwen2_tensors, err);
}

static int qwen2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || OXL_DECODER_LOAD(m, &o, qwen2_tensors, err) ? -1 : 0;
}

static int qwen3_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    return oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) || OXL_DECODER_LOAD(m, &o, qwen3_tensors, err) ? -1 : 0;
}

const oxl_arch oxl_arch_qwen2 = OXL_DECODER_ARCH("qwen2", qwen2_load);
const oxl_arch oxl_arch_qwen3 = OXL_DECODER_ARCH("qwen3", qwen3_load);
const oxl_arch oxl_arch_qwen2moe = OXL_DECODER_ARCH("qwen2moe", qwen2moe_load);
const oxl_arch oxl_arch_qwen3moe = OXL_DECODER_ARCH("qwen3moe", qwen3moe_load);
const oxl_arch oxl_arch_qwen2vl = OXL_DECODER_ARCH("qwen2vl", qwen2vl_load);
