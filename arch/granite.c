/* Granite and MiniCPM ("granite", "minicpm"): llama.cpp builds both with src/models/granite.cpp's
 * graph, the LLaMA block with multipliers,
 *
 *   x = token_embd[tokens] * embedding_scale
 *   per layer:  h = x + residual_scale * (Wo · attention(rope(q), rope(k), v) + bo)   (kq_scale: attention.scale)
 *               x = h + residual_scale * swiglu_ffn(rms(h))
 *   logits = (output · rms(x)) / logit_scale                    (tied when output is absent)
 *
 * Granite reads logit_scale (required) and the optional multipliers, and applies RoPE only while
 * rope.scaling.finetuned (default true) holds. MiniCPM always applies RoPE and defaults the
 * multipliers when its file lacks them: embedding 12, residual 1.4/sqrt(n_layer), logit 256/n_embd.
 */
#include "decoder.h"
#include "errors.h"

#include <math.h>

static const oxl_tensor_spec granite_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT), OXL_OPT(T_ROPE_FREQS), OXL_OPT(T_ROPE_LONG),
    OXL_OPT(T_ROPE_SHORT), OXL_REQ(L_ATTN_NORM),   OXL_REQ(L_QKV),    OXL_REQ(L_ATTN_OUT),   OXL_OPT(L_ATTN_OUT_B),
    OXL_REQ(L_FFN_NORM),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP), OXL_REQ(L_FFN_DOWN),   OXL_OPT(L_FFN_GATE_B),
    OXL_OPT(L_FFN_UP_B),   OXL_OPT(L_FFN_DOWN_B),
};

/* Reads the multipliers; logit_scale becomes the factor the logits are multiplied by. */
static int granite_multipliers(oxl_model *m, oxl_decoder_opts *o, bool logit_scale_required, oxl_error *err) {
    float logit_scale = o->logit_scale, attention_scale = 0.0f;
    if (oxl_hp_float(m, "logit_scale", &logit_scale, logit_scale_required, err) ||
        oxl_hp_float(m, "residual_scale", &o->residual_scale, false, err) ||
        oxl_hp_float(m, "embedding_scale", &o->embd_scale, false, err) ||
        oxl_hp_float(m, "attention.scale", &attention_scale, false, err)) {
        return -1;
    }
    if (logit_scale == 0.0f) {
        return oxl_err_set(err, "%s: %s.logit_scale = 0: the logits are divided by it", oxl_gguf_path(m->gguf),
                           m->arch->name);
    }
    o->logit_scale = 1.0f / logit_scale;
    if (attention_scale != 0.0f) {
        o->kq_scale = attention_scale;
    }
    return 0;
}

static int granite_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    bool rope = true;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err) || granite_multipliers(m, &o, true, err) ||
        oxl_hp_bool(m, "rope.scaling.finetuned", &rope, false, err)) {
        return -1;
    }
    if (!rope) {
        o.rope.mode = OXL_ROPE_NONE;
    }
    return OXL_DECODER_LOAD(m, &o, granite_tensors, err);
}

static int minicpm_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err)) {
        return -1;
    }
    o.embd_scale = 12.0f;
    o.residual_scale = 1.4f / sqrtf((float)m->hp.n_layer);
    o.logit_scale = 256.0f / (float)m->hp.n_embd;
    return granite_multipliers(m, &o, false, err) || OXL_DECODER_LOAD(m, &o, granite_tensors, err) ? -1 : 0;
}

const oxl_arch oxl_arch_granite = OXL_DECODER_ARCH("granite", granite_load);
const oxl_arch oxl_arch_minicpm = OXL_DECODER_ARCH("minicpm", minicpm_load);
