/* Apertus ("apertus"), as llama.cpp's src/models/apertus.cpp builds it: the LLaMA attention with
 * per-head q/k RMSNorm before NeoX RoPE, and an ungated xIELU MLP,
 *
 *   q, k = rms_head(Wq·rms(x)), rms_head(Wk·rms(x))    (weights (head_dim); attn_q/k_norm.bias, when
 *                                                      present, are loaded by llama.cpp but not used)
 *   h = x + Wo · attention(rope(q), rope(k), Wv·rms(x)) + bo           (bo optional)
 *   x = h + Wdown · xielu_il(Wup·rms(h))
 *   logits = output · rms(x)               (output.weight required)
 *
 * xIELU's parameters come per layer from the architecture-less keys xielu.alpha_n, xielu.alpha_p,
 * xielu.beta and xielu.eps (each one float for every layer or an array of block_count floats,
 * llama_model_loader::get_key_or_arr; all four required). RoPE takes llama3's rope_freqs divisors
 * or LongRoPE factors when the file has them.
 */
#include "decoder.h"
#include "errors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const oxl_tensor_spec apertus_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),  OXL_REQ(T_OUTPUT_NORM), OXL_REQ(T_OUTPUT),   OXL_OPT(T_ROPE_FREQS), OXL_OPT(T_ROPE_LONG),
    OXL_OPT(T_ROPE_SHORT),  OXL_REQ(L_ATTN_NORM),   OXL_REQ(L_QKV),      OXL_REQ(L_ATTN_OUT),   OXL_OPT(L_ATTN_OUT_B),
    OXL_REQ(L_Q_NORM_HEAD), OXL_REQ(L_K_NORM_HEAD), OXL_REQ(L_FFN_NORM), OXL_REQ(L_FFN_UP),     OXL_REQ(L_FFN_DOWN),
};

/* One xIELU key into out[n_layer]: a float for every layer or an array of n_layer float32. */
static int xielu_key(const oxl_model *m, const char *key, float *out, int32_t n_layer, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    const int64_t i = oxl_gguf_find_key(m->gguf, key);
    if (i < 0) {
        return oxl_err_set(err, "%s: missing required key '%s' (apertus xIELU parameters)", path, key);
    }
    if (oxl_gguf_kv_type(m->gguf, i) != OXL_GGUF_ARRAY) {
        float v;
        if (oxl_gguf_get_float(m->gguf, key, &v, err) < 0) {
            return -1;
        }
        for (int32_t il = 0; il < n_layer; il++) {
            out[il] = v;
        }
    } else {
        if (oxl_gguf_arr_type(m->gguf, i) != OXL_GGUF_FLOAT32 || oxl_gguf_arr_n(m->gguf, i) != (uint64_t)n_layer) {
            return oxl_err_set(err, "%s: key '%s' is an array of %llu %s; expected %d float32 (one per layer)", path,
                               key, (unsigned long long)oxl_gguf_arr_n(m->gguf, i),
                               oxl_gguf_vtype_name(oxl_gguf_arr_type(m->gguf, i)), n_layer);
        }
        memcpy(out, oxl_gguf_arr_data(m->gguf, i), (size_t)n_layer * sizeof(float));
    }
    for (int32_t il = 0; il < n_layer; il++) {
        if (!isfinite(out[il])) {
            return oxl_err_set(err, "%s: key '%s'[%d] = %g: must be finite", path, key, il, out[il]);
        }
    }
    return 0;
}

static int apertus_load(oxl_model *m, oxl_error *err) {
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_XIELU};
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err)) {
        return -1;
    }
    const int32_t L = m->hp.n_layer;
    if (m->hp.n_rot != m->hp.head_dim) {
        return oxl_err_set(err,
                           "%s: apertus.rope.dimension_count = %d must equal the head size %d (as llama.cpp requires)",
                           oxl_gguf_path(m->gguf), m->hp.n_rot, m->hp.head_dim);
    }
    /* in the order of oxl_decoder_layer.xielu */
    static const char *const keys[4] = {"xielu.alpha_n", "xielu.alpha_p", "xielu.beta", "xielu.eps"};
    float *p = malloc(sizeof(float) * 4 * (size_t)L);
    if (!p) {
        return oxl_err_set(err, "%s: out of memory", oxl_gguf_path(m->gguf));
    }
    int r = 0;
    for (int k = 0; k < 4 && r == 0; k++) {
        r = xielu_key(m, keys[k], p + (size_t)k * L, L, err);
    }
    if (r == 0) {
        r = OXL_DECODER_LOAD(m, &o, apertus_tensors, err);
    }
    if (r == 0) {
        oxl_decoder *d = m->weights;
        for (int32_t il = 0; il < L; il++) {
            for (int k = 0; k < 4; k++) {
                d->layers[il].xielu[k] = p[(size_t)k * L + il];
            }
        }
    }
    free(p);
    return r ? -1 : 0;
}

const oxl_arch oxl_arch_apertus = OXL_DECODER_ARCH("apertus", apertus_load);
