/* ERNIE 4.5 dense ("ernie4_5"), as llama.cpp's src/models/ernie4-5.cpp builds it: the LLaMA block
 * with normal (GPT-J, adjacent pairs) RoPE,
 *
 *   h = x + Wo · attention(rope(Wq·rms(x)), rope(Wk·rms(x)), Wv·rms(x))   (q/k/v biases optional;
 *                                                                          attn_output.bias is loaded
 *                                                                          but the graph never adds it)
 *   x = h + Wdown · (silu(Wgate·rms(h)) * Wup·rms(h))
 *   logits = output · rms(x)               (tied to token_embd when output is absent)
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec ernie4_5_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),   OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_FFN_NORM),    OXL_REQ(L_FFN_GATE), OXL_REQ(L_FFN_UP),    OXL_REQ(L_FFN_DOWN),
};

static int ernie4_5_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err)) {
        return -1;
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err,
                           "%s: ernie4_5.rope.dimension_count = %d must equal the head size %d (as llama.cpp requires)",
                           oxl_gguf_path(m->gguf), m->hp.n_rot, m->hp.head_dim);
    }
    return OXL_DECODER_LOAD(m, &o, ernie4_5_tensors, err);
}

const oxl_arch oxl_arch_ernie4_5 = OXL_DECODER_ARCH("ernie4_5", ernie4_5_load);
