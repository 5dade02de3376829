/* Multi-sequence decoding: sequences decoded together in one batch give exactly the logits each
 * gives alone (every matmul column and attention row is independent of the others, as long as the
 * same kernel order applies: llama.cpp's batched matmul sums in another order than its one-column
 * one, so both runs here keep every token's logits), and bad batches are refused before any work. */
#include "oxillama.h"

#include <criterion/criterion.h>
#include <string.h>

static oxl_model *model;

static void load(void) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    model = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &err);
    cr_assert_not_null(model, "%s", err.msg);
}

static void unload(void) { oxl_model_free(model); }

static oxl_ctx *new_ctx(int n_seq) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 64 * n_seq;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    oxl_ctx *ctx = oxl_ctx_new(model, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    return ctx;
}

static const oxl_token prompt_a[] = {1, 403, 407, 261, 378};
static const oxl_token prompt_b[] = {1, 319, 286, 260, 292, 263, 402};

TestSuite(context, .init = load, .fini = unload);

Test(context, batched_sequences_equal_separate_runs) {
    const int32_t n_vocab = oxl_model_n_vocab(model);
    oxl_error err = {0};
    /* alone */
    static float want_a[5][512], want_b[7][512];
    oxl_ctx *solo = new_ctx(1);
    cr_assert_eq(oxl_decode(solo, prompt_a, 5, true, &err), 0, "%s", err.msg);
    for (int i = 0; i < 5; i++) {
        memcpy(want_a[i], oxl_get_logits(solo, i), sizeof(float) * (size_t)n_vocab);
    }
    oxl_ctx_truncate(solo, 0);
    cr_assert_eq(oxl_decode(solo, prompt_b, 7, true, &err), 0, "%s", err.msg);
    for (int i = 0; i < 7; i++) {
        memcpy(want_b[i], oxl_get_logits(solo, i), sizeof(float) * (size_t)n_vocab);
    }
    oxl_ctx_free(solo);

    /* together, interleaved, in one batch */
    oxl_token tok[12];
    int32_t pos[12], seq[12];
    int8_t keep[12];
    int ia = 0, ib = 0;
    for (int i = 0; i < 12; i++) {
        bool take_a = (i % 2 == 0 && ia < 5) || ib == 7;
        tok[i] = take_a ? prompt_a[ia] : prompt_b[ib];
        pos[i] = take_a ? ia++ : ib++;
        seq[i] = take_a ? 0 : 1;
        keep[i] = 1;
    }
    oxl_ctx *ctx = new_ctx(2);
    oxl_batch b = {.n_tokens = 12, .token = tok, .pos = pos, .seq_id = seq, .logits = keep};
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
    for (int i = 0; i < 12; i++) {
        const float *got = oxl_get_logits(ctx, i);
        cr_assert_not_null(got);
        const float *want = seq[i] == 0 ? want_a[pos[i]] : want_b[pos[i]];
        cr_assert_eq(memcmp(got, want, sizeof(float) * (size_t)n_vocab), 0,
                     "sequence %d position %d: batched logits differ from a separate run", seq[i], pos[i]);
    }
    cr_assert_eq(oxl_seq_n_past(ctx, 0), 5);
    cr_assert_eq(oxl_seq_n_past(ctx, 1), 7);
    oxl_ctx_free(ctx);
}

Test(context, bad_batches_change_nothing) {
    oxl_error err = {0};
    oxl_ctx *ctx = new_ctx(2);
    const oxl_token tok[2] = {1, 403};
    const int32_t seq_bad[2] = {0, 2}, seq_ok[2] = {0, 0};
    const int32_t pos_gap[2] = {0, 2}, pos_ok[2] = {0, 1};
    oxl_batch b = {.n_tokens = 2, .token = tok, .pos = pos_ok, .seq_id = seq_bad};
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), -1);
    cr_assert(strstr(err.msg, "sequence 2"), "%s", err.msg);
    b.seq_id = seq_ok;
    b.pos = pos_gap;
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), -1);
    cr_assert(strstr(err.msg, "position 2"), "%s", err.msg);
    const oxl_token bad_tok[2] = {1, 100000};
    b.pos = pos_ok;
    b.token = bad_tok;
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), -1);
    cr_assert(strstr(err.msg, "outside the vocabulary"), "%s", err.msg);
    cr_assert_eq(oxl_seq_n_past(ctx, 0), 0);
    oxl_ctx_free(ctx);
}

Test(context, a_full_sequence_is_refused) {
    oxl_error err = {0};
    oxl_ctx *ctx = new_ctx(1);
    oxl_token toks[65];
    for (int i = 0; i < 65; i++) {
        toks[i] = 1 + i;
    }
    cr_assert_eq(oxl_decode(ctx, toks, 65, false, &err), -1);
    cr_assert(strstr(err.msg, "full"), "%s", err.msg);
    cr_assert_eq(oxl_decode(ctx, toks, 64, false, &err), 0, "%s", err.msg);
    oxl_ctx_free(ctx);
}

/* oxl_ctx_share_threads: a context on another's worker threads decodes as on its own (the same
 * logits to the bit), keeps working after the context it borrowed them from is freed, and the
 * calls it cannot serve are refused with a message. */
Test(context, shared_threads) {
    const int32_t n_vocab = oxl_model_n_vocab(model);
    oxl_error err = {0};
    static float want[5][512];
    oxl_ctx *solo = new_ctx(1);
    cr_assert_eq(oxl_decode(solo, prompt_a, 5, true, &err), 0, "%s", err.msg);
    for (int i = 0; i < 5; i++) {
        memcpy(want[i], oxl_get_logits(solo, i), sizeof(float) * (size_t)n_vocab);
    }
    oxl_ctx *owner = new_ctx(1), *borrower = new_ctx(1);
    cr_assert_eq(oxl_ctx_share_threads(borrower, owner, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_ctx_share_threads(borrower, owner, &err), 0, "sharing twice: %s", err.msg);
    cr_assert_eq(oxl_decode(owner, prompt_b, 7, false, &err), 0, "%s", err.msg);
    oxl_ctx_free(owner);
    cr_assert_eq(oxl_decode(borrower, prompt_a, 5, true, &err), 0, "%s", err.msg);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(memcmp(oxl_get_logits(borrower, i), want[i], sizeof(float) * (size_t)n_vocab), 0,
                     "position %d: logits on shared threads differ", i);
    }
    cr_assert_eq(oxl_ctx_share_threads(solo, solo, &err), -1);
    cr_assert(strstr(err.msg, "two different contexts") != NULL, "%s", err.msg);
    cr_assert_eq(oxl_ctx_share_threads(NULL, solo, &err), -1);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 1;
    oxl_ctx *one = oxl_ctx_new(model, &cp, &err);
    cr_assert_not_null(one, "%s", err.msg);
    cr_assert_eq(oxl_ctx_share_threads(one, solo, &err), -1);
    cr_assert(strstr(err.msg, "1 threads, the other context's 2") != NULL, "%s", err.msg);
    oxl_ctx_free(one);
    oxl_ctx_free(borrower);
    oxl_ctx_free(solo);
}

/* oxl_ctx_set_exact_batch: with it on, every position of a 40-token batch (more than the 32
 * columns the repacked Q8_0 kernel sums column by column by itself) gets, to the bit, the logits
 * of decoding the same tokens one at a time (what speculative decoding's verification needs). */
Test(context, exact_batch_equals_single_tokens) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *q8 = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K-Q8_0.gguf", &mp, &err);
    cr_assert_not_null(q8, "%s", err.msg);
    const int32_t n_vocab = oxl_model_n_vocab(q8);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 128;
    cp.n_threads = 2;
    oxl_ctx *one = oxl_ctx_new(q8, &cp, &err), *batch = oxl_ctx_new(q8, &cp, &err);
    cr_assert(one && batch, "%s", err.msg);
    enum { N = 40 };
    oxl_token toks[N];
    for (int i = 0; i < N; i++) {
        toks[i] = i == 0 ? 1 : 259 + (i * 37) % 240;
    }
    static float want[N][512];
    for (int i = 0; i < N; i++) {
        cr_assert_eq(oxl_decode(one, &toks[i], 1, false, &err), 0, "%s", err.msg);
        memcpy(want[i], oxl_get_logits(one, -1), sizeof(float) * (size_t)n_vocab);
    }
    oxl_ctx_set_exact_batch(batch, true);
    cr_assert_eq(oxl_decode(batch, toks, N, true, &err), 0, "%s", err.msg);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(memcmp(oxl_get_logits(batch, i), want[i], sizeof(float) * (size_t)n_vocab), 0,
                     "position %d: the exact batch's logits differ from single-token decoding", i);
    }
    oxl_ctx_free(one);
    oxl_ctx_free(batch);
    oxl_model_free(q8);
}
