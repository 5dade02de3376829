/* GLM-4 ("glm4"), as llama.cpp's src/models/glm4.cpp builds it: sandwich norms around both branches,
 *
 *   q, k, v = W·rms(x) + b                 (biases optional, attn_output without bias)
 *   h = x + rms_post(Wo · attention(rope(q), rope(k), v))          (post_attention_norm)
 *   x = h + rms_post(Wdown · swiglu(Wup·rms(h)))                   (ffn_up holds gate;up; post_ffw_norm)
 *   logits = output · rms(x)               (tied to token_embd when output is absent)
 *
 * Normal (GPT-J, adjacent pairs) RoPE on the first rope.dimension_count dims of each head (partial
 * rotary); files with rope.dimension_sections (GLM-4.1V) use M-RoPE instead, text positions on the
 * t, h, w sections. nextn_predict_layers (GLM-OCR) counts trailing multi-token-prediction blocks in
 * block_count that llama.cpp loads as unused and never runs: they are not evaluated here either.
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec glm4_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),  OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),         OXL_REQ(L_ATTN_NORM),
    OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT),    OXL_REQ(L_ATTN_POST_NORM), OXL_REQ(L_FFN_NORM),
    OXL_REQ(L_FFN_UP_GATE), OXL_REQ(L_FFN_DOWN),    OXL_REQ(L_FFN_POST_NORM),
};

static int glm4_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU_FUSED};
    int32_t sections[4] = {0, 0, 0, 0}, n_nextn = 0;
    if (oxl_hp_int_layers(m, "rope.dimension_sections", sections, 4, false, err) ||
        oxl_hp_count(m, "nextn_predict_layers", &n_nextn, false, err)) {
        return -1;
    }
    /* llama_model_rope_type: M-RoPE when the first two sections are set (hparams.use_mrope) */
    const bool mrope = sections[0] > 0 && sections[1] > 0;
    if (oxl_decoder_hparams(m, &o, mrope ? OXL_ROPE_MROPE : OXL_ROPE_NORM, err)) {
        return -1;
    }
    if (n_nextn >= m->hp.n_layer) {
        return oxl_err_set(err, "%s: glm4.nextn_predict_layers = %d must be below block_count %d",
                           oxl_gguf_path(m->gguf), n_nextn, m->hp.n_layer);
    }
    m->hp.n_layer -= n_nextn;
    if (mrope) {
        const int64_t sum = (int64_t)sections[0] + sections[1] + sections[2] + sections[3];
        if (sum > m->hp.head_dim) {
            return oxl_err_set(
                err, "%s: glm4.rope.dimension_sections [%d, %d, %d, %d] must sum to at most the head size %d",
                oxl_gguf_path(m->gguf), sections[0], sections[1], sections[2], sections[3], m->hp.head_dim);
        }
        for (int i = 0; i < 4; i++) {
            o.rope.sections[i] = sections[i];
        }
        o.rope_swa = o.rope;
    }
    return OXL_DECODER_LOAD(m, &o, glm4_tensors, err);
}

const oxl_arch oxl_arch_glm4 = OXL_DECODER_ARCH("glm4", glm4_load);
