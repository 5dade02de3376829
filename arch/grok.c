/* Grok ("grok"), as llama.cpp's src/models/grok.cpp builds it:
 *
 *   x = token_embd[tokens] * embedding_scale
 *   per layer:  s = attention scores of rope_neox(q), rope_neox(k) with kq_scale 1:
 *                   cap * tanh(q·k * attention.output_scale / cap)      (cap: attn_logit_softcapping)
 *               h = x + rms(Wo · softmax(s) v, attn_output_norm)
 *               f = rms(h, ffn_norm)
 *               x = h + rms((geglu_ffn(f) + moe(f)) * sqrt(2)/2, layer_output_norm)
 *                   (without the dense ffn_up/gate/down: moe(f) alone; GELU-gated experts, softmax
 *                   router, top-k renormalised; router_logit_softcapping is read but unused, as in
 *                   llama.cpp)
 *   logits = final_cap * tanh(output · rms(x) * logit_scale / final_cap)
 *
 * The output scale is applied to q before the dot product, which equals scaling the score.
 */
#include "decoder.h"
#include "errors.h"

#include <math.h>

static const oxl_tensor_spec grok_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM),   OXL_OPT(T_OUTPUT),         OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_ATTN_OUT_NORM), OXL_REQ(L_FFN_NORM),       OXL_OPT(L_FFN_GATE),  OXL_OPT(L_FFN_UP),
    OXL_OPT(L_FFN_DOWN),   OXL_REQ(L_MOE),           OXL_REQ(L_LAYER_OUT_NORM),
};

static int grok_load(oxl_model *m, oxl_error *err) {
    /* llama.cpp's defaults for files without the keys (Grok-1) */
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS,
                          .ffn = OXL_FFN_GEGLU,
                          .moe = {.norm_w = true, .act = OXL_MOE_GELU},
                          .embd_scale = 78.38367176906169f,
                          .logit_scale = 0.5773502691896257f,
                          .attn_softcap = 30.0f,
                          .q_scale = 0.08838834764831845f,
                          .kq_scale = 1.0f,
                          .moe_dense_scale = sqrtf(2.0f) / 2.0f};
    oxl_decoder_opts keys = o;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) ||
        oxl_moe_hparams(m, &o.moe, m->hp.n_ff, OXL_MOE_KEY_FF_EXP, err) ||
        oxl_hp_float(m, "embedding_scale", &o.embd_scale, false, err) ||
        oxl_hp_float(m, "logit_scale", &o.logit_scale, false, err) ||
        oxl_hp_float(m, "attention.output_scale", &o.q_scale, false, err) ||
        oxl_hp_float(m, "attn_logit_softcapping", &o.attn_softcap, false, err) ||
        oxl_hp_float(m, "final_logit_softcapping", &o.final_softcap, false, err)) {
        return -1;
    }
    o.kq_scale = keys.kq_scale; /* oxl_decoder_hparams set 1/sqrt(head_dim); Grok's graph uses 1 */
    if (o.moe.n_expert == 0) {
        return oxl_err_set(err, "%s: grok.expert_count is missing or 0; Grok needs experts", oxl_gguf_path(m->gguf));
    }
    if (o.attn_softcap == 0.0f) {
        return oxl_err_set(err, "%s: grok.attn_logit_softcapping = 0; the graph divides by it", oxl_gguf_path(m->gguf));
    }
    return OXL_DECODER_LOAD(m, &o, grok_tensors, err);
}

const oxl_arch oxl_arch_grok = OXL_DECODER_ARCH("grok", grok_load);
