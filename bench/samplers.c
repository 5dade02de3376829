/* oxl-bench-samplers: the CPU time of each step of the sampler chain per sampled token, over a
 * model's whole vocabulary, on fixed logits (no decoding: the numbers do not move with the model's
 * speed or the machine's memory traffic).
 *
 *   oxl-bench-samplers MODEL [--iters N] [--rounds R] [--grammar FILE]
 *
 * Each row is the library's sampler (oxl_sampler_sample, then oxl_sampler_accept of the drawn token,
 * as generation calls them) with one step on and the others off; the row "dist" has every step off
 * (temperature 1: a softmax over the vocabulary and a draw) and is what every other row also pays,
 * so "step µs" is a row's time less that of "dist". "logit bias" is the server's step
 * (server/scheduler.c: the logits copied and 16 biases added) before the same sampler; "grammar json"
 * is the grammar FILE (default golden/grammars/json.gbnf) on the "dist" sampler, started again each
 * time it can only end. The logits are normal with standard deviation 2.5 (seeded), the sampler's
 * history 64 tokens of a repeated 16-token phrase (so DRY finds repeats), timings the thread's CPU
 * time (CLOCK_THREAD_CPUTIME_ID: other processes on a loaded machine do not count), each row the
 * median of R rounds of N tokens, rounds interleaved over the rows. */
#include "oxillama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N_HISTORY = 64, N_PHRASE = 16, N_BIAS = 16, MAX_ROUNDS = 64 };

typedef struct row {
    const char *name;
    const char *setting; /* the step's parameters, as the CLI flags */
    void (*set)(oxl_sampler_params *p);
    bool bias, grammar;
    double us[MAX_ROUNDS];
} row;

static void set_none(oxl_sampler_params *p) { (void)p; }
static void set_penalties(oxl_sampler_params *p) {
    p->penalty_repeat = 1.1f;
    p->penalty_freq = 0.1f;
    p->penalty_present = 0.1f;
}
static void set_dry(oxl_sampler_params *p) { p->dry_multiplier = 0.8f; }
static void set_top_k(oxl_sampler_params *p) { p->top_k = 40; }
static void set_typical(oxl_sampler_params *p) { p->typ_p = 0.9f; }
static void set_top_p(oxl_sampler_params *p) { p->top_p = 0.95f; }
static void set_min_p(oxl_sampler_params *p) { p->min_p = 0.05f; }
static void set_xtc(oxl_sampler_params *p) { p->xtc_probability = 0.5f; }
static void set_top_n_sigma(oxl_sampler_params *p) { p->top_n_sigma = 1.0f; }
static void set_temp(oxl_sampler_params *p) { p->temp = 0.8f; }
static void set_dynatemp(oxl_sampler_params *p) {
    p->temp = 0.8f;
    p->dynatemp_range = 0.5f;
}
static void set_mirostat1(oxl_sampler_params *p) { p->mirostat = 1; }
static void set_mirostat2(oxl_sampler_params *p) { p->mirostat = 2; }
static void set_top_a(oxl_sampler_params *p) { p->top_a = 0.2f; }
static void set_eta(oxl_sampler_params *p) { p->eta = 0.001f; }
static void set_default(oxl_sampler_params *p) { *p = oxl_sampler_default_params(); }

static row rows[] = {
    {"dist", "all steps off, --temp 1", set_none, false, false, {0}},
    {"penalties",
     "--repeat-penalty 1.1 --frequency-penalty 0.1 --presence-penalty 0.1",
     set_penalties,
     false,
     false,
     {0}},
    {"DRY", "--dry-multiplier 0.8", set_dry, false, false, {0}},
    {"top-k", "--top-k 40", set_top_k, false, false, {0}},
    {"typical", "--typical 0.9", set_typical, false, false, {0}},
    {"top-p", "--top-p 0.95", set_top_p, false, false, {0}},
    {"min-p", "--min-p 0.05", set_min_p, false, false, {0}},
    {"XTC", "--xtc-probability 0.5", set_xtc, false, false, {0}},
    {"top-n-sigma", "--top-nsigma 1", set_top_n_sigma, false, false, {0}},
    {"temp", "--temp 0.8", set_temp, false, false, {0}},
    {"dynatemp", "--temp 0.8 --dynatemp-range 0.5", set_dynatemp, false, false, {0}},
    {"mirostat v1", "--mirostat 1", set_mirostat1, false, false, {0}},
    {"mirostat v2", "--mirostat 2", set_mirostat2, false, false, {0}},
    {"logit bias", "16 tokens (server logit_bias)", set_none, true, false, {0}},
    {"grammar json", "--grammar-file json.gbnf", set_none, false, true, {0}},
    {"top-a", "--top-a 0.2", set_top_a, false, false, {0}},
    {"eta", "--eta 0.001", set_eta, false, false, {0}},
    {"default chain", "llama.cpp's defaults (top-k 40 first)", set_default, false, false, {0}},
};
enum { N_ROWS = sizeof rows / sizeof rows[0] };

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64* and Box-Muller, as bench/make_synthetic.c */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform01(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}
static float normal(void) {
    double u1 = uniform01(), u2 = uniform01();
    return (float)(sqrt(-2.0 * log(u1 > 1e-300 ? u1 : 1e-300)) * cos(2.0 * M_PI * u2));
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct bench {
    const oxl_model *model;
    const float *logits;
    float *work;
    int32_t n_vocab;
    const oxl_token *history;
    const oxl_token *bias_tok;
    const char *grammar;
} bench;

/* A fresh sampler for row r, its history accepted (and DRY's breakers set). NULL on failure. */
static oxl_sampler *make_sampler(const bench *b, const row *r) {
    oxl_sampler_params p = oxl_sampler_default_params();
    p.temp = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 42;
    r->set(&p);
    oxl_sampler *s = oxl_sampler_new(&p);
    if (!s) {
        return NULL;
    }
    static const char *const breakers[] = {"\n", ":", "\"", "*"};
    char err[256];
    if (oxl_sampler_dry_breakers(s, b->model, breakers, 4) != 0 ||
        (r->grammar && oxl_sampler_set_grammar(s, b->model, b->grammar, NULL, err, sizeof err) != 0)) {
        fprintf(stderr, "error: %s: %s\n", r->name, r->grammar ? err : "DRY breakers");
        oxl_sampler_free(s);
        return NULL;
    }
    for (int i = 0; i < N_HISTORY; i++) {
        oxl_sampler_accept(s, b->history[i]);
    }
    return s;
}

/* n tokens of row r: the mean CPU µs per token, or -1 on failure. */
static double run_row(const bench *b, const row *r, int n) {
    oxl_sampler *s = make_sampler(b, r);
    if (!s) {
        return -1;
    }
    char err[256];
    double total = 0;
    for (int i = 0; i < n; i++) {
        const double t0 = thread_cpu_s();
        const float *lg = b->logits;
        if (r->bias) {
            memcpy(b->work, b->logits, sizeof(float) * (size_t)b->n_vocab);
            for (int k = 0; k < N_BIAS; k++) {
                b->work[b->bias_tok[k]] += k % 2 ? 2.0f : -INFINITY;
            }
            lg = b->work;
        }
        const oxl_token t = oxl_sampler_sample(s, lg, b->n_vocab);
        if (t >= 0) {
            oxl_sampler_accept(s, t);
        }
        total += thread_cpu_s() - t0;
        if (r->grammar && (t < 0 || oxl_token_is_eog(b->model, t))) {
            /* the grammar ended (or allows nothing): start it again, untimed */
            if (oxl_sampler_set_grammar(s, b->model, b->grammar, NULL, err, sizeof err) != 0) {
                oxl_sampler_free(s);
                return -1;
            }
        } else if (t < 0) {
            oxl_sampler_free(s);
            return -1;
        }
    }
    oxl_sampler_free(s);
    return 1e6 * total / n;
}

int main(int argc, char **argv) {
    const char *path = NULL, *grammar_path = "golden/grammars/json.gbnf";
    int iters = 200, rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--grammar") && i + 1 < argc) {
            grammar_path = argv[++i];
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            fprintf(stderr, "error: unknown argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (!path || iters < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: oxl-bench-samplers MODEL [--iters N (>= 1)] [--rounds R (1..%d)] [--grammar FILE]\n",
                MAX_ROUNDS);
        return 1;
    }
    FILE *gf = fopen(grammar_path, "rb");
    char *grammar = gf ? calloc(1, 1 << 20) : NULL;
    if (!grammar || fread(grammar, 1, (1 << 20) - 1, gf) == 0) {
        fprintf(stderr, "error: %s: cannot read the grammar\n", grammar_path);
        if (gf) {
            fclose(gf);
        }
        free(grammar);
        return 1;
    }
    fclose(gf);
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *model = oxl_model_load(path, &mp, &err);
    if (!model) {
        fprintf(stderr, "error: %s\n", err.msg);
        free(grammar);
        return 1;
    }
    const int32_t n_vocab = oxl_model_n_vocab(model);
    float *logits = malloc(sizeof(float) * (size_t)n_vocab), *work = malloc(sizeof(float) * (size_t)n_vocab);
    oxl_token history[N_HISTORY], bias_tok[N_BIAS];
    if (!logits || !work) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    for (int32_t i = 0; i < n_vocab; i++) {
        logits[i] = 2.5f * normal();
    }
    for (int i = 0; i < N_HISTORY; i++) {
        history[i] = i < N_PHRASE ? (oxl_token)(uniform01() * n_vocab) : history[i % N_PHRASE];
    }
    for (int k = 0; k < N_BIAS; k++) {
        bias_tok[k] = (oxl_token)(uniform01() * n_vocab);
    }
    bench b = {model, logits, work, n_vocab, history, bias_tok, grammar};
    int status = 0;
    for (int r = 0; r < rounds && status == 0; r++) {
        for (int k = 0; k < N_ROWS; k++) {
            rows[k].us[r] = run_row(&b, &rows[k], iters);
            if (rows[k].us[r] < 0) {
                fprintf(stderr, "error: %s: sampling failed\n", rows[k].name);
                status = 1;
                break;
            }
        }
    }
    if (status == 0) {
        printf("vocabulary %d tokens, %d tokens x %d rounds per row, CPU time of the sampling thread\n", n_vocab, iters,
               rounds);
        printf("| sampler | setting | µs / token | step µs |\n|---|---|---:|---:|\n");
        double base = 0;
        for (int k = 0; k < N_ROWS; k++) {
            qsort(rows[k].us, (size_t)rounds, sizeof(double), cmp_double);
            const double med = rows[k].us[rounds / 2];
            if (k == 0) {
                base = med;
                printf("| %s | %s | %.1f | — |\n", rows[k].name, rows[k].setting, med);
            } else {
                printf("| %s | %s | %.1f | %+.1f |\n", rows[k].name, rows[k].setting, med, med - base);
            }
        }
    }
    free(logits);
    free(work);
    free(grammar);
    oxl_model_free(model);
    return status;
}
