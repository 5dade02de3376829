/* Mistral 3 ("mistral3": Ministral 3 and the Mistral Small 3 text models), as llama.cpp's
 * src/models/mistral3.cpp builds it: the LLaMA block with Llama-4-style attention temperature,
 *
 *   x = token_embd[tokens]
 *   per layer:  q, k, v = W · rms(x);  q, k = rope(q), rope(k)   (normal RoPE, YaRN from the file)
 *               q *= 1 + temperature_scale * ln(1 + floor(pos / original_context_length))
 *               h = x + Wo · attention(q, k, v) + bo
 *               x = h + swiglu_ffn(rms(h))
 *   logits = output · rms(x)            (tied to token_embd when output is absent)
 *
 * The temperature is on when attention.temperature_scale is set and non-zero; its floor scale is
 * rope.scaling.original_context_length (llama.cpp's n_ctx_orig_yarn). YaRN reads the file's
 * yarn_beta_fast / yarn_beta_slow and, with rope.scaling.yarn_log_multiplier (mscale_all_dim, as
 * the converter writes it), RoPE's attn_factor is get_mscale(f, 1) / get_mscale(f, log_mul) /
 * (1 + 0.1 ln f) times rope.scaling.attn_factor (llama_context's yarn_attn_factor). The MoE variant
 * (expert_count > 0) is not supported.
 */
#include "decoder.h"
#include "errors.h"

#include <math.h>

static const oxl_tensor_spec mistral3_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT), OXL_OPT(T_ROPE_FREQS), OXL_OPT(T_ROPE_LONG),
    OXL_OPT(T_ROPE_SHORT), OXL_REQ(L_ATTN_NORM),   OXL_REQ(L_QKV),    OXL_REQ(L_ATTN_OUT),   OXL_OPT(L_ATTN_OUT_B),
    OXL_REQ(L_FFN_NORM),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP), OXL_REQ(L_FFN_DOWN),   OXL_OPT(L_FFN_GATE_B),
    OXL_OPT(L_FFN_UP_B),   OXL_OPT(L_FFN_DOWN_B),
};

/* llama_context's YaRN magnitude for a scaling factor and an mscale. */
static float get_mscale(float scale, float mscale) { return scale <= 1.0f ? 1.0f : 0.1f * mscale * logf(scale) + 1.0f; }

static int mistral3_load(oxl_model *m, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    float log_mul = 0.0f, rope_attn_factor = 1.0f;
    int32_t n_expert = 0;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err) ||
        oxl_hp_float(m, "attention.temperature_scale", &o.attn_temp.scale, false, err) ||
        oxl_hp_float(m, "rope.scaling.yarn_beta_fast", &o.rope.beta_fast, false, err) ||
        oxl_hp_float(m, "rope.scaling.yarn_beta_slow", &o.rope.beta_slow, false, err) ||
        oxl_hp_float(m, "rope.scaling.yarn_log_multiplier", &log_mul, false, err) ||
        oxl_hp_float(m, "rope.scaling.attn_factor", &rope_attn_factor, false, err) ||
        oxl_hp_count(m, "expert_count", &n_expert, false, err)) {
        return -1;
    }
    if (n_expert != 0) {
        return oxl_err_set(err, "%s: mistral3.expert_count = %d: the mixture-of-experts variant is not supported", path,
                           n_expert);
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err, "%s: mistral3.rope.dimension_count = %d must equal the head size %d", path, m->hp.n_rot,
                           m->hp.head_dim);
    }
    o.attn_temp.offset = 0.0f;
    o.attn_temp.floor_scale = (uint32_t)o.n_ctx_orig; /* positive: read as such */
    if (o.rope.ext_factor != 0.0f && log_mul != 0.0f) {
        const float f = 1.0f / o.rope.freq_scale;
        o.rope.attn_factor = get_mscale(f, 1.0f) / get_mscale(f, log_mul);
        o.rope.attn_factor *= 1.0f / (1.0f + 0.1f * logf(f));
        o.rope.attn_factor *= rope_attn_factor;
    }
    o.rope_swa = o.rope;
    return OXL_DECODER_LOAD(m, &o, mistral3_tensors, err);
}

const oxl_arch oxl_arch_mistral3 = OXL_DECODER_ARCH("mistral3", mistral3_load);
