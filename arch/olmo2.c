/* OLMo 2 and OLMo 3 ("olmo2"), as llama.cpp's src/models/olmo2.cpp builds it: no pre-norms; the
 * branch outputs are normalised instead, and q, k get RMSNorms over their whole projection width,
 *
 *   q, k = rms(Wq·x), rms(Wk·x)     (weights (n_head*head_dim) and (n_head_kv*head_dim), not per head)
 *   h = x + rms_post(Wo · attention(rope(q), rope(k), Wv·x))
 *   x = h + rms_post(Wdown · (silu(Wgate·h) * Wup·h))
 *   logits = output · rms(x)
 *
 * NeoX RoPE. OLMo 3 files set attention.sliding_window: then layers with il % pattern < pattern - 1
 * (pattern 4 unless set) use the window and plain RoPE (rope.freq_base_swa or freq_base, no
 * scaling, no YaRN), while the full-attention layers keep the file's scaling (e.g. YaRN).
 */
#include "decoder.h"

static const oxl_tensor_spec olmo2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),  OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT),   OXL_REQ(L_QKV),
    OXL_REQ(L_Q_NORM_FULL), OXL_REQ(L_K_NORM_FULL), OXL_REQ(L_ATTN_OUT), OXL_REQ(L_ATTN_POST_NORM),
    OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP),      OXL_REQ(L_FFN_DOWN), OXL_REQ(L_FFN_POST_NORM),
};

static int olmo2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .qk_norm_full = true};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) ||
        oxl_hp_int(m, "attention.sliding_window", &o.n_swa, false, err)) {
        return -1;
    }
    if (o.n_swa > 0) {
        o.rope_swa.freq_scale = 1.0f;
        o.rope_swa.ext_factor = 0.0f;
        o.rope_swa.attn_factor = 1.0f;
        if (oxl_decoder_swa_pattern(m, &o, 4, err) ||
            oxl_hp_float(m, "rope.freq_base_swa", &o.rope_swa.freq_base, false, err)) {
            return -1;
        }
    }
    return OXL_DECODER_LOAD(m, &o, olmo2_tensors, err);
}

const oxl_arch oxl_arch_olmo2 = OXL_DECODER_ARCH("olmo2", olmo2_load);
