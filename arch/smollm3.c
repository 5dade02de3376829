/* SmolLM3 ("smollm3"), as llama.cpp's src/models/smollm3.cpp builds it: the LLaMA block, except that
 * every 4th layer attends without positions,
 *
 *   x = token_embd[tokens]
 *   per layer:  h = x + Wo · attention(rope?(Wq·rms(x)), rope?(Wk·rms(x)), Wv·rms(x))
 *               x = h + Wdown · (silu(Wgate·rms(h)) * Wup·rms(h))
 *   logits = output · rms(x)            (tied to token_embd when output is absent)
 *
 * rope? is normal (GPT-J) RoPE on the layers with (il + 1) % 4 != 0 and the identity on the others
 * (NoPE): llama.cpp's load_arch_hparams fixes n_no_rope_layer_step to 4 whatever the file says.
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec smollm3_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),   OXL_REQ(L_ATTN_NORM), OXL_REQ(L_QKV),
    OXL_REQ(L_ATTN_OUT),   OXL_REQ(L_FFN_NORM),    OXL_REQ(L_FFN_GATE), OXL_REQ(L_FFN_UP),    OXL_REQ(L_FFN_DOWN),
};

static int smollm3_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .no_rope_step = 4};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NORM, err)) {
        return -1;
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err, "%s: smollm3.rope.dimension_count = %d must equal the head size %d",
                           oxl_gguf_path(m->gguf), m->hp.n_rot, m->hp.head_dim);
    }
    return OXL_DECODER_LOAD(m, &o, smollm3_tensors, err);
}

const oxl_arch oxl_arch_smollm3 = OXL_DECODER_ARCH("smollm3", smollm3_load);
