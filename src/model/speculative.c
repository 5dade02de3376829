/* The drafting side of speculative decoding: whether a draft model may propose tokens for a target
 * (llama.cpp common/speculative.cpp, common_speculative_are_compatible), whether a model's memory
 * can drop a rejected suffix, draft-free n-gram drafting (common/ngram-map.cpp,
 * common_ngram_simple_draft) and draft-model drafting (draft-simple). The generation loops that
 * verify the drafts are oxillama run's (src/cli/spec.c) and the server's slots (server/scheduler.c). */
#include "context.h"
#include "errors.h"
#include "model.h"
#include "vocab_internal.h"

#include <math.h>
#include <stdlib.h>
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

/* The top 10 logits of lg, largest first (the first index wins a tie, as the top-k sort of
 * draft-simple's sampler); returns their number (n_vocab when it is smaller). */
static int32_t top10(const float *lg, int32_t n_vocab, int32_t top[10]) {
    int32_t nt = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        int32_t j;
        if (nt < 10) {
            j = nt++;
        } else if (lg[i] > lg[top[9]]) {
            j = 9;
        } else {
            continue;
        }
        while (j > 0 && lg[i] > lg[top[j - 1]]) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = i;
    }
    return nt;
}

/* Decodes n tokens of seq from position pos, keeping the last one's logits. */
static int decode_seq(oxl_ctx *dctx, int32_t seq, const oxl_token *toks, int32_t n, int32_t pos, oxl_error *err) {
    int32_t *ps = malloc(sizeof(int32_t) * 2 * (size_t)n);
    int8_t *keep = calloc((size_t)n, 1);
    if (!ps || !keep) {
        free(ps);
        free(keep);
        return oxl_err_set(err, "out of memory for a draft batch of %d tokens", n);
    }
    for (int32_t i = 0; i < n; i++) {
        ps[i] = pos + i;
        ps[n + i] = seq;
    }
    keep[n - 1] = 1;
    const oxl_batch b = {n, toks, ps, ps + n, keep, NULL};
    const int rc = oxl_decode_batch(dctx, &b, err);
    free(ps);
    free(keep);
    return rc;
}

int32_t oxl_draft_propose(oxl_ctx *dctx, int32_t seq, oxl_token *held, const oxl_token *hist, int32_t n_hist,
                          oxl_token last, float p_min, int32_t n_min, int32_t cap, oxl_token *out, oxl_error *err) {
    if (!dctx || !held || (n_hist > 0 && !hist) || n_hist < 0 || (cap > 0 && !out) || seq < 0 ||
        seq >= oxl_ctx_n_seq_max(dctx)) {
        return oxl_err_set(err, "oxl_draft_propose: bad arguments (sequence %d, %d history tokens)", seq, n_hist);
    }
    const int32_t n_ctx = oxl_ctx_n_ctx(dctx);
    const int32_t n_vocab = oxl_model_n_vocab(dctx->model);
    if (cap <= 0 || n_hist + 1 >= n_ctx) {
        return 0;
    }
    /* keep the prefix the draft's cache shares with hist; decode the rest of hist and last */
    const int32_t have = oxl_seq_n_past(dctx, seq);
    int32_t keep = 0;
    while (keep < have && keep < n_hist && held[keep] == hist[keep]) {
        keep++;
    }
    oxl_seq_truncate(dctx, seq, keep);
    if (oxl_seq_n_past(dctx, seq) != keep) {
        return oxl_err_set(err, "the draft model's cache could not drop its positions from %d", keep);
    }
    memcpy(held + keep, hist + keep, sizeof(oxl_token) * (size_t)(n_hist - keep));
    held[n_hist] = last;
    if (decode_seq(dctx, seq, held + keep, n_hist + 1 - keep, keep, err) != 0) {
        return -1;
    }
    int32_t n = 0;
    while (n < cap) {
        const float *lg = oxl_get_logits(dctx, -1);
        int32_t top[10];
        const int32_t nt = top10(lg, n_vocab, top);
        double sum = 0.0;
        for (int32_t k = 0; k < nt; k++) {
            sum += exp((double)lg[top[k]] - (double)lg[top[0]]);
        }
        if (1.0 / sum < (double)p_min) {
            break;
        }
        out[n++] = top[0];
        if (n == cap || n_hist + 1 + n >= n_ctx) {
            break;
        }
        held[n_hist + n] = top[0];
        if (decode_seq(dctx, seq, &held[n_hist + n], 1, n_hist + n, err) != 0) {
            return -1;
        }
    }
    return n < n_min ? 0 : n;
}
