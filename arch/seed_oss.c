/* Seed-OSS ("seed_oss"), as llama.cpp's src/models/seed-oss.cpp builds it: the LLaMA block with
 * q/k/v biases and NeoX RoPE, its pre-FFN norm stored as post_attention_norm,
 *
 *   q, k, v = W·rms(x) + b                 (head_dim from attention.key_length, may differ from
 *                                           n_embd / n_head; no attn_output bias)
 *   h = x + Wo · attention(rope(q), rope(k), v)
 *   x = h + Wdown · (silu(Wgate·rms(h)) * Wup·rms(h))              (rms weights: post_attention_norm)
 *   logits = output · rms(x)               (tied to token_embd when output is absent)
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec seed_oss_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),         OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),
    OXL_REQ(L_ATTN_NORM),          OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT),
    OXL_REQ(L_POST_ATTN_NORM_FFN), OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP),
    OXL_REQ(L_FFN_DOWN),
};

static int seed_oss_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err)) {
        return -1;
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err,
                           "%s: seed_oss.rope.dimension_count = %d must equal the head size %d (as llama.cpp requires)",
                           oxl_gguf_path(m->gguf), m->hp.n_rot, m->hp.head_dim);
    }
    return OXL_DECODER_LOAD(m, &o, seed_oss_tensors, err);
}

const oxl_arch oxl_arch_seed_oss = OXL_DECODER_ARCH("seed_oss", seed_oss_load);
