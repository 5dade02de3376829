/* oxl_draft_propose (llama.cpp's draft-simple, common/speculative.cpp): with p_min 0 the draft is
 * the draft model's greedy continuation, checked against llama.cpp's greedy text for the same model
 * and prompt (golden/run/once.expected, llama-simple on stories260K); a second call on the same
 * sequence keeps the prefix its cache shares with the new history and continues the same text; a
 * draft shorter than n_min is none; bad arguments are an error with a message, and another sequence
 * is not touched. */
#include "oxillama.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROOT OXL_SOURCE_DIR "/"

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* The text of n tokens, appended to out (cap bytes). */
static void text_of(const oxl_model *m, const oxl_token *t, int32_t n, char *out, size_t cap) {
    size_t len = strlen(out);
    for (int32_t i = 0; i < n; i++) {
        int32_t w = oxl_token_to_piece(m, t[i], out + len, (int32_t)(cap - len - 1), false);
        cr_assert(w >= 0);
        len += (size_t)w;
    }
    out[len] = 0;
}

Test(spec_draft, greedy_continuation_and_reuse) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(ROOT "models/stories260K.gguf", &mp, &err);
    cr_assert(m, "%s", err.msg);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 256;
    cp.n_seq_max = 2;
    cp.n_threads = 1;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert(ctx, "%s", err.msg);
    char prompt[256];
    snprintf(prompt, sizeof prompt, "%s", read_all(ROOT "golden/run/once.prompt"));
    char want[4096];
    snprintf(want, sizeof want, "%s", read_all(ROOT "golden/run/once.expected"));

    oxl_token hist[160];
    const int32_t n_prompt = oxl_tokenize(m, prompt, strlen(prompt), hist, 160, true, false);
    cr_assert(n_prompt > 1);
    oxl_token *held = calloc((size_t)oxl_ctx_n_ctx(ctx) + 1, sizeof(oxl_token));
    oxl_token draft[16];
    /* the prompt's last token is the one "sampled but not yet in the cache" */
    int32_t n = oxl_draft_propose(ctx, 1, held, hist, n_prompt - 1, hist[n_prompt - 1], 0.0f, 0, 16, draft, &err);
    cr_assert_eq(n, 16, "%d: %s", n, err.msg);
    char got[4096] = "";
    text_of(m, draft, 16, got, sizeof got);
    cr_assert(!strncmp(want, got, strlen(got)), "draft '%s' is not the start of llama.cpp's '%.80s'", got, want);
    cr_assert_eq(oxl_seq_n_past(ctx, 0), 0);

    /* the history grows by the prompt's last token and 4 drafted ones; the 5th is the new last */
    memcpy(hist + n_prompt, draft, 4 * sizeof(oxl_token));
    oxl_token again[11];
    n = oxl_draft_propose(ctx, 1, held, hist, n_prompt + 4, draft[4], 0.0f, 0, 11, again, &err);
    cr_assert_eq(n, 11, "%d: %s", n, err.msg);
    cr_assert(!memcmp(again, draft + 5, 11 * sizeof(oxl_token)), "the continued draft differs");

    /* fewer than n_min tokens: no draft; cap 0: no draft */
    cr_assert_eq(oxl_draft_propose(ctx, 1, held, hist, n_prompt - 1, hist[n_prompt - 1], 0.0f, 5, 4, draft, &err), 0);
    cr_assert_eq(oxl_draft_propose(ctx, 1, held, hist, n_prompt - 1, hist[n_prompt - 1], 0.0f, 0, 0, draft, &err), 0);
    /* a sequence the context does not have */
    err.msg[0] = 0;
    cr_assert_eq(oxl_draft_propose(ctx, 2, held, hist, n_prompt - 1, hist[n_prompt - 1], 0.0f, 0, 4, draft, &err), -1);
    cr_assert(strstr(err.msg, "sequence 2"), "%s", err.msg);
    free(held);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}
