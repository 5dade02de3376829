/* The pieces of speculative decoding that need the library's internals: whether a draft model may
 * propose tokens for a target (llama.cpp common/speculative.cpp, common_speculative_are_compatible),
 * whether a model's memory can drop a rejected suffix, and draft-free n-gram drafting
 * (common/ngram-map.cpp, common_ngram_simple_draft). The generation loop is oxillama run's
 * (src/cli/spec.c). */
#include "errors.h"
#include "model.h"
#include "vocab_internal.h"

#include <string.h>

/* llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE and SPEC_VOCAB_CHECK_START_TOKEN_ID */
enum { SPEC_VOCAB_MAX_DIFF = 128, SPEC_VOCAB_CHECK_START = 5 };

static const char *vocab_type_name(oxl_vocab_type t) {
    switch (t) {
    case OXL_VOCAB_SPM: return "llama (SPM)";
    case OXL_VOCAB_BPE: return "gpt2 (BPE)";
    case OXL_VOCAB_WPM: return "bert (WPM)";
    case OXL_VOCAB_UGM: return "t5 (UGM)";
    }
    return "?";
}

int oxl_model_draft_compatible(const oxl_model *target, const oxl_model *draft, oxl_error *err) {
    if (!target || !draft) {
        return oxl_err_set(err, "draft model incompatible: no model given");
    }
    const oxl_vocab *vt = target->vocab, *vd = draft->vocab;
    if (!vt || !vd) {
        return oxl_err_set(err, "draft model incompatible: a model has no vocabulary");
    }
    if (vt->type != vd->type) {
        return oxl_err_set(err, "draft model incompatible: vocabulary type %s, the target's %s",
                           vocab_type_name(vd->type), vocab_type_name(vt->type));
    }
    if (vt->add_bos != vd->add_bos || (vt->add_bos && vt->bos != vd->bos)) {
        return oxl_err_set(err, "draft model incompatible: BOS token (add %d, id %d), the target's (add %d, id %d)",
                           vd->add_bos, vd->bos, vt->add_bos, vt->bos);
    }
    if (vt->add_eos != vd->add_eos || (vt->add_eos && vt->eos != vd->eos)) {
        return oxl_err_set(err, "draft model incompatible: EOS token (add %d, id %d), the target's (add %d, id %d)",
                           vd->add_eos, vd->eos, vt->add_eos, vt->eos);
    }
    const int32_t diff = vt->n > vd->n ? vt->n - vd->n : vd->n - vt->n;
    if (diff > SPEC_VOCAB_MAX_DIFF) {
        return oxl_err_set(err,
                           "draft model incompatible: vocabulary of %d tokens, the target's %d (a difference of %d, "
                           "at most %d allowed)",
                           vd->n, vt->n, diff, SPEC_VOCAB_MAX_DIFF);
    }
    const int32_t n = vt->n < vd->n ? vt->n : vd->n;
    for (int32_t i = SPEC_VOCAB_CHECK_START; i < n; i++) {
        if (vt->text_len[i] != vd->text_len[i] || memcmp(oxl_tok_text(vt, i), oxl_tok_text(vd, i), vt->text_len[i])) {
            return oxl_err_set(err, "draft model incompatible: token %d is '%s', the target's '%s'", i,
                               oxl_tok_text(vd, i), oxl_tok_text(vt, i));
        }
    }
    return 0;
}

/* Recurrent layers keep a state per sequence (hp.n_embd_s floats), which oxl_memory_seq_rm cannot
 * step back (llama.cpp's llama_model_is_recurrent || llama_model_is_hybrid). */
bool oxl_model_is_recurrent(const oxl_model *model) {
    return model && (model->hp.n_embd_s > 0 || model->hp.n_embd_r > 0); /* scan or conv state (lfm2) */
}

int32_t oxl_ngram_draft(const oxl_token *hist, int32_t n_hist, oxl_token last, int32_t size_n, int32_t size_m,
                        oxl_token *out, int32_t cap) {
    if (!hist || n_hist < 0 || size_n < 1 || size_m < 1 || (cap > 0 && !out)) {
        return 0;
    }
    /* the history must hold more than size_n + size_m + 1 tokens; the pattern is its last
     * size_n - 1 tokens and `last` */
    if (n_hist <= size_n + size_m + 1) {
        return 0;
    }
    const oxl_token *tail = hist + n_hist - size_n + 1;
    int32_t match = 0; /* position 0 counts as no match, as in llama.cpp */
    for (int32_t j = n_hist - size_n - 1; j > 0; j--) {
        if (hist[j + size_n - 1] == last && !memcmp(hist + j, tail, sizeof(oxl_token) * (size_t)(size_n - 1))) {
            match = j;
            break;
        }
    }
    if (match == 0) {
        return 0;
    }
    int32_t n = n_hist - (match + size_n);
    if (n > size_m) {
        n = size_m;
    }
    if (n < size_n) {
        return 0;
    }
    if (n > cap) {
        n = cap;
    }
    if (n <= 0) {
        return 0;
    }
    memcpy(out, hist + match + size_n, sizeof(oxl_token) * (size_t)n);
    return n;
}
