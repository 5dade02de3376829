/* Mamba, Mamba-2 and Jamba ("mamba", "mamba2", "jamba"), as llama.cpp's src/models/mamba.cpp and
 * jamba.cpp build them: the decoder with recurrent layers (ssm.h) in place of attention.
 *
 *   mamba, mamba2:  x = token_embd[tokens]
 *                   per layer:  x = x + ssm(rms(x))              (no FFN; Mamba-1 or Mamba-2 mixer)
 *                   logits = output · rms(x)                    (tied to token_embd when output is absent)
 *   jamba:          per layer:  h = x + (head_count_kv[il] == 0 ? ssm(rms(x)) : Wo · attention(q, k, v))
 *                               x = h + ffn(rms(h))
 *                   attention without RoPE; the Mamba-1 mixer RMS-normalises dt, B and C; the FFN is a
 *                   dense SwiGLU on layers without ffn_gate_inp, else the MoE block (softmax router, top-k
 *                   weights not renormalised)
 *
 * The recurrent state of every sequence lives in the context beside the KV cache; a sequence can be
 * cleared (oxl_seq_truncate to 0) but not cut back to a later position.
 */
#include "decoder.h"
#include "errors.h"

#include <stdlib.h>

static const oxl_tensor_spec mamba_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT), OXL_REQ(L_ATTN_NORM), OXL_REQ(L_SSM),
};

static const oxl_tensor_spec jamba_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD), OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),   OXL_REQ(L_ATTN_NORM),
    OXL_REQ(L_SSM),        OXL_REQ(L_QKV),         OXL_REQ(L_ATTN_OUT), OXL_REQ(L_FFN_NORM),
    OXL_REQ(L_MOE),        OXL_OPT(L_FFN_GATE),    OXL_OPT(L_FFN_UP),   OXL_OPT(L_FFN_DOWN),
};

/* The keys of an attention-free model: llama_model_base's shape keys (the attention ones are 0), the
 * RMS epsilon and the SSM sizes. */
static int ssm_model_hparams(oxl_model *m, oxl_decoder_opts *o, oxl_ssm_kind kind, oxl_error *err) {
    oxl_hparams *hp = &m->hp;
    if (oxl_hp_int(m, "context_length", &hp->n_ctx_train, true, err) ||
        oxl_hp_int(m, "embedding_length", &hp->n_embd, true, err) ||
        oxl_hp_int(m, "block_count", &hp->n_layer, true, err) ||
        oxl_hp_float(m, "attention.layer_norm_rms_epsilon", &o->norm_eps, true, err)) {
        return -1;
    }
    /* every layer binds at least a norm, an input and an output projection */
    if (hp->n_layer > oxl_gguf_n_tensors(m->gguf) / 3) {
        return oxl_err_set(err, "%s: %s.block_count = %d needs at least %lld tensors; the file has %lld",
                           oxl_gguf_path(m->gguf), m->arch->name, hp->n_layer, 3LL * hp->n_layer,
                           (long long)oxl_gguf_n_tensors(m->gguf));
    }
    o->rope.mode = o->rope_swa.mode = OXL_ROPE_NONE;
    o->ssm.norm_eps = o->norm_eps;
    return oxl_ssm_hparams(m, &o->ssm, kind, err);
}

static int mamba_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS};
    return ssm_model_hparams(m, &o, OXL_SSM_MAMBA, err) || OXL_DECODER_LOAD(m, &o, mamba_tensors, err) ? -1 : 0;
}

static int mamba2_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS};
    return ssm_model_hparams(m, &o, OXL_SSM_MAMBA2, err) || OXL_DECODER_LOAD(m, &o, mamba_tensors, err) ? -1 : 0;
}

static int jamba_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {
        .norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU, .ssm_dt_b_c_norms = true, .moe_parts = OXL_MOE_OPTIONAL};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NONE, err) || oxl_moe_hparams(m, &o.moe, m->hp.n_ff, 0, err) ||
        oxl_ssm_hparams(m, &o.ssm, OXL_SSM_MAMBA, err)) {
        return -1;
    }
    o.ssm.norm_eps = o.norm_eps;
    int32_t *kv = malloc(sizeof(int32_t) * (size_t)m->hp.n_layer);
    if (!kv) {
        return oxl_err_set(err, "%s: out of memory", oxl_gguf_path(m->gguf));
    }
    int r = oxl_hp_int_layers(m, "attention.head_count_kv", kv, m->hp.n_layer, true, err);
    o.n_head_kv_layers = kv;
    r = r || OXL_DECODER_LOAD(m, &o, jamba_tensors, err);
    free(kv);
    if (r) {
        return -1;
    }
    /* each layer's FFN: experts where the router exists (llama.cpp then requires them), else dense */
    const oxl_decoder *d = m->weights;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const oxl_decoder_layer *l = &d->layers[il];
        if (!l->moe.gate_inp.data && !(l->ffn_gate.data && l->ffn_up.data && l->ffn_down.data)) {
            return oxl_err_set(err,
                               "%s: layer %d has neither blk.%d.ffn_gate_inp.weight (experts) nor the dense "
                               "blk.%d.ffn_gate/up/down.weight",
                               oxl_gguf_path(m->gguf), il, il, il);
        }
        if (o.moe.n_expert == 0 && l->moe.gate_inp.data) {
            return oxl_err_set(err, "%s: layer %d has experts but jamba.expert_count is 0", oxl_gguf_path(m->gguf), il);
        }
    }
    return 0;
}

const oxl_arch oxl_arch_mamba = OXL_DECODER_ARCH("mamba", mamba_load);
const oxl_arch oxl_arch_mamba2 = OXL_DECODER_ARCH("mamba2", mamba2_load);
const oxl_arch oxl_arch_jamba = OXL_DECODER_ARCH("jamba", jamba_load);
