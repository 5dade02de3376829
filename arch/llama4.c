/* Llama 4 ("llama4"), as llama.cpp's src/models/llama4.cpp builds it:
 *
 *   x = token_embd[tokens]
 *   per layer:  q, k, v = W · rms(x)
 *               RoPE layers ((il + 1) % 4 != 0): q, k = rope(q), rope(k) (normal, rope_freqs divisors),
 *                   then q, k RMS-normalised without weights (Llama4TextL2Norm; not with 128 experts)
 *               NoPE layers: q *= 1 + 0.1 ln(1 + floor((pos + 1) / 8192))   (attention temperature)
 *               h = x + Wo · attention(q, k, v)
 *               x = h + ffn(rms(h))
 *   ffn: on the layers with (il + 1) % interleave_moe_layer_step == 0 the experts: top-k chosen on
 *        the router logits, each weighted by sigmoid(its logit) applied to the expert's INPUT,
 *        plus a shared SwiGLU expert of n_ff_exp; elsewhere a dense SwiGLU FFN of n_ff
 *   logits = output · rms(x)            (tied to token_embd when output is absent)
 *
 * Attention: layer il is chunked (a query sees the keys of its own chunk of 8192 positions) when
 * il % pattern < pattern - 1 (attention.sliding_window_pattern, default 4: the RoPE layers), the
 * others global, with rope.freq_base_swa (default rope.freq_base) on the chunked layers. llama.cpp
 * fixes the chunk size and the temperature's floor scale to 8192 whenever attention.sliding_window
 * is absent or non-zero.
 * With sliding_window = 0 llama.cpp drops both but still builds the temperature input with a zero
 * scale and aborts at decode, so that setting is refused here.
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec llama4_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),   OXL_OPT(T_ROPE_FREQS),
    OXL_REQ(L_ATTN_NORM),  OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT), OXL_REQ(L_FFN_NORM),
    OXL_OPT(L_FFN_GATE),   OXL_OPT(L_FFN_UP),      OXL_OPT(L_FFN_DOWN), OXL_REQ(L_MOE),
};

static int llama4_load(oxl_model *m, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS,
                          .ffn = OXL_FFN_SWIGLU,
                          .moe_parts = OXL_MOE_HAS_SHEXP | OXL_MOE_OPTIONAL,
                          .no_rope_step = 4};
    int32_t n_moe_step = 0, n_swa = -1;
    o.moe.gating = OXL_MOE_SIGMOID;
    o.moe.weight_before_ffn = true;
    o.moe.select_logits = true;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err) || oxl_moe_hparams(m, &o.moe, 0, 0, err) ||
        oxl_hp_int(m, "expert_feed_forward_length", &o.moe.n_ff_exp, true, err) ||
        oxl_hp_count(m, "interleave_moe_layer_step", &n_moe_step, true, err) ||
        oxl_hp_count(m, "attention.sliding_window", &n_swa, false, err)) {
        return -1;
    }
    const oxl_hparams *hp = &m->hp;
    if (o.moe.n_expert == 0) {
        return oxl_err_set(err, "%s: llama4.expert_count missing or 0: a llama4 model has experts", path);
    }
    if (hp->n_rot != hp->head_dim) {
        return oxl_err_set(err, "%s: llama4.rope.dimension_count = %d must equal the head size %d", path, hp->n_rot,
                           hp->head_dim);
    }
    if (n_swa == 0) {
        return oxl_err_set(err,
                           "%s: llama4.attention.sliding_window = 0 (no chunked attention, no temperature) is "
                           "not supported",
                           path);
    }
    o.moe.n_ff_shexp = o.moe.n_ff_exp;
    o.n_swa = 8192;
    o.swa_chunked = true;
    o.attn_temp = (oxl_attn_temp){.scale = 0.1f, .offset = 1.0f, .floor_scale = 8192};
    o.attn_temp_no_rope_only = true;
    o.qk_rms_after_rope = o.moe.n_expert != 128;
    if (oxl_decoder_swa_pattern(m, &o, 4, err) ||
        oxl_hp_float(m, "rope.freq_base_swa", &o.rope_swa.freq_base, false, err) ||
        OXL_DECODER_LOAD(m, &o, llama4_tensors, err)) {
        return -1;
    }
    /* the experts on every interleave_moe_layer_step-th layer, the dense FFN on the others */
    const oxl_decoder *d = m->weights;
    for (int il = 0; il < hp->n_layer; il++) {
        const oxl_decoder_layer *l = &d->layers[il];
        const bool moe = n_moe_step > 0 && (il + 1) % n_moe_step == 0;
        if (moe && !l->moe.gate_inp.data) {
            return oxl_err_set(err, "%s: missing tensor 'blk.%d.ffn_gate_inp.weight' (expert layer: %s = %d)", path, il,
                               "llama4.interleave_moe_layer_step", n_moe_step);
        }
        if (!moe && l->moe.gate_inp.data) {
            return oxl_err_set(err, "%s: tensor 'blk.%d.ffn_gate_inp.weight' on a dense layer (%s = %d)", path, il,
                               "llama4.interleave_moe_layer_step", n_moe_step);
        }
        if (moe && (l->ffn_gate.data || l->ffn_up.data || l->ffn_down.data)) {
            return oxl_err_set(err, "%s: dense FFN tensors 'blk.%d.ffn_*' on an expert layer (%s = %d)", path, il,
                               "llama4.interleave_moe_layer_step", n_moe_step);
        }
        const char *missing = moe                 ? NULL
                              : !l->ffn_gate.data ? "ffn_gate"
                              : !l->ffn_up.data   ? "ffn_up"
                              : !l->ffn_down.data ? "ffn_down"
                                                  : NULL;
        if (missing) {
            return oxl_err_set(err, "%s: missing tensor 'blk.%d.%s.weight' (dense layer)", path, il, missing);
        }
    }
    return 0;
}

const oxl_arch oxl_arch_llama4 = OXL_DECODER_ARCH("llama4", llama4_load);
