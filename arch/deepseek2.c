/* DeepSeek-V2 / V3 ("deepseek2"), as llama.cpp's src/models/deepseek2.cpp builds it (MLA path):
 *
 *   x = token_embd[tokens]
 *   per layer:  h = x + mla(rms(x))                         (latent attention, mla.h; normal RoPE on the rope dims)
 *               x = h + ffn(rms(h))
 *   ffn: layers < leading_dense_block_count: dense SwiGLU; the others the MoE block with the shared
 *        experts added (ungated): softmax (V2) or sigmoid (V3, expert_gating_func 2) gating, the
 *        exp_probs_b selection bias and expert groups when present, expert_weights_norm, and
 *        expert_weights_scale
 *   logits = output · rms(x)
 *
 * YaRN (V3) as llama.cpp pre-scales it: with rope.scaling.yarn_log_multiplier (the file's value / 0.1),
 * RoPE's attn_factor is get_mscale(f, m) / get_mscale(f, log_mul) / (1 + 0.1 ln f) and the softmax
 * scale is (attn_factor (1 + 0.1 ln f) (1 + 0.1 log_mul ln f))^2 / sqrt(key_length_mla).
 */
#include "decoder.h"
#include "errors.h"

#include <math.h>

static const oxl_tensor_spec deepseek2_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT), OXL_REQ(L_ATTN_NORM), OXL_REQ(L_MLA),
    OXL_REQ(L_FFN_NORM),   OXL_OPT(L_FFN_GATE),    OXL_OPT(L_FFN_UP), OXL_OPT(L_FFN_DOWN),  OXL_REQ(L_MOE),
};

/* llama_context's YaRN magnitude for a scaling factor and an mscale. */
static float get_mscale(float scale, float mscale) { return scale <= 1.0f ? 1.0f : 0.1f * mscale * logf(scale) + 1.0f; }

static int deepseek2_load(oxl_model *m, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {
        .norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .moe_parts = OXL_MOE_HAS_SHEXP | OXL_MOE_HAS_PROBS_B};
    float log_mul = 0.0f, rope_attn_factor = 1.0f;
    if (oxl_hp_int(m, "attention.kv_lora_rank", &o.mla.kv_lora_rank, true, err) ||
        oxl_hp_count(m, "attention.q_lora_rank", &o.mla.q_lora_rank, true, err) ||
        oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err) ||
        oxl_hp_float(m, "rope.scaling.yarn_log_multiplier", &log_mul, false, err) ||
        oxl_hp_float(m, "rope.scaling.attn_factor", &rope_attn_factor, false, err) ||
        oxl_moe_hparams(m, &o.moe, 0, OXL_MOE_KEY_FF_EXP | OXL_MOE_KEY_DEEPSEEK, err)) {
        return -1;
    }
    oxl_hparams *hp = &m->hp;
    char key[96];
    snprintf(key, sizeof key, "%s.attention.key_length_mla", m->arch->name);
    const bool has_k_mla = oxl_gguf_find_key(m->gguf, key) >= 0;
    snprintf(key, sizeof key, "%s.attention.value_length_mla", m->arch->name);
    /* llama_hparams::is_mla(): files without the *_mla keys were converted with the merged attn_kv_b */
    o.mla.merged_kv_b = !has_k_mla && oxl_gguf_find_key(m->gguf, key) < 0;
    o.mla.head_k = hp->head_dim;
    o.mla.head_v = hp->head_dim;
    if (oxl_hp_int(m, "attention.value_length", &o.mla.head_v, false, err) ||
        oxl_hp_int(m, "attention.key_length_mla", &o.mla.head_k, false, err) ||
        oxl_hp_int(m, "attention.value_length_mla", &o.mla.head_v, false, err)) {
        return -1;
    }
    if (o.mla.head_k <= hp->n_rot || o.mla.head_v > 4096 || o.mla.kv_lora_rank + hp->n_rot > 1024) {
        return oxl_err_set(err,
                           "%s: deepseek2 key_length_mla %d must exceed rope.dimension_count %d; value_length_mla "
                           "%d, kv_lora_rank %d out of range",
                           path, o.mla.head_k, hp->n_rot, o.mla.head_v, o.mla.kv_lora_rank);
    }
    if (o.moe.n_expert == 0 || o.moe.n_ff_exp == 0) {
        return oxl_err_set(err, "%s: deepseek2.expert_count / expert_feed_forward_length missing or 0", path);
    }
    if (o.mla.merged_kv_b) {
        /* multi-head attention over decompressed keys and values (V padded to head_k in the cache) */
        if (o.mla.head_v > o.mla.head_k) {
            return oxl_err_set(err, "%s: deepseek2 without key_length_mla: value_length %d exceeds key_length %d", path,
                               o.mla.head_v, o.mla.head_k);
        }
        hp->head_dim = o.mla.head_k;
        hp->head_dim_v = 0;
        hp->n_head_kv = hp->n_head;
    } else {
        /* the cache holds one "head" per token: the latent and the rotated rope key */
        hp->head_dim = o.mla.kv_lora_rank + hp->n_rot;
        hp->head_dim_v = o.mla.kv_lora_rank;
        hp->n_head_kv = 1;
    }
    o.mla.norm_eps = o.norm_eps;
    if (log_mul != 0.0f) {
        log_mul /= 0.1f; /* the converter's factor, cancelled as llama.cpp does */
    }
    const float f = 1.0f / o.rope.freq_scale;
    if (o.rope.ext_factor != 0.0f && log_mul != 0.0f) {
        const float mscale = log_mul != 1.0f ? log_mul : 1.0f;
        o.rope.attn_factor =
            get_mscale(f, mscale) / get_mscale(f, log_mul) / (1.0f + 0.1f * logf(f)) * rope_attn_factor;
    }
    o.rope_swa = o.rope;
    const float attn_factor_org = o.rope.attn_factor * (1.0f + 0.1f * logf(f));
    const float mscale = attn_factor_org * (1.0f + 0.1f * log_mul * logf(f));
    o.mla.kq_scale = o.kq_scale = mscale * mscale / sqrtf((float)o.mla.head_k);
    if (OXL_DECODER_LOAD(m, &o, deepseek2_tensors, err)) {
        return -1;
    }
    const oxl_decoder *d = m->weights;
    for (int il = 0; il < o.moe.n_dense_lead && il < hp->n_layer; il++) {
        const oxl_decoder_layer *l = &d->layers[il];
        if (!l->ffn_gate.data || !l->ffn_up.data || !l->ffn_down.data) {
            return oxl_err_set(err, "%s: leading dense layer %d lacks blk.%d.ffn_gate/up/down.weight", path, il, il);
        }
    }
    return 0;
}

const oxl_arch oxl_arch_deepseek2 = OXL_DECODER_ARCH("deepseek2", deepseek2_load);
