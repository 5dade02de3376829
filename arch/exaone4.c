/* EXAONE 4 ("exaone4"), as llama.cpp's src/models/exaone4.cpp builds it: no pre-norms, the branch
 * outputs normalised before each residual add,
 *
 *   x = token_embd[tokens]
 *   per layer:  q, k = per-head rms(Wq·x), rms(Wk·x) (own weights), rope? (NeoX)
 *               h = x + rms_post(Wo · attention(q, k, Wv·x))
 *               x = h + rms_post(Wdown · (silu(Wgate·h) * Wup·h))
 *   logits = output · rms(x)            (tied to token_embd when output is absent)
 *
 * The hybrid attention of the 32B model: only when block_count is 64 does llama.cpp make layer il a
 * sliding-window layer for il % pattern < pattern - 1 (attention.sliding_window_pattern, default 4;
 * window attention.sliding_window, default 4096; RoPE base rope.freq_base_swa, default the full
 * layers' base) and the remaining global layers attend WITHOUT RoPE. Other depths (the 1.2B's 30
 * layers) have full attention and RoPE on every layer. NextN layers (nextn_predict_layers) are not
 * supported.
 */
#include "decoder.h"
#include "errors.h"

static const oxl_tensor_spec exaone4_tensors[] = {
    OXL_REQ(T_TOKEN_EMBD),    OXL_REQ(T_OUTPUT_NORM), OXL_OPT(T_OUTPUT),         OXL_OPT(T_ROPE_FREQS),
    OXL_REQ(L_QKV),           OXL_REQ(L_ATTN_OUT),    OXL_REQ(L_ATTN_POST_NORM), OXL_REQ(L_Q_NORM_HEAD),
    OXL_REQ(L_K_NORM_HEAD),   OXL_REQ(L_FFN_GATE),    OXL_REQ(L_FFN_UP),         OXL_REQ(L_FFN_DOWN),
    OXL_REQ(L_FFN_POST_NORM),
};

static int exaone4_load(oxl_model *m, oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder_opts o = {.norm = OXL_NORM_RMS, .ffn = OXL_FFN_SWIGLU};
    int32_t n_swa = 4096, n_nextn = 0;
    if (oxl_decoder_hparams(m, &o, OXL_ROPE_NEOX, err) ||
        oxl_hp_int(m, "attention.sliding_window", &n_swa, false, err) ||
        oxl_hp_count(m, "nextn_predict_layers", &n_nextn, false, err)) {
        return -1;
    }
    const oxl_hparams *hp = &m->hp;
    if (n_nextn != 0) {
        return oxl_err_set(err, "%s: exaone4.nextn_predict_layers = %d: NextN layers are not supported", path, n_nextn);
    }
    if (hp->n_rot != hp->head_dim || (int64_t)hp->n_head * hp->head_dim != hp->n_embd) {
        return oxl_err_set(err,
                           "%s: exaone4 needs rope.dimension_count (%d) = head size (%d) and head_count x head size "
                           "= embedding_length (%d)",
                           path, hp->n_rot, hp->head_dim, hp->n_embd);
    }
    if (hp->n_layer == 64) {
        o.n_swa = n_swa;
        o.no_rope_global = true;
        if (oxl_decoder_swa_pattern(m, &o, 4, err) ||
            oxl_hp_float(m, "rope.freq_base_swa", &o.rope_swa.freq_base, false, err)) {
            return -1;
        }
    }
    return OXL_DECODER_LOAD(m, &o, exaone4_tensors, err);
}

const oxl_arch oxl_arch_exaone4 = OXL_DECODER_ARCH("exaone4", exaone4_load);
