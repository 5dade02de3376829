/* Command-R and Command-R7B ("command-r", "cohere2"), as llama.cpp's src/models/command-r.cpp and
 * cohere2.cpp build them: one LayerNorm without bias feeds attention and the FFN in parallel,
 *
 *   a = LN(x);  x = x + Wo · attention(rope(Wq·a), rope(Wk·a), Wv·a) + Wdown · (silu(Wgate·a) * Wup·a)
 *   logits = (token_embd · LN(x)) * logit_scale        (output always tied)
 *
 * with normal-mode RoPE. command-r models of 64+ layers add per-head q/k LayerNorms with one weight
 * per head. cohere2 interleaves sliding-window layers (attention.sliding_window, required;
 * pattern 4 unless set) that use RoPE with global layers that use no position encoding at all.
 */
#include "decoder.h"

static const oxl_tensor_spec command_r_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP),    OXL_REQ(L_FFN_DOWN),
};

static const oxl_tensor_spec command_r_qk_norm_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),   OXL_REQ(T_OUTPUT_NORM),  OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),    OXL_REQ(L_ATTN_OUT),
    OXL_REQ(L_Q_NORM_HEADS), OXL_REQ(L_K_NORM_HEADS), OXL_REQ(L_FFN_GATE),  OXL_REQ(L_FFN_UP), OXL_REQ(L_FFN_DOWN),
};

static int command_r_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_SWIGLU, .parallel = true};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err) || oxl_hp_float(m, "logit_scale", &o.logit_scale, false, err)) {
        return -1;
    }
    return m->hp.n_layer >= 64 ? OXL_DECODER_LOAD(m, &o, command_r_qk_norm_tensors, err)
                               : OXL_DECODER_LOAD(m, &o, command_r_tensors, err);
}

static int cohere2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_SWIGLU, .parallel = true};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err) || oxl_decoder_swa_pattern(m, &o, 4, err) ||
        oxl_hp_int(m, "attention.sliding_window", &o.n_swa, true, err) ||
        oxl_hp_float(m, "logit_scale", &o.logit_scale, true, err)) {
        return -1;
    }
    o.rope.mode = OXL_ROPE_NONE; /* global layers: no RoPE; rope_swa keeps the file's parameters */
    return OXL_DECODER_LOAD(m, &o, command_r_tensors, err);
}

const oxl_arch oxl_arch_command_r = OXL_DECODER_ARCH("command-r", command_r_load);
const oxl_arch oxl_arch_cohere2 = OXL_DECODER_ARCH("cohere2", cohere2_load);
