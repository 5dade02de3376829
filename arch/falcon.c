/* Falcon ("falcon"), as llama.cpp's src/models/falcon.cpp builds it: parallel attention and GELU
 * MLP, fused QKV without biases, NeoX RoPE,
 *
 *   Falcon-7B:   a = LN(x);  x = x + Wo · attention(attn_qkv · a) + Wdown · gelu(Wup · a)
 *   Falcon-40B:  the same, but attention reads its own LN(x) with attn_norm_2 (when the file has it)
 *                while the MLP reads attn_norm's
 *   logits = output · LN(x)                                       (tied when output is absent)
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec falcon_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT_NORM_B), OXL_OPT(T_OUTPUT),
    OXL_REQ(L_ATTN_NORM),  OXL_REQ(L_ATTN_NORM_B), OXL_OPT(L_ATTN_NORM_2),   OXL_OPT(L_ATTN_NORM_2_B),
    OXL_REQ(L_ATTN_QKV),   OXL_REQ(L_ATTN_OUT),    OXL_REQ(L_FFN_UP),        OXL_REQ(L_FFN_DOWN),
};

static int falcon_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_LAYER, .ffn = OXL_FFN_GELU, .parallel = true};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err)) {
        return -1;
    }
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err,
                           "%s: falcon.rope.dimension_count = %d must equal the head size %d (as llama.cpp requires)",
                           oxl_gguf_path(m->gguf), m->hp.n_rot, m->hp.head_dim);
    }
    return OXL_DECODER_LOAD(m, &o, falcon_tensors, err);
}

const oxl_arch oxl_arch_falcon = OXL_DECODER_ARCH("falcon", falcon_load);
