/* LLaMA (general.architecture = "llama"), as llama.cpp's src/models/llama.cpp builds it:
 *
 *   x = token_embd[tokens]
 *   per layer:  h = x + Wo · attention(rope(Wq·rms(x)), rope(Wk·rms(x)), Wv·rms(x))
 *               x = h + Wdown · (silu(Wgate·rms(h)) * Wup·rms(h))
 *   logits = output · rms(x)            (output falls back to token_embd when absent: tied weights)
 *
 * RoPE in ggml's normal mode with the file's scaling (linear, YaRN, llama3's rope_freqs divisors,
 * LongRoPE factors), grouped-query attention, RMSNorm with learned scales, optional biases on the
 * projections. Yi and InternLM3 convert to this architecture. Mistral's sliding_window key is not
 * read by llama.cpp for this architecture, so there is no sliding window here either.
 *
 * Mixtral is this architecture with experts (expert_count > 0): the FFN becomes the MoE block with a
 * softmax router and the top-k weights renormalised (build_moe_ffn with norm_w).
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec llama_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT), OXL_OPT(T_ROPE_FREQS), OXL_OPT(T_ROPE_LONG),
    OXL_OPT(T_ROPE_SHORT), OXL_REQ(L_ATTN_NORM),   OXL_REQ(L_QKV),    OXL_REQ(L_ATTN_OUT),   OXL_OPT(L_ATTN_OUT_B),
    OXL_REQ(L_FFN_NORM),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP), OXL_REQ(L_FFN_DOWN),   OXL_OPT(L_FFN_GATE_B),
    OXL_OPT(L_FFN_UP_B),   OXL_OPT(L_FFN_DOWN_B),
};

static const oxl_tensor_spec mixtral_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),    OXL_OPT(T_ROPE_FREQS),
    OXL_OPT(T_ROPE_LONG),  OXL_OPT(T_ROPE_SHORT),  OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_OPT(L_ATTN_OUT_B),  OXL_REQ(L_FFN_NORM),  OXL_REQ(L_MOE),
};

static int llama_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err)) {
        return -1;
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err,
                           "%s: llama.rope.dimension_count = %d must equal the head size %d (as llama.cpp requires)",
                           oxl_gguf_path(m->gguf), m->hp.n_rot, m->hp.head_dim);
    }
    o.moe.norm_w = true;
    if (oxl_moe_hparams(m, &o.moe, m->hp.n_ff, 0, err)) {
        return -1;
    }
    return o.moe.n_expert > 0 ? OXL_DECODER_LOAD(m, &o, mixtral_tensors, err)
                              : OXL_DECODER_LOAD(m, &o, llama_tensors, err);
}

const oxl_arch oxl_arch_llama = OXL_DECODER_ARCH("llama", llama_load);
