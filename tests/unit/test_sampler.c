/* Samplers: greedy and top-k = 1 pick the argmax; a seed fixes the sequence; draw frequencies follow
 * softmax(logits / temp) over the tokens the filters keep (chi-square against probabilities computed
 * here in double precision), the filters selecting on the untempered logits; top-k / top-p / min-p
 * never pick an excluded token; draws at temperatures other than 1 equal those of llama.cpp's own
 * chain; the generator is the standard's MT19937 and libstdc++'s uniform double. */
#include "oxillama.h"
#include "sampler.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NV 64

/* Deterministic pseudo-random logits in [-4, 4) (a 64-bit LCG; the values only need to be varied). */
static void make_logits(float *l, int n, uint64_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        l[i] = (float)((double)(seed >> 11) / 9007199254740992.0 * 8.0 - 4.0);
    }
}

static int argmax(const float *l, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

static oxl_sampler *new_sampler(float temp, int top_k, float top_p, float min_p, uint32_t seed) {
    oxl_sampler_params p = oxl_sampler_default_params();
    p.temp = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.seed = seed;
    oxl_sampler *s = oxl_sampler_new(&p);
    cr_assert_not_null(s);
    return s;
}

Test(sampler, defaults_are_llama_cpp_s) {
    oxl_sampler_params p = oxl_sampler_default_params();
    cr_expect_float_eq(p.temp, 0.8f, 0.0f);
    cr_expect_eq(p.top_k, 40);
    cr_expect_float_eq(p.top_p, 0.95f, 0.0f);
    cr_expect_float_eq(p.min_p, 0.05f, 0.0f);
    cr_expect_eq(p.seed, OXL_SEED_RANDOM);
}

Test(sampler, greedy_is_argmax_lowest_id_on_ties) {
    oxl_sampler *s = new_sampler(0.0f, 40, 0.95f, 0.05f, 1);
    float l[NV];
    for (uint64_t k = 0; k < 20; k++) {
        make_logits(l, NV, k);
        cr_expect_eq(oxl_sampler_sample(s, l, NV), argmax(l, NV));
    }
    make_logits(l, NV, 99);
    l[10] = l[20] = l[30] = 9.0f;
    cr_expect_eq(oxl_sampler_sample(s, l, NV), 10);
    oxl_sampler_free(s);
    s = new_sampler(-1.0f, 0, 1.0f, 0.0f, 1);
    cr_expect_eq(oxl_sampler_sample(s, l, NV), 10);
    oxl_sampler_free(s);
}

Test(sampler, top_k_1_is_greedy) {
    float l[NV];
    for (uint32_t seed = 1; seed < 30; seed++) {
        oxl_sampler *s = new_sampler(1.5f, 1, 0.95f, 0.05f, seed);
        make_logits(l, NV, seed);
        cr_expect_eq(oxl_sampler_sample(s, l, NV), argmax(l, NV));
        oxl_sampler_free(s);
    }
}

Test(sampler, same_seed_same_sequence) {
    float l[NV];
    make_logits(l, NV, 7);
    for (int i = 0; i < NV; i++)
        l[i] *= 0.25f; /* flat enough that many tokens are drawn */
    oxl_token a[300], b[300], c[300];
    oxl_sampler *s1 = new_sampler(0.8f, 0, 1.0f, 0.0f, 1234), *s2 = new_sampler(0.8f, 0, 1.0f, 0.0f, 1234),
                *s3 = new_sampler(0.8f, 0, 1.0f, 0.0f, 1235);
    for (int i = 0; i < 300; i++) {
        a[i] = oxl_sampler_sample(s1, l, NV);
        b[i] = oxl_sampler_sample(s2, l, NV);
        c[i] = oxl_sampler_sample(s3, l, NV);
    }
    cr_expect_eq(memcmp(a, b, sizeof a), 0);
    cr_expect_neq(memcmp(a, c, sizeof a), 0, "another seed gave the same 300 draws");
    oxl_sampler_free(s1);
    oxl_sampler_free(s2);
    oxl_sampler_free(s3);
}

/* Draws n times and returns the chi-square statistic of the counts against softmax(logits / temp)
 * restricted to `allowed` (computed here in double); any draw outside `allowed` fails the test. */
static double chi_square(oxl_sampler *s, const float *l, int nv, const bool *allowed, float temp, int n) {
    double w[NV], total = 0.0, mx = -INFINITY;
    for (int i = 0; i < nv; i++)
        if (allowed[i] && l[i] > mx)
            mx = l[i];
    for (int i = 0; i < nv; i++) {
        w[i] = allowed[i] ? exp(((double)l[i] - mx) / temp) : 0.0;
        total += w[i];
    }
    int count[NV] = {0};
    for (int k = 0; k < n; k++) {
        oxl_token t = oxl_sampler_sample(s, l, nv);
        cr_assert(t >= 0 && t < nv && allowed[t], "draw %d picked excluded token %d", k, t);
        count[t]++;
    }
    double chi = 0.0;
    for (int i = 0; i < nv; i++) {
        if (!allowed[i])
            continue;
        double e = n * w[i] / total;
        chi += (count[i] - e) * (count[i] - e) / e;
    }
    return chi;
}

Test(sampler, frequencies_follow_softmax) {
    /* 8 tokens, no filter: 7 degrees of freedom; 40 lies far beyond the 1e-5 tail (about 33.4). */
    const float l[8] = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f, 1.5f, -1.0f, 0.2f};
    const bool all[8] = {true, true, true, true, true, true, true, true};
    oxl_sampler *s = new_sampler(0.7f, 0, 1.0f, 0.0f, 42);
    double chi = chi_square(s, l, 8, all, 0.7f, 40000);
    cr_expect_lt(chi, 40.0, "chi-square %.2f over 7 degrees of freedom", chi);
    oxl_sampler_free(s);
}

Test(sampler, top_k_keeps_the_k_largest) {
    float l[NV];
    make_logits(l, NV, 3);
    bool allowed[NV] = {false};
    float sorted[NV];
    memcpy(sorted, l, sizeof sorted);
    for (int i = 0; i < 5; i++) { /* the 5 largest, by repeated argmax */
        int b = argmax(sorted, NV);
        allowed[b] = true;
        sorted[b] = -INFINITY;
    }
    oxl_sampler *s = new_sampler(1.0f, 5, 1.0f, 0.0f, 9);
    double chi = chi_square(s, l, NV, allowed, 1.0f, 20000);
    /* 4 degrees of freedom: 1e-5 tail at about 25.4 */
    cr_expect_lt(chi, 32.0, "chi-square %.2f over 4 degrees of freedom", chi);
    oxl_sampler_free(s);
}

Test(sampler, top_p_keeps_the_smallest_sufficient_prefix) {
    /* probabilities (temp-independent filter on softmax(logits)): 0.5, 0.25, 0.125, … — cumulative
     * 0.5, 0.75, 0.875: p = 0.7 keeps the first two, p = 0.8 the first three */
    float l[NV];
    for (int i = 0; i < NV; i++)
        l[i] = -0.6931472f * (float)((i * 7) % NV) - 1e-4f * (float)i; /* permuted ids, no ties */
    for (int k = 0; k < 2; k++) {
        const float p = k ? 0.8f : 0.7f;
        bool allowed[NV] = {false};
        for (int i = 0; i < NV; i++)
            allowed[i] = ((i * 7) % NV) < (k ? 3 : 2);
        oxl_sampler *s = new_sampler(1.0f, 0, p, 0.0f, 77);
        double chi = chi_square(s, l, NV, allowed, 1.0f, 20000);
        cr_expect_lt(chi, 30.0, "p = %.1f: chi-square %.2f", p, chi);
        oxl_sampler_free(s);
    }
}

Test(sampler, min_p_drops_tokens_below_p_times_the_max) {
    float l[NV];
    make_logits(l, NV, 11);
    const float min_p = 0.2f;
    const double cut = l[argmax(l, NV)] + log(min_p);
    bool allowed[NV];
    int n_allowed = 0;
    for (int i = 0; i < NV; i++) {
        cr_assert(fabs(l[i] - cut) > 1e-3, "logit %d too close to the cut for a clean test", i);
        allowed[i] = l[i] >= cut;
        n_allowed += allowed[i];
    }
    cr_assert(n_allowed > 2 && n_allowed < NV - 2);
    oxl_sampler *s = new_sampler(1.0f, 0, 1.0f, min_p, 5);
    double chi = chi_square(s, l, NV, allowed, 1.0f, 20000);
    cr_expect_lt(chi, 3.0 * n_allowed + 20.0, "chi-square %.2f over %d degrees of freedom", chi, n_allowed - 1);
    oxl_sampler_free(s);
}

Test(sampler, default_chain_never_leaves_the_filters) {
    /* top-k 40, top-p 0.95, min-p 0.05 together: every draw is among the 40 largest and within min-p */
    float l[NV];
    make_logits(l, NV, 21);
    const double cut = l[argmax(l, NV)] + log(0.05);
    float sorted[NV];
    memcpy(sorted, l, sizeof sorted);
    bool top40[NV] = {false};
    for (int i = 0; i < 40; i++) {
        int b = argmax(sorted, NV);
        top40[b] = true;
        sorted[b] = -INFINITY;
    }
    oxl_sampler_params p = oxl_sampler_default_params();
    p.seed = 3;
    oxl_sampler *s = oxl_sampler_new(&p);
    for (int k = 0; k < 5000; k++) {
        oxl_token t = oxl_sampler_sample(s, l, NV);
        cr_assert(t >= 0 && t < NV && top40[t] && l[t] >= cut, "draw %d picked %d", k, t);
    }
    oxl_sampler_free(s);
}

Test(sampler, bad_arguments) {
    float l[4] = {0};
    oxl_sampler *s = new_sampler(0.8f, 40, 0.95f, 0.05f, 1);
    cr_expect_eq(oxl_sampler_sample(s, NULL, 4), -1);
    cr_expect_eq(oxl_sampler_sample(s, l, 0), -1);
    cr_expect_eq(oxl_sampler_sample(NULL, l, 4), -1);
    cr_expect_null(oxl_sampler_new(NULL));
    oxl_sampler_free(s);
    oxl_sampler_free(NULL);
}

Test(sampler, rng_is_mt19937_with_libstdcxx_uniform) {
    /* The C++ standard ([rand.predef]): the 10000th output of a default-constructed std::mt19937
     * (seed 5489) is 4123659995. */
    oxl_mt19937 r;
    oxl_mt19937_seed(&r, 5489);
    uint32_t x = 0;
    for (int i = 0; i < 10000; i++)
        x = oxl_mt19937_next(&r);
    cr_expect_eq(x, 4123659995u);
    /* libstdc++'s std::uniform_real_distribution<double>(0, 1) on std::mt19937(42): first value
     * 0.79654298428784598 (two 32-bit draws combined into 64 bits, then scaled). */
    oxl_mt19937_seed(&r, 42);
    cr_expect_eq(oxl_mt19937_uniform(&r), 0.79654298428784598);
}

/* The first 32 draws of llama.cpp's own chain (llama_sampler_chain of top_k, top_p (min_keep 0),
 * min_p (min_keep 0), temp_ext (no dynamic range) and dist, src/llama-sampler.cpp at d32676d, GCC's
 * libstdc++) on make_logits(l, 64, 21), one sampler drawing 32 times; temperatures other than 1, so
 * the order of the filters and the temperature shows. */
Test(sampler, draws_equal_llama_cpp_s_chain_at_temperatures_other_than_1) {
    static const struct {
        float temp;
        int top_k;
        float top_p, min_p;
        uint32_t seed;
        int draws[32];
    } cases[] = {
        {0.7f, 40, 0.9f, 0.05f, 1234, {11, 26, 36, 33, 14, 10, 8,  39, 8,  10, 10, 11, 44, 39, 10, 10,
                                       37, 10, 44, 8,  33, 34, 49, 10, 37, 37, 11, 39, 37, 37, 36, 47}},
        {1.5f, 0, 0.8f, 0.0f, 42, {26, 8,  26, 61, 11, 10, 11, 37, 8,  33, 10, 39, 18, 10, 15, 61,
                                   61, 10, 10, 36, 11, 10, 15, 44, 10, 61, 37, 15, 11, 14, 33, 11}},
        {0.5f, 0, 1.0f, 0.1f, 7, {10, 10, 61, 11, 10, 10, 8,  11, 8,  33, 44, 10, 11, 36, 36, 37,
                                  10, 49, 10, 37, 10, 44, 10, 39, 58, 11, 11, 10, 10, 8,  15, 36}},
        {2.0f, 10, 0.95f, 0.05f, 99, {61, 33, 61, 61, 8,  26, 36, 11, 39, 37, 44, 36, 11, 44, 36, 37,
                                      44, 36, 61, 44, 37, 61, 61, 44, 39, 37, 36, 10, 36, 44, 10, 11}},
    };
    float l[NV];
    make_logits(l, NV, 21);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        oxl_sampler *s = new_sampler(cases[c].temp, cases[c].top_k, cases[c].top_p, cases[c].min_p, cases[c].seed);
        for (int k = 0; k < 32; k++) {
            oxl_token t = oxl_sampler_sample(s, l, NV);
            cr_expect_eq(t, cases[c].draws[k], "case %zu (temp %.1f), draw %d: %d, llama.cpp %d", c, cases[c].temp, k,
                         t, cases[c].draws[k]);
        }
        oxl_sampler_free(s);
    }
}

/* llama.cpp's chain filters before it divides by the temperature: top-p and min-p select on the
 * untempered logits, and the draw follows softmax(logit / temp) over what they kept. */
Test(sampler, top_p_selects_before_the_temperature) {
    /* untempered probabilities 0.5, 0.25, 0.125, …: p = 0.7 keeps two tokens, p = 0.8 three. At temp
     * 0.5 the tempered ones would be 0.75, 0.19, … (p = 0.7 would keep one); at temp 2 they would
     * be 0.29, 0.21, 0.15, 0.10, 0.07, … (p = 0.8 would keep five). */
    float l[NV];
    for (int i = 0; i < NV; i++)
        l[i] = -0.6931472f * (float)((i * 7) % NV) - 1e-4f * (float)i;
    const struct {
        float temp, p;
        int kept;
    } cases[] = {{0.5f, 0.7f, 2}, {2.0f, 0.8f, 3}};
    for (int k = 0; k < 2; k++) {
        bool allowed[NV] = {false};
        for (int i = 0; i < NV; i++)
            allowed[i] = ((i * 7) % NV) < cases[k].kept;
        oxl_sampler *s = new_sampler(cases[k].temp, 0, cases[k].p, 0.0f, 101);
        double chi = chi_square(s, l, NV, allowed, cases[k].temp, 20000);
        /* 1 and 2 degrees of freedom: 1e-5 tails at about 19.5 and 23.0 */
        cr_expect_lt(chi, 30.0, "temp %.1f, p %.1f: chi-square %.2f", cases[k].temp, cases[k].p, chi);
        oxl_sampler_free(s);
    }
}

Test(sampler, min_p_cuts_the_untempered_logits) {
    /* min-p keeps logit >= max + ln(p) before the division: at temp 2 a tempered cut would admit
     * tokens down to max + 2 ln(p), at temp 0.5 only down to max + ln(p) / 2. */
    float l[NV];
    make_logits(l, NV, 11);
    const float min_p = 0.2f;
    const double cut = l[argmax(l, NV)] + log(min_p);
    bool allowed[NV];
    int n_allowed = 0, n_wide = 0, n_narrow = 0;
    for (int i = 0; i < NV; i++) {
        cr_assert(fabs(l[i] - cut) > 1e-3, "logit %d too close to the cut for a clean test", i);
        allowed[i] = l[i] >= cut;
        n_allowed += allowed[i];
        n_wide += l[i] >= l[argmax(l, NV)] + 2.0 * log(min_p);
        n_narrow += l[i] >= l[argmax(l, NV)] + 0.5 * log(min_p);
    }
    cr_assert(n_wide > n_allowed && n_narrow < n_allowed && n_narrow > 0, "the temperatures must move the cut");
    const float temps[] = {2.0f, 0.5f};
    for (int k = 0; k < 2; k++) {
        oxl_sampler *s = new_sampler(temps[k], 0, 1.0f, min_p, 13);
        double chi = chi_square(s, l, NV, allowed, temps[k], 20000);
        cr_expect_lt(chi, 3.0 * n_allowed + 20.0, "temp %.1f: chi-square %.2f over %d degrees of freedom", temps[k],
                     chi, n_allowed - 1);
        oxl_sampler_free(s);
    }
}

Test(sampler, new_rejects_bad_chains) {
    oxl_sampler_params p = oxl_sampler_default_params();
    strcpy(p.samplers, "kq");
    cr_expect_null(oxl_sampler_new(&p), "unknown letter");
    p = oxl_sampler_default_params();
    memset(p.samplers, 'k', sizeof p.samplers); /* no terminating NUL */
    cr_expect_null(oxl_sampler_new(&p));
    p = oxl_sampler_default_params();
    p.mirostat = 3;
    cr_expect_null(oxl_sampler_new(&p));
    p = oxl_sampler_default_params();
    p.penalty_last_n = -1;
    cr_expect_null(oxl_sampler_new(&p));
    oxl_sampler_accept(NULL, 1); /* no crash */
}

Test(sampler, penalties_see_accepted_tokens_in_their_window) {
    /* greedy, repeat penalty 2 over the last 2 tokens: logit 2.0 of token 0 becomes 1.0 < 1.5 once
     * token 0 is in the window, and -1.0 of token 2 becomes -2.0 (multiplied, being <= 0) */
    const float l[4] = {2.0f, 1.5f, -1.0f, -1.8f};
    oxl_sampler_params p = oxl_sampler_default_params();
    p.temp = 0.0f;
    p.penalty_last_n = 2;
    p.penalty_repeat = 2.0f;
    oxl_sampler *s = oxl_sampler_new(&p);
    cr_assert_not_null(s);
    cr_expect_eq(oxl_sampler_sample(s, l, 4), 0);
    oxl_sampler_accept(s, 0);
    cr_expect_eq(oxl_sampler_sample(s, l, 4), 1);
    oxl_sampler_accept(s, 3);
    oxl_sampler_accept(s, 3); /* token 0 leaves the window of 2 */
    cr_expect_eq(oxl_sampler_sample(s, l, 4), 0);
    oxl_sampler_free(s);
    /* presence 1.0 with frequency 0.3: token 0 seen twice loses 1.6 (0.4 < 1.5) */
    p.penalty_repeat = 1.0f;
    p.penalty_present = 1.0f;
    p.penalty_freq = 0.3f;
    p.penalty_last_n = 8;
    s = oxl_sampler_new(&p);
    cr_assert_not_null(s);
    oxl_sampler_accept(s, 0);
    oxl_sampler_accept(s, 0);
    cr_expect_eq(oxl_sampler_sample(s, l, 4), 1);
    oxl_sampler_free(s);
}

Test(sampler, params_layout_of_the_js_module) {
    /* js/oxillama.mjs writes oxl_sampler_params field by field at these offsets */
    cr_expect_eq(sizeof(oxl_sampler_params), 112);
    cr_expect_eq(offsetof(oxl_sampler_params, top_a), 104);
    cr_expect_eq(offsetof(oxl_sampler_params, eta), 108);
    cr_expect_eq(offsetof(oxl_sampler_params, penalty_last_n), 20);
    cr_expect_eq(offsetof(oxl_sampler_params, typ_p), 36);
    cr_expect_eq(offsetof(oxl_sampler_params, xtc_threshold), 48);
    cr_expect_eq(offsetof(oxl_sampler_params, dynatemp_exponent), 56);
    cr_expect_eq(offsetof(oxl_sampler_params, mirostat_tau), 64);
    cr_expect_eq(offsetof(oxl_sampler_params, dry_base), 76);
    cr_expect_eq(offsetof(oxl_sampler_params, dry_penalty_last_n), 84);
    cr_expect_eq(offsetof(oxl_sampler_params, samplers), 88);
}

/* ---- the extensions llama.cpp lacks: top-a and η-sampling ------------------------------------ */

/* How often each of the 4 tokens of p = (0.5, 0.3, 0.15, 0.05) is drawn in 4000 draws (temperature 1,
 * the other cut-offs off), with top_a and eta as given (and an order when given). */
static void ext_counts(float top_a, float eta, const char *order, int counts[4]) {
    oxl_sampler_params p = oxl_sampler_default_params();
    p.temp = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    p.top_a = top_a;
    p.eta = eta;
    if (order) {
        snprintf(p.samplers, sizeof p.samplers, "%s", order);
    }
    oxl_sampler *s = oxl_sampler_new(&p);
    cr_assert_not_null(s);
    const float logits[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    memset(counts, 0, 4 * sizeof *counts);
    for (int i = 0; i < 4000; i++) {
        oxl_token t = oxl_sampler_sample(s, logits, 4);
        cr_assert(t >= 0 && t < 4);
        counts[t]++;
    }
    oxl_sampler_free(s);
}

Test(sampler, top_a_cuts_below_a_times_pmax_squared) {
    int c[4];
    ext_counts(0.0f, 0.0f, NULL, c); /* off: every token is drawn */
    cr_expect(c[3] > 0 && c[2] > 0, "off: %d %d %d %d", c[0], c[1], c[2], c[3]);
    ext_counts(0.4f, 0.0f, NULL, c); /* 0.4 * 0.5^2 = 0.1: 0.05 goes, 0.15 stays */
    cr_expect(c[3] == 0 && c[2] > 0 && c[1] > 0 && c[0] > 0, "top-a 0.4: %d %d %d %d", c[0], c[1], c[2], c[3]);
    ext_counts(0.7f, 0.0f, NULL, c); /* 0.175: 0.15 goes too */
    cr_expect(c[3] == 0 && c[2] == 0 && c[1] > 0, "top-a 0.7: %d %d %d %d", c[0], c[1], c[2], c[3]);
    /* renormalised over the kept three: 0.5/0.95 of the draws for token 0, within 3 % */
    ext_counts(0.4f, 0.0f, NULL, c);
    cr_expect(fabs(c[0] / 4000.0 - 0.5 / 0.95) < 0.03, "token 0: %d of 4000", c[0]);
}

Test(sampler, eta_cuts_below_min_eta_sqrt_eta_exp_minus_entropy) {
    /* H = 1.1422 nats, exp(-H) = 0.3191: eta 0.1 -> min(0.1, 0.1009) = 0.1 (0.05 goes); eta 0.3 ->
     * min(0.3, 0.1748) = 0.1748 (0.15 goes too); eta 0.01 -> 0.01 (nothing goes) */
    int c[4];
    ext_counts(0.0f, 0.1f, NULL, c);
    cr_expect(c[3] == 0 && c[2] > 0, "eta 0.1: %d %d %d %d", c[0], c[1], c[2], c[3]);
    ext_counts(0.0f, 0.3f, NULL, c);
    cr_expect(c[3] == 0 && c[2] == 0 && c[1] > 0, "eta 0.3: %d %d %d %d", c[0], c[1], c[2], c[3]);
    ext_counts(0.0f, 0.01f, NULL, c);
    cr_expect(c[3] > 0, "eta 0.01: %d %d %d %d", c[0], c[1], c[2], c[3]);
    /* an order without H leaves eta out; 'H' and 'A' are letters of the order string */
    ext_counts(0.0f, 0.3f, "kpmt", c);
    cr_expect(c[3] > 0, "eta without H in the order: %d %d %d %d", c[0], c[1], c[2], c[3]);
    ext_counts(0.0f, 0.3f, "Ht", c);
    cr_expect(c[3] == 0 && c[2] == 0, "order Ht: %d %d %d %d", c[0], c[1], c[2], c[3]);
    oxl_sampler_params p = oxl_sampler_default_params();
    snprintf(p.samplers, sizeof p.samplers, "kha"); /* lower-case letters are llama.cpp's or nothing */
    cr_expect_null(oxl_sampler_new(&p));
}
