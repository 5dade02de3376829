/* oxl_sampler_set_reasoning_budget against llama.cpp's common/reasoning-budget.cpp state machine:
 * idle until the start tag's tokens are output, then N counted tokens, then the tokens of
 * message + end tag forced one by one, then free sampling; an end tag output within the budget ends
 * the thought by itself; a budget spent on a token that leaves a UTF-8 character open waits for a
 * token that ends one. On stories260K's vocabulary, with greedy sampling over logits that peak at a
 * chosen token, so every expected id is the tokenizer's or the peak's. */
#include "oxillama.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

enum { IDLE, COUNTING, WAITING_UTF8, FORCING, DONE };

static oxl_model *load(void) {
    oxl_model_params mp = oxl_model_default_params();
    oxl_error e = {0};
    oxl_model *m = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &e);
    cr_assert(m, "%s", e.msg);
    return m;
}

static oxl_sampler *greedy(void) {
    oxl_sampler_params p = oxl_sampler_default_params();
    p.temp = 0.0f;
    p.seed = 1;
    oxl_sampler *s = oxl_sampler_new(&p);
    cr_assert(s);
    return s;
}

/* Samples over logits peaking at peak, accepts the result and returns it. */
static oxl_token step(oxl_sampler *s, float *logits, int32_t n_vocab, oxl_token peak) {
    for (int32_t i = 0; i < n_vocab; i++) {
        logits[i] = i == peak ? 10.0f : 0.0f;
    }
    oxl_token t = oxl_sampler_sample(s, logits, n_vocab);
    oxl_sampler_accept(s, t);
    return t;
}

static int32_t tok(const oxl_model *m, const char *text, oxl_token *out, int32_t cap) {
    int32_t n = oxl_tokenize(m, text, strlen(text), out, cap, false, true);
    cr_assert(n > 0 && n <= cap, "%s: %d tokens", text, n);
    return n;
}

Test(reasoning_budget, counts_after_start_tag_then_forces) {
    oxl_model *m = load();
    const int32_t nv = oxl_model_n_vocab(m);
    float *lg = malloc(sizeof(float) * (size_t)nv);
    oxl_token start[16], forced[32], word[4];
    const int32_t ns = tok(m, "<think>", start, 16), nf = tok(m, " ok</think>", forced, 32);
    cr_assert(tok(m, "a", word, 4) == 1);
    const oxl_token a = word[0];

    oxl_sampler *s = greedy();
    cr_assert_eq(oxl_sampler_reasoning_state(s), -1);
    cr_assert_eq(oxl_sampler_set_reasoning_budget(s, m, "<think>", "</think>", " ok", 2, false), 0);
    cr_assert_eq(oxl_sampler_reasoning_state(s), IDLE);
    /* prompt tokens (not returned by oxl_sampler_sample) do not open the thought */
    for (int32_t i = 0; i < ns; i++) {
        oxl_sampler_accept(s, start[i]);
    }
    cr_assert_eq(oxl_sampler_reasoning_state(s), IDLE);
    for (int32_t i = 0; i < ns; i++) {
        cr_assert_eq(step(s, lg, nv, start[i]), start[i]);
    }
    cr_assert_eq(oxl_sampler_reasoning_state(s), COUNTING);
    cr_assert_eq(step(s, lg, nv, a), a);
    cr_assert_eq(oxl_sampler_reasoning_state(s), COUNTING);
    cr_assert_eq(step(s, lg, nv, a), a);
    cr_assert_eq(oxl_sampler_reasoning_state(s), FORCING);
    for (int32_t i = 0; i < nf; i++) { /* the logits still peak at a: the forced ids win */
        cr_assert_eq(step(s, lg, nv, a), forced[i], "forced token %d", i);
    }
    cr_assert_eq(oxl_sampler_reasoning_state(s), DONE);
    cr_assert_eq(step(s, lg, nv, a), a);
    /* a new start tag opens a new thought with a fresh budget */
    for (int32_t i = 0; i < ns; i++) {
        step(s, lg, nv, start[i]);
    }
    cr_assert_eq(oxl_sampler_reasoning_state(s), COUNTING);
    cr_assert_eq(oxl_sampler_set_reasoning_budget(s, m, NULL, NULL, NULL, -1, false), 0);
    cr_assert_eq(oxl_sampler_reasoning_state(s), -1);
    oxl_sampler_free(s);
    free(lg);
    oxl_model_free(m);
}

Test(reasoning_budget, natural_end_zero_budget_and_bad_arguments) {
    oxl_model *m = load();
    const int32_t nv = oxl_model_n_vocab(m);
    float *lg = malloc(sizeof(float) * (size_t)nv);
    oxl_token end[16], forced[16], word[4];
    const int32_t ne = tok(m, "</think>", end, 16);
    cr_assert_eq(tok(m, "</think>", forced, 16), ne);
    cr_assert(tok(m, "a", word, 4) == 1);

    oxl_sampler *s = greedy();
    /* armed (the prompt opened the thought): the end tag within the budget ends it, nothing forced */
    cr_assert_eq(oxl_sampler_set_reasoning_budget(s, m, "<think>", "</think>", NULL, 100, true), 0);
    cr_assert_eq(oxl_sampler_reasoning_state(s), COUNTING);
    for (int32_t i = 0; i < ne; i++) {
        cr_assert_eq(step(s, lg, nv, end[i]), end[i]);
    }
    cr_assert_eq(oxl_sampler_reasoning_state(s), DONE);
    cr_assert_eq(step(s, lg, nv, word[0]), word[0]);
    /* budget 0, armed: the end tag at once */
    cr_assert_eq(oxl_sampler_set_reasoning_budget(s, m, "<think>", "</think>", "", 0, true), 0);
    cr_assert_eq(oxl_sampler_reasoning_state(s), FORCING);
    for (int32_t i = 0; i < ne; i++) {
        cr_assert_eq(step(s, lg, nv, word[0]), forced[i]);
    }
    cr_assert_eq(oxl_sampler_reasoning_state(s), DONE);
    /* bad arguments leave the sampler as it was */
    cr_assert_eq(oxl_sampler_set_reasoning_budget(s, NULL, "<think>", "</think>", NULL, 4, false), -1);
    cr_assert_eq(oxl_sampler_set_reasoning_budget(s, m, "<think>", "", NULL, 4, false), -1);
    cr_assert_eq(oxl_sampler_set_reasoning_budget(s, m, "<think>", NULL, NULL, 4, false), -1);
    cr_assert_eq(oxl_sampler_set_reasoning_budget(NULL, m, "<think>", "</think>", NULL, 4, false), -1);
    cr_assert_eq(oxl_sampler_reasoning_state(s), DONE);
    cr_assert_eq(oxl_sampler_reasoning_state(NULL), -1);
    oxl_sampler_free(s);
    free(lg);
    oxl_model_free(m);
}

/* The budget runs out on the byte token 0xE2 (the first of a 3-byte character): the next token,
 * whose piece ends a character, is still free, and the forcing starts after it. */
Test(reasoning_budget, waits_for_utf8_end) {
    oxl_model *m = load();
    const int32_t nv = oxl_model_n_vocab(m);
    float *lg = malloc(sizeof(float) * (size_t)nv);
    oxl_token lead = -1, cont = -1, end[16], word[4];
    for (oxl_token t = 0; t < nv; t++) {
        char b[8];
        if (oxl_token_to_piece(m, t, b, sizeof b, false) == 1) {
            lead = (unsigned char)b[0] == 0xE2 ? t : lead;
            cont = (unsigned char)b[0] == 0x82 ? t : cont;
        }
    }
    cr_assert(lead >= 0 && cont >= 0, "stories260K has byte tokens <0xE2> and <0x82>");
    const int32_t ne = tok(m, "</think>", end, 16);
    cr_assert(tok(m, "a", word, 4) == 1);

    oxl_sampler *s = greedy();
    cr_assert_eq(oxl_sampler_set_reasoning_budget(s, m, "<think>", "</think>", NULL, 1, true), 0);
    cr_assert_eq(step(s, lg, nv, lead), lead);
    cr_assert_eq(oxl_sampler_reasoning_state(s), WAITING_UTF8);
    cr_assert_eq(step(s, lg, nv, lead), lead); /* still open: 0xE2 again */
    cr_assert_eq(oxl_sampler_reasoning_state(s), WAITING_UTF8);
    cr_assert_eq(step(s, lg, nv, word[0]), word[0]);
    cr_assert_eq(oxl_sampler_reasoning_state(s), FORCING);
    for (int32_t i = 0; i < ne; i++) {
        cr_assert_eq(step(s, lg, nv, cont), end[i]);
    }
    cr_assert_eq(oxl_sampler_reasoning_state(s), DONE);
    oxl_sampler_free(s);
    free(lg);
    oxl_model_free(m);
}
