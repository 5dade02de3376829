/* Gemma, Gemma 2 and Gemma 3 ("gemma", "gemma2", "gemma3"), as llama.cpp's src/models/gemma.cpp,
 * gemma2.cpp and gemma3.cpp build them:
 *
 *   x = token_embd[tokens] * sqrt(n_embd)
 *   per layer:  q, k, v = W · rms(x)             (gemma3: per-head RMSNorm of q and k)
 *               a = Wo · attention(rope(q) * q_scale, rope(k), v)     (NeoX RoPE, kq_scale 1)
 *               gemma:       h = x + a;              x = h + geglu_ffn(rms(h))
 *               gemma2/3:    h = x + rms_post(a);    x = h + rms_post(geglu_ffn(rms(h)))
 *   logits = token_embd · rms(x)                 (gemma2: soft-capped; gemma3 when its key is set)
 *
 * Gemma 2 alternates sliding-window layers (pattern 2, window 4096 unless set) with global ones and
 * soft-caps the attention scores (default 50); Gemma 3 has sliding windows only when the file sets
 * attention.sliding_window (pattern 6 by default), with its own RoPE base (rope.freq_base_swa,
 * default 10000, no scaling) on the local layers. q_scale is 1/sqrt(head_dim), except for the 27B
 * models (1/sqrt(n_embd / n_head)). The FFN's GELU is ggml's fp16-table tanh approximation.
 */
#include "decoder.h"

#include <math.h>

static const oxl_tensor_spec gemma_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),      OXL_REQ(L_ATTN_OUT),
    OXL_REQ(L_FFN_NORM),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP),    OXL_REQ(L_FFN_DOWN),
};

static const oxl_tensor_spec gemma2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM),    OXL_REQ(L_ATTN_NORM),     OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_ATTN_POST_NORM), OXL_REQ(L_FFN_NORM),      OXL_REQ(L_FFN_GATE),
    OXL_REQ(L_FFN_UP),     OXL_REQ(L_FFN_DOWN),       OXL_REQ(L_FFN_POST_NORM),
};

static const oxl_tensor_spec gemma3_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),  OXL_REQ(T_OUTPUT_NORM),   OXL_OPT(T_OUTPUT),         OXL_REQ(L_ATTN_NORM),
    OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT),      OXL_REQ(L_ATTN_POST_NORM), OXL_REQ(L_Q_NORM_HEAD),
    OXL_REQ(L_K_NORM_HEAD), OXL_REQ(L_FFN_NORM),      OXL_REQ(L_FFN_GATE),       OXL_REQ(L_FFN_UP),
    OXL_REQ(L_FFN_DOWN),    OXL_REQ(L_FFN_POST_NORM),
};

/* What the three share: RMSNorm, NeoX RoPE, GELU-gated FFN, embeddings * sqrt(n_embd), q pre-scaled. */
static int gemma_common(oxl_model *m, oxl_decoder_opts *o, int32_t n_layer_27b, oxl_error *err) {
    *o = (oxl_decoder_opts){.norm = OXL_NORM_RMS, .ffn = OXL_FFN_GEGLU};
    if (oxl_decoder_hparams(m, o, OXL_ROPE_NEOX, err)) {
        return -1;
    }
    const oxl_hparams *hp = &m->hp;
    o->embd_scale = sqrtf((float)hp->n_embd);
    o->q_scale =
        hp->n_layer == n_layer_27b ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head)) : 1.0f / sqrtf((float)hp->head_dim);
    o->kq_scale = 1.0f;
    return 0;
}

static int gemma_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o;
    if (gemma_common(m, &o, -1, err)) {
        return -1;
    }
    o.embd_scale_tokens_only = true;
    return OXL_DECODER_LOAD(m, &o, gemma_tensors, err);
}

static int gemma2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o;
    if (gemma_common(m, &o, 46, err)) {
        return -1;
    }
    o.n_swa = 4096;
    o.attn_softcap = 50.0f;
    o.final_softcap = 30.0f;
    if (oxl_decoder_swa_pattern(m, &o, 2, err) ||
        oxl_hp_float(m, "rope.freq_base_swa", &o.rope_swa.freq_base, false, err) ||
        oxl_hp_int(m, "attention.sliding_window", &o.n_swa, false, err) ||
        oxl_hp_float(m, "attn_logit_softcapping", &o.attn_softcap, false, err) ||
        oxl_hp_float(m, "final_logit_softcapping", &o.final_softcap, false, err)) {
        return -1;
    }
    return OXL_DECODER_LOAD(m, &o, gemma2_tensors, err);
}

static int gemma3_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o;
    if (gemma_common(m, &o, 62, err) || oxl_hp_int(m, "attention.sliding_window", &o.n_swa, false, err) ||
        oxl_hp_float(m, "final_logit_softcapping", &o.final_softcap, false, err)) {
        return -1;
    }
    o.embd_scale_tokens_only = true;
    /* mtmd decodes the images of Gemma 3's projector with causal attention off */
    m->hp.image_non_causal = true;
    if (o.n_swa > 0) {
        o.rope_swa.freq_base = 10000.0f;
        o.rope_swa.freq_scale = 1.0f;
        if (oxl_decoder_swa_pattern(m, &o, 6, err) ||
            oxl_hp_float(m, "rope.freq_base_swa", &o.rope_swa.freq_base, false, err)) {
            return -1;
        }
    }
    return OXL_DECODER_LOAD(m, &o, gemma3_tensors, err);
}

const oxl_arch oxl_arch_gemma = OXL_DECODER_ARCH("gemma", gemma_load);
const oxl_arch oxl_arch_gemma2 = OXL_DECODER_ARCH("gemma2", gemma2_load);
const oxl_arch oxl_arch_gemma3 = OXL_DECODER_ARCH("gemma3", gemma3_load);
