/* Samplers: llama.cpp's chain (common/sampling.cpp builds it; src/llama-sampler.cpp implements each
 * step): by default penalties → top-n-σ → top-k → typical → top-p → min-p → XTC → temperature
 * (dynamic or plain) → dist, each step off at its neutral value, in the order params.samplers gives;
 * or temperature → mirostat (v1 or v2). */
#include "sampler.h"

#include "grammar.h"
#include "model.h"
#include "vocab.h"

#include "oxillama.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

// --- MT19937 ---------------------------------------------------------------------------------------

void oxl_mt19937_seed(oxl_mt19937 *r, uint32_t seed) {
    r->mt[0] = seed;
    for (uint32_t k = 1; k < 624; k++)
        r->mt[k] = 1812433253u * (r->mt[k - 1] ^ (r->mt[k - 1] >> 30)) + k;
    r->i = 624;
}

uint32_t oxl_mt19937_next(oxl_mt19937 *r) {
    if (r->i >= 624) {
        for (int k = 0; k < 624; k++) {
            uint32_t y = (r->mt[k] & 0x80000000u) | (r->mt[(k + 1) % 624] & 0x7fffffffu);
            r->mt[k] = r->mt[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        r->i = 0;
    }
    uint32_t y = r->mt[r->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double oxl_mt19937_uniform(oxl_mt19937 *r) {
    double lo = (double)oxl_mt19937_next(r);
    double hi = (double)oxl_mt19937_next(r);
    double u = (lo + hi * 4294967296.0) / 18446744073709551616.0;
    return u >= 1.0 ? nextafter(1.0, 0.0) : u;
}

/* std::uniform_real_distribution<float>(0, 1)(r) as libstdc++ computes it: one draw u,
 * float(u) / 2^32 in float, kept below 1. */
static float mt19937_uniform_f(oxl_mt19937 *r) {
    float u = (float)oxl_mt19937_next(r) / 4294967296.0f;
    return u >= 1.0f ? nextafterf(1.0f, 0.0f) : u;
}

// --- the sampler -----------------------------------------------------------------------------------

typedef struct {
    int32_t id;
    float logit;
    float p;
} oxl_cand;

typedef struct {
    int32_t head;
    int32_t n_tail;
    int32_t tail[20];
} oxl_dry_breaker;

/* llama.cpp's common/reasoning-budget.cpp: a token sequence found in a stream of tokens. */
typedef struct {
    oxl_token *tok;
    int32_t n, pos;
} oxl_tok_matcher;

/* true when tok completes the sequence (which then starts over) */
static bool matcher_advance(oxl_tok_matcher *m, oxl_token tok) {
    if (m->n == 0)
        return false;
    if (tok == m->tok[m->pos]) {
        if (++m->pos >= m->n) {
            m->pos = 0;
            return true;
        }
    } else {
        m->pos = tok == m->tok[0] ? 1 : 0;
    }
    return false;
}

typedef enum { RB_IDLE, RB_COUNTING, RB_WAITING_UTF8, RB_FORCING, RB_DONE } oxl_rb_state;

typedef struct oxl_rbudget {
    const oxl_model *model;
    oxl_tok_matcher start, end;
    oxl_token *forced; /* the message's tokens, then the end tag's */
    int32_t n_forced, force_pos;
    int32_t budget, remaining;
    oxl_rb_state state;
} oxl_rbudget;

#define OXL_PENALTY_MAX_N 65536 /* longest penalty window kept (llama.cpp allows any; -n rarely beyond) */

struct oxl_sampler {
    oxl_sampler_params params;
    char order[sizeof((oxl_sampler_params *)0)->samplers]; /* the chain's letters, validated */
    oxl_mt19937 rng;                                       /* dist's, or mirostat's */
    oxl_mt19937 rng_xtc; /* XTC's own generator, seeded with the same seed (as llama.cpp) */
    float mu;            /* mirostat's running surprise bound, 2·tau at the start */
    oxl_cand *cand;      /* (n_vocab) candidates, reused by every call */
    int32_t cap;         /* allocated length of cand */
    int32_t *count;      /* (count_cap) occurrences of each token id in the penalty window */
    int32_t count_cap;
    int32_t *prev; /* ring of the last penalty_last_n accepted tokens */
    int32_t prev_n, prev_head;
    double *cum; /* (cap) mirostat's cumulative probabilities */
    /* DRY */
    int32_t *dry_prev; /* ring of the last dry_penalty_last_n accepted tokens */
    int32_t dry_n, dry_head;
    int32_t *dry_rep;     /* (dry_penalty_last_n) repeat lengths */
    int32_t *dry_max;     /* (count_cap) longest repeat a token would extend, -1: none */
    oxl_dry_breaker *brk; /* sequence breakers: a head token and up to 20 tail tokens */
    int32_t n_brk;
    /* grammar (oxl_sampler_set_grammar) */
    oxl_grammar *grammar;
    int32_t *ids;      /* (cap) 0, 1, …: the candidates' ids for the grammar */
    bool *allowed;     /* (cap) the grammar's verdict per candidate */
    oxl_token pending; /* the token the last oxl_sampler_sample returned, until accepted; -1: none */
    oxl_rbudget *rb;   /* the reasoning budget (oxl_sampler_set_reasoning_budget); NULL: none */
};

/* The default order of llama.cpp (common/common.h: penalties, DRY, top-n-σ, top-k, typical, top-p,
 * min-p, XTC, temperature). */
#define OXL_DEFAULT_SAMPLERS "edskypmxt"
/* The default order with this project's top-a (A) and η-sampling (H) after top-p, used when either
 * is on and no order is given. */
#define OXL_DEFAULT_SAMPLERS_EXT "edskypAHmxt"
#define OXL_SAMPLER_LETTERS "edskypmxtAH"

oxl_sampler_params oxl_sampler_default_params(void) {
    return (oxl_sampler_params){.temp = 0.8f,
                                .top_k = 40,
                                .top_p = 0.95f,
                                .min_p = 0.05f,
                                .seed = OXL_SEED_RANDOM,
                                .penalty_last_n = 64,
                                .penalty_repeat = 1.0f,
                                .penalty_freq = 0.0f,
                                .penalty_present = 0.0f,
                                .typ_p = 1.0f,
                                .top_n_sigma = -1.0f,
                                .xtc_probability = 0.0f,
                                .xtc_threshold = 0.1f,
                                .dynatemp_range = 0.0f,
                                .dynatemp_exponent = 1.0f,
                                .mirostat = 0,
                                .mirostat_tau = 5.0f,
                                .mirostat_eta = 0.1f,
                                .dry_multiplier = 0.0f,
                                .dry_base = 1.75f,
                                .dry_allowed_length = 2,
                                .dry_penalty_last_n = 64,
                                .samplers = OXL_DEFAULT_SAMPLERS};
}

/* A seed from the operating system's entropy source, or the clock when that fails (as llama.cpp's
 * get_rng_seed falls back to the system clock). */
static uint32_t random_seed(void) {
    uint32_t s;
    if (getentropy(&s, sizeof s) == 0)
        return s;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

/* Returns NULL when params is NULL, a letter of params->samplers is not one of "edskypmxtAH", mirostat
 * is not 0, 1 or 2, penalty_last_n or dry_penalty_last_n is negative or above 65536, or memory runs
 * out. An empty samplers
 * string means the default order. The candidate buffer is allocated at the first oxl_sampler_sample
 * and kept (grown only if a larger vocabulary comes). */
oxl_sampler *oxl_sampler_new(const oxl_sampler_params *params) {
    if (!params || params->mirostat < 0 || params->mirostat > 2 || params->penalty_last_n < 0 ||
        params->penalty_last_n > OXL_PENALTY_MAX_N || params->dry_penalty_last_n < 0 ||
        params->dry_penalty_last_n > OXL_PENALTY_MAX_N)
        return NULL;
    oxl_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->params = *params;
    size_t n = strnlen(params->samplers, sizeof params->samplers);
    if (n == sizeof params->samplers) {
        free(s);
        return NULL;
    }
    /* the default order, given as "" or as oxl_sampler_default_params writes it, takes the
     * extensions after top-p when they are on */
    const bool ext = params->top_a > 0.0f || params->eta > 0.0f;
    const bool dflt = n == 0 || strcmp(params->samplers, OXL_DEFAULT_SAMPLERS) == 0;
    const char *order = !dflt ? params->samplers : ext ? OXL_DEFAULT_SAMPLERS_EXT : OXL_DEFAULT_SAMPLERS;
    memcpy(s->order, order, strlen(order) + 1);
    for (const char *c = s->order; *c; c++) {
        if (!strchr(OXL_SAMPLER_LETTERS, *c)) {
            free(s);
            return NULL;
        }
    }
    if (params->penalty_last_n > 0) {
        s->prev = malloc((size_t)params->penalty_last_n * sizeof *s->prev);
        if (!s->prev) {
            free(s);
            return NULL;
        }
    }
    if (params->dry_penalty_last_n > 0) {
        s->dry_prev = malloc((size_t)params->dry_penalty_last_n * sizeof *s->dry_prev);
        s->dry_rep = malloc((size_t)params->dry_penalty_last_n * sizeof *s->dry_rep);
        if (!s->dry_prev || !s->dry_rep) {
            oxl_sampler_free(s);
            return NULL;
        }
    }
    uint32_t seed = params->seed == OXL_SEED_RANDOM ? random_seed() : params->seed;
    oxl_mt19937_seed(&s->rng, seed);
    oxl_mt19937_seed(&s->rng_xtc, params->seed == OXL_SEED_RANDOM ? random_seed() : params->seed);
    s->mu = 2.0f * params->mirostat_tau;
    s->pending = -1;
    return s;
}

static void rbudget_free(oxl_rbudget *rb) {
    if (!rb)
        return;
    free(rb->start.tok);
    free(rb->end.tok);
    free(rb->forced);
    free(rb);
}

void oxl_sampler_free(oxl_sampler *s) {
    if (!s)
        return;
    free(s->cand);
    free(s->count);
    free(s->prev);
    free(s->cum);
    free(s->dry_prev);
    free(s->dry_rep);
    free(s->dry_max);
    free(s->brk);
    oxl_grammar_free(s->grammar);
    free(s->ids);
    free(s->allowed);
    rbudget_free(s->rb);
    free(s);
}

int oxl_sampler_set_grammar(oxl_sampler *s, const oxl_model *model, const char *gbnf, const char *root, char *err,
                            size_t err_len) {
    if (err && err_len)
        err[0] = '\0';
    if (!s || (gbnf && !model)) {
        if (err && err_len)
            snprintf(err, err_len, "invalid arguments");
        return -1;
    }
    oxl_grammar *g = NULL;
    if (gbnf) {
        g = oxl_grammar_parse(gbnf, root, model->vocab, err, err_len);
        if (!g)
            return -1;
    }
    oxl_grammar_free(s->grammar);
    s->grammar = g;
    s->pending = -1;
    return 0;
}

/* The words as one pattern, each escaped as llama.cpp's regex_escape escapes ("[.^$|()*+?[]{}\\"
 * get a backslash); NULL when out of memory. */
static char *words_pattern(const char *const *words, int32_t n) {
    size_t cap = 32;
    for (int32_t i = 0; i < n; i++)
        cap += 2 * strlen(words[i]) + 1;
    char *p = malloc(cap), *o = p;
    if (!p)
        return NULL;
    o += sprintf(o, "[\\s\\S]*?(");
    for (int32_t i = 0; i < n; i++) {
        if (i > 0)
            *o++ = '|';
        for (const char *w = words[i]; *w; w++) {
            if (strchr(".^$|()*+?[]{}\\", *w))
                *o++ = '\\';
            *o++ = *w;
        }
    }
    strcpy(o, ")[\\s\\S]*");
    return p;
}

int oxl_sampler_set_grammar_lazy(oxl_sampler *s, const oxl_model *model, const char *gbnf, const char *root,
                                 const char *const *trigger_words, int32_t n_words, const char *const *trigger_patterns,
                                 int32_t n_patterns, const oxl_token *trigger_tokens, int32_t n_tokens, char *err,
                                 size_t err_len) {
    if (err && err_len)
        err[0] = '\0';
    bool bad = !s || !model || !gbnf || n_words < 0 || n_patterns < 0 || n_tokens < 0 || (n_words && !trigger_words) ||
               (n_patterns && !trigger_patterns) || (n_tokens && !trigger_tokens);
    for (int32_t i = 0; !bad && i < n_words; i++)
        bad = !trigger_words[i] || !trigger_words[i][0];
    if (bad) {
        if (err && err_len)
            snprintf(err, err_len, "invalid arguments");
        return -1;
    }
    const char **pats = malloc(((size_t)n_patterns + 1) * sizeof *pats);
    char *wp = n_words ? words_pattern(trigger_words, n_words) : NULL;
    if (!pats || (n_words && !wp)) {
        free(pats);
        free(wp);
        if (err && err_len)
            snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (int32_t i = 0; i < n_patterns; i++)
        pats[i] = trigger_patterns[i];
    if (wp)
        pats[n_patterns] = wp;
    oxl_grammar *g = oxl_grammar_parse(gbnf, root, model->vocab, err, err_len);
    int rc = g ? oxl_grammar_set_lazy(g, pats, (size_t)n_patterns + (wp != NULL), trigger_tokens, (size_t)n_tokens, err,
                                      err_len)
               : -1;
    free(pats);
    free(wp);
    if (rc != 0) {
        oxl_grammar_free(g);
        return -1;
    }
    oxl_grammar_free(s->grammar);
    s->grammar = g;
    s->pending = -1;
    return 0;
}

/* Records tok in the penalty window (llama_sampler_accept): the oldest token leaves once the window
 * holds penalty_last_n. */
static bool dry_on(const oxl_sampler_params *p) {
    return p->dry_multiplier != 0.0f && p->dry_base >= 1.0f && p->dry_penalty_last_n != 0;
}

/* Whether a token's bytes end a UTF-8 character (llama.cpp's common_utf8_is_complete): no lead byte
 * near the end still waits for continuation bytes. */
static bool piece_utf8_complete(const oxl_model *model, oxl_token tok) {
    char buf[256];
    int32_t n = oxl_token_to_piece(model, tok, buf, (int32_t)sizeof buf, false);
    if (n <= 0 || n > (int32_t)sizeof buf)
        return true;
    for (int32_t i = 1; i <= 4 && i <= n; i++) {
        unsigned char c = (unsigned char)buf[n - i];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte */
        int32_t need = (c & 0x80) == 0      ? 1
                       : (c & 0xE0) == 0xC0 ? 2
                       : (c & 0xF0) == 0xE0 ? 3
                       : (c & 0xF8) == 0xF0 ? 4
                                            : 1;
        return i >= need;
    }
    return true;
}

static void rbudget_start_forcing(oxl_rbudget *rb) {
    rb->state = rb->n_forced > 0 ? RB_FORCING : RB_DONE;
    rb->force_pos = 0;
    rb->end.pos = 0;
}

/* An output token through the budget's states (common_reasoning_budget_accept). */
static void rbudget_accept(oxl_rbudget *rb, oxl_token tok) {
    switch (rb->state) {
    case RB_IDLE:
    case RB_DONE: /* a new start tag opens a new thought with a fresh budget */
        if (matcher_advance(&rb->start, tok)) {
            rb->remaining = rb->budget;
            rb->end.pos = 0;
            rb->state = RB_COUNTING;
            if (rb->remaining <= 0)
                rbudget_start_forcing(rb);
        }
        break;
    case RB_COUNTING:
    case RB_WAITING_UTF8: {
        if (matcher_advance(&rb->end, tok)) {
            rb->state = RB_DONE;
            break;
        }
        const bool complete = piece_utf8_complete(rb->model, tok);
        if (rb->state == RB_WAITING_UTF8) {
            if (complete)
                rbudget_start_forcing(rb);
        } else if (--rb->remaining <= 0) {
            if (complete) {
                rbudget_start_forcing(rb);
            } else {
                rb->state = RB_WAITING_UTF8;
                rb->end.pos = 0;
            }
        }
        break;
    }
    case RB_FORCING:
        if (++rb->force_pos >= rb->n_forced)
            rb->state = RB_DONE;
        break;
    }
}

/* malloc'd tokens of text (special tokens parsed, no BOS), *n their count; NULL with *n 0 for an
 * empty text; NULL with *n -1 on failure. */
static oxl_token *tokenize_tag(const oxl_model *model, const char *text, int32_t *n) {
    *n = 0;
    if (!text || !*text)
        return NULL;
    size_t len = strlen(text);
    int32_t need = oxl_tokenize(model, text, len, NULL, 0, false, true);
    if (need == INT32_MIN) {
        *n = -1;
        return NULL;
    }
    need = need < 0 ? -need : need;
    oxl_token *t = malloc(((size_t)need + 1) * sizeof *t);
    if (!t || oxl_tokenize(model, text, len, t, need, false, true) != need) {
        free(t);
        *n = -1;
        return NULL;
    }
    *n = need;
    return t;
}

int oxl_sampler_set_reasoning_budget(oxl_sampler *s, const oxl_model *model, const char *start_tag, const char *end_tag,
                                     const char *message, int32_t n_budget, bool arm) {
    if (!s)
        return -1;
    if (n_budget < 0) {
        rbudget_free(s->rb);
        s->rb = NULL;
        return 0;
    }
    if (!model || !end_tag || !*end_tag)
        return -1;
    oxl_rbudget *rb = calloc(1, sizeof *rb);
    if (!rb)
        return -1;
    rb->model = model;
    rb->budget = rb->remaining = n_budget;
    size_t ml = message ? strlen(message) : 0, el = strlen(end_tag);
    char *forced = malloc(ml + el + 1);
    if (forced) {
        memcpy(forced, message ? message : "", ml);
        memcpy(forced + ml, end_tag, el + 1);
    }
    rb->start.tok = tokenize_tag(model, start_tag, &rb->start.n);
    rb->end.tok = tokenize_tag(model, end_tag, &rb->end.n);
    if (forced)
        rb->forced = tokenize_tag(model, forced, &rb->n_forced);
    free(forced);
    if (!forced || rb->start.n < 0 || rb->end.n <= 0 || rb->n_forced <= 0) {
        rbudget_free(rb);
        return -1;
    }
    rb->state = RB_IDLE;
    if (arm) {
        rb->state = RB_COUNTING;
        if (n_budget == 0)
            rbudget_start_forcing(rb);
    }
    rbudget_free(s->rb);
    s->rb = rb;
    return 0;
}

int32_t oxl_sampler_reasoning_state(const oxl_sampler *s) {
    if (!s || !s->rb)
        return -1;
    return (int32_t)s->rb->state;
}

void oxl_sampler_accept(oxl_sampler *s, oxl_token tok) {
    if (!s)
        return;
    if (s->rb && s->pending >= 0 && tok == s->pending) /* an output token */
        rbudget_accept(s->rb, tok);
    if (s->grammar && s->pending >= 0 && tok == s->pending) /* an output token: the grammar moves on */
        oxl_grammar_accept_token(s->grammar, tok);
    s->pending = -1;
    if (dry_on(&s->params)) {
        int32_t w = s->params.dry_penalty_last_n;
        if (s->dry_n < w) {
            s->dry_prev[(s->dry_head + s->dry_n) % w] = tok;
            s->dry_n++;
        } else {
            s->dry_prev[s->dry_head] = tok;
            s->dry_head = (s->dry_head + 1) % w;
        }
    }
    if (s->params.penalty_last_n <= 0)
        return;
    int32_t w = s->params.penalty_last_n;
    if (s->prev_n < w) {
        s->prev[(s->prev_head + s->prev_n) % w] = tok;
        s->prev_n++;
    } else {
        s->prev[s->prev_head] = tok;
        s->prev_head = (s->prev_head + 1) % w;
    }
}

/* Candidate order: higher logit first, NaN last, ties by lower id. llama.cpp's partial sorts leave
 * equal logits in an unspecified order; this fixes one. */
static bool cand_before(const oxl_cand *a, const oxl_cand *b) {
    bool an = isnan(a->logit), bn = isnan(b->logit);
    if (an != bn)
        return bn;
    if (!an && a->logit != b->logit)
        return a->logit > b->logit;
    return a->id < b->id;
}

/* Restores the heap order of c[0..n) below j: every parent ranks after its children (the worst
 * candidate sits at the root). */
static void sift_down(oxl_cand *c, int32_t n, int32_t j) {
    for (;;) {
        int32_t w = j, l = 2 * j + 1, r = l + 1;
        if (l < n && cand_before(&c[w], &c[l]))
            w = l;
        if (r < n && cand_before(&c[w], &c[r]))
            w = r;
        if (w == j)
            return;
        oxl_cand t = c[j];
        c[j] = c[w];
        c[w] = t;
        j = w;
    }
}

/* Moves the k best of c[0..n) to c[0..k), best first (llama.cpp's partial sort), in place and
 * without allocating: a heap of the best k seen so far, worst at the root, then a heap sort of it. */
static void select_top_k(oxl_cand *c, int32_t n, int32_t k) {
    for (int32_t i = k / 2 - 1; i >= 0; i--)
        sift_down(c, k, i);
    for (int32_t i = k; i < n; i++) {
        if (cand_before(&c[i], &c[0])) {
            oxl_cand t = c[0];
            c[0] = c[i];
            c[i] = t;
            sift_down(c, k, 0);
        }
    }
    for (int32_t m = k - 1; m > 0; m--) { /* the worst goes to the end, so the best ends up first */
        oxl_cand t = c[0];
        c[0] = c[m];
        c[m] = t;
        sift_down(c, m, 0);
    }
}

/* The candidates as llama.cpp's llama_token_data_array: c[0..n), and whether they are sorted. */
typedef struct {
    oxl_cand *c;
    int32_t n;
    bool sorted;
} oxl_cur;

/* Largest logit: c[0] when sorted, else a scan (as llama.cpp). */
static float max_logit(const oxl_cur *cur) {
    float m = cur->c[0].logit;
    for (int32_t i = 1; !cur->sorted && i < cur->n; i++)
        m = fmaxf(m, cur->c[i].logit);
    return m;
}

/* llama_sampler_softmax_impl: sorts first if asked, then float probabilities in the current order. */
static void softmax(oxl_cur *cur, bool do_sort) {
    if (do_sort && !cur->sorted) {
        select_top_k(cur->c, cur->n, cur->n);
        cur->sorted = true;
    }
    float m = max_logit(cur), sum = 0.0f;
    for (int32_t i = 0; i < cur->n; i++) {
        cur->c[i].p = expf(cur->c[i].logit - m);
        sum += cur->c[i].p;
    }
    for (int32_t i = 0; i < cur->n; i++)
        cur->c[i].p /= sum;
}

/* penalties: a token seen count > 0 times in the window has its logit divided by penalty_repeat
 * (multiplied when <= 0), then count·freq + present subtracted. Returns -1 if memory runs out. */
static int step_penalties(oxl_sampler *s, oxl_cur *cur, int32_t n_vocab) {
    const oxl_sampler_params *p = &s->params;
    if (p->penalty_last_n == 0 || (p->penalty_repeat == 1.0f && p->penalty_freq == 0.0f && p->penalty_present == 0.0f))
        return 0;
    if (n_vocab > s->count_cap) {
        int32_t *c = realloc(s->count, (size_t)n_vocab * sizeof *c);
        if (!c)
            return -1;
        s->count = c;
        s->count_cap = n_vocab;
    }
    memset(s->count, 0, (size_t)n_vocab * sizeof *s->count);
    for (int32_t i = 0; i < s->prev_n; i++) {
        int32_t t = s->prev[i];
        if (t >= 0 && t < n_vocab)
            s->count[t]++;
    }
    for (int32_t i = 0; i < cur->n; i++) {
        int32_t count = s->count[cur->c[i].id];
        if (count == 0)
            continue;
        float *l = &cur->c[i].logit;
        if (*l <= 0)
            *l *= p->penalty_repeat;
        else
            *l /= p->penalty_repeat;
        *l -= (float)count * p->penalty_freq + 1.0f * p->penalty_present;
    }
    cur->sorted = false;
    return 0;
}

/* The i-th newest token of the DRY window (0: the last accepted). */
static int32_t dry_rat(const oxl_sampler *s, int32_t i) {
    int32_t w = s->params.dry_penalty_last_n;
    return s->dry_prev[(s->dry_head + s->dry_n - i - 1) % w];
}

/* Adds a breaker unless the same head and tail are there. Returns -1 if memory runs out. */
static int dry_add(oxl_sampler *s, int32_t head, const int32_t *tail, int32_t n_tail) {
    for (int32_t i = 0; i < s->n_brk; i++)
        if (s->brk[i].head == head && s->brk[i].n_tail == n_tail &&
            (n_tail == 0 || !memcmp(s->brk[i].tail, tail, (size_t)n_tail * sizeof *tail)))
            return 0;
    if ((s->n_brk & (s->n_brk - 1)) == 0) { /* grow at powers of two */
        oxl_dry_breaker *b = realloc(s->brk, (size_t)(s->n_brk ? 2 * s->n_brk : 1) * sizeof *b);
        if (!b)
            return -1;
        s->brk = b;
    }
    oxl_dry_breaker *b = &s->brk[s->n_brk++];
    b->head = head;
    b->n_tail = n_tail;
    if (n_tail)
        memcpy(b->tail, tail, (size_t)n_tail * sizeof *tail);
    return 0;
}

/* llama.cpp's get_overlapping_token_sequences for one breaker str: a token whose text (rendered with
 * special tokens, one leading space dropped where the vocabulary adds a space prefix) contains str
 * is a breaker by itself; a token whose text ends with a proper prefix of str, at any place where
 * str's first byte occurs, is the head of a breaker whose tail is the tokenization of the rest of
 * str (at most 20 tokens). */
static int dry_breaker(oxl_sampler *s, const oxl_model *m, const char *str, size_t str_len) {
    const int32_t nv = oxl_model_n_vocab(m);
    const bool strip = oxl_vocab_adds_space_prefix(m->vocab);
    char buf[512];
    for (int32_t t = 0; t < nv; t++) {
        int32_t n = oxl_token_to_piece(m, t, buf, (int32_t)sizeof buf, true);
        if (n < 0)
            continue; /* longer than any breaker's overlap can need: no token text is that long */
        const char *w = buf;
        size_t wl = (size_t)n;
        if (strip && wl > 0 && w[0] == ' ') {
            w++;
            wl--;
        }
        bool contains = false;
        for (size_t k = 0; k + str_len <= wl && !contains; k++)
            contains = !memcmp(w + k, str, str_len);
        if (contains) {
            if (dry_add(s, t, NULL, 0) != 0)
                return -1;
            continue;
        }
        for (size_t pos = 0; pos < wl; pos++) {
            if (w[pos] != str[0])
                continue;
            size_t i = 1;
            bool match = true;
            for (; i < str_len && i + pos < wl; i++) {
                if (w[pos + i] != str[i]) {
                    match = false;
                    break;
                }
            }
            if (!match)
                continue;
            oxl_token tail[64];
            int32_t nt = oxl_tokenize(m, str + i, str_len - i, tail, 64, false, false);
            if (nt < 0 && nt != INT32_MIN) { /* more than 64: only the first 20 are kept anyway */
                oxl_token *big = malloc((size_t)(-nt) * sizeof *big);
                if (!big)
                    return -1;
                nt = oxl_tokenize(m, str + i, str_len - i, big, -nt, false, false);
                memcpy(tail, big, 20 * sizeof *tail);
                free(big);
            }
            if (nt < 0)
                continue;
            if (dry_add(s, t, tail, nt > 20 ? 20 : nt) != 0)
                return -1;
        }
    }
    return 0;
}

int32_t oxl_sampler_dry_breakers(oxl_sampler *s, const oxl_model *model, const char *const *breakers, int32_t n) {
    if (!s || !model || n < 0 || (n > 0 && !breakers))
        return -1;
    s->n_brk = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!breakers[i] || !breakers[i][0])
            continue;
        size_t len = strlen(breakers[i]);
        if (dry_breaker(s, model, breakers[i], len > 40 ? 40 : len) != 0)
            return -1;
    }
    return 0;
}

/* DRY (llama_sampler_dry_apply): in the window of the last dry_penalty_last_n tokens, limited after
 * the newest sequence breaker, a token that would extend a repeat of length L >= allowed_length
 * loses multiplier·base^(L - allowed_length) (the exponent capped so the power stays finite), unless
 * the token is a single-token breaker. Returns -1 if memory runs out. */
static int step_dry(oxl_sampler *s, oxl_cur *cur, int32_t n_vocab) {
    const oxl_sampler_params *p = &s->params;
    if (!dry_on(p))
        return 0;
    int32_t last_n = s->dry_n < p->dry_penalty_last_n ? s->dry_n : p->dry_penalty_last_n;
    if (last_n <= p->dry_allowed_length)
        return 0;
    int32_t *rep = s->dry_rep;
    memset(rep, 0, (size_t)last_n * sizeof *rep);

    int32_t rep_limit = last_n;
    for (int32_t i = 0; i < last_n; i++) {
        int32_t tok = dry_rat(s, i);
        int32_t longest = -1;
        bool head = false;
        for (int32_t b = 0; b < s->n_brk; b++) {
            const oxl_dry_breaker *br = &s->brk[b];
            if (br->head != tok)
                continue;
            head = true;
            if (br->n_tail > longest && br->n_tail <= i) {
                bool match = true;
                for (int32_t o = 0; o < br->n_tail; o++) {
                    if (br->tail[o] != dry_rat(s, i - o - 1)) {
                        match = false;
                        break;
                    }
                }
                if (match)
                    longest = br->n_tail;
            }
        }
        if (head && longest >= 0) {
            rep_limit = i - longest;
            break;
        }
    }
    if (rep_limit < p->dry_allowed_length)
        return 0;

    /* Z-algorithm over the reversed window */
    const int32_t last = last_n - 1;
    int32_t rt = 0, lt = 0;
    for (int32_t k = 1; k < last_n; k++) {
        if (k > rt) {
            int32_t n = 0;
            while (n + k < last_n && dry_rat(s, n) == dry_rat(s, n + k))
                n++;
            rep[last - k] = n < rep_limit ? n : rep_limit;
            if (n > 0) {
                lt = k;
                rt = k + n - 1;
            }
        } else {
            int32_t pi = k - lt, right = rt - k + 1;
            if (rep[last - pi] < right) {
                int32_t n = rep[last - pi] < rep_limit ? rep[last - pi] : rep_limit;
                rep[last - k] = n;
            } else {
                int32_t i = rt + 1;
                while (i < last_n && dry_rat(s, i) == dry_rat(s, i - k))
                    i++;
                int32_t n = i - k < rep_limit ? i - k : rep_limit;
                rep[last - k] = n;
                lt = k;
                rt = i - 1;
            }
        }
    }

    if (n_vocab > s->count_cap) {
        int32_t *c = realloc(s->count, (size_t)n_vocab * sizeof *c);
        if (!c)
            return -1;
        s->count = c;
        s->count_cap = n_vocab;
        free(s->dry_max);
        s->dry_max = NULL;
    }
    if (!s->dry_max) {
        s->dry_max = malloc((size_t)s->count_cap * sizeof *s->dry_max);
        if (!s->dry_max)
            return -1;
    }
    int32_t *mx = s->dry_max;
    for (int32_t i = 0; i < n_vocab; i++)
        mx[i] = -1;
    for (int32_t i = 0; i < last_n - 1; i++) {
        int32_t len = rep[i];
        if (len >= p->dry_allowed_length) {
            int32_t tok = dry_rat(s, last_n - 2 - i);
            if (tok >= 0 && tok < n_vocab && mx[tok] < len)
                mx[tok] = len;
        }
    }

    int32_t max_exp = 0;
    if (p->dry_base > 1.000001f)
        max_exp = (int32_t)(88.7228391f / logf(p->dry_base));
    for (int32_t i = 0; i < cur->n; i++) {
        int32_t len = mx[cur->c[i].id];
        if (len < 0)
            continue;
        bool single = false;
        for (int32_t b = 0; b < s->n_brk && !single; b++)
            single = s->brk[b].head == cur->c[i].id && s->brk[b].n_tail == 0;
        if (single)
            continue;
        int32_t e = len - p->dry_allowed_length;
        if (max_exp > 0 && e > max_exp)
            e = max_exp;
        float pen = (float)((double)p->dry_multiplier * pow((double)p->dry_base, (double)e));
        cur->c[i].logit -= pen;
    }
    cur->sorted = false;
    return 0;
}

/* top-n-σ: logits below max - n·σ (mean and σ over the finite-above-minus-infinity logits) become
 * -infinity; the candidates stay. */
static void step_top_n_sigma(const oxl_sampler_params *p, oxl_cur *cur) {
    if (p->top_n_sigma <= 0.0f || cur->n <= 1)
        return;
    float max = cur->c[0].logit, sum = 0.0f;
    int32_t valid = 0;
    for (int32_t i = 0; i < cur->n; i++) {
        if (cur->c[i].logit != -INFINITY) {
            if (max < cur->c[i].logit)
                max = cur->c[i].logit;
            sum += cur->c[i].logit;
            valid++;
        }
    }
    float mean = valid > 0 ? sum / (float)valid : 0;
    float acc = 0;
    for (int32_t i = 0; i < cur->n; i++) {
        if (cur->c[i].logit != -INFINITY) {
            double d = (double)(cur->c[i].logit - mean);
            acc = (float)((double)acc + d * d);
        }
    }
    float sd = valid > 0 ? sqrtf(acc / (float)valid) : 0;
    for (int32_t i = 0; i < cur->n; i++)
        if (cur->c[i].logit < max - p->top_n_sigma * sd)
            cur->c[i].logit = -INFINITY;
}

static void step_top_k(int32_t k, oxl_cur *cur) {
    if (k <= 0)
        return;
    k = k < cur->n ? k : cur->n;
    if (!cur->sorted) {
        select_top_k(cur->c, cur->n, k);
        cur->sorted = true;
    }
    cur->n = k;
}

typedef struct {
    float score;
    int32_t i;
} oxl_scored;

/* Ascending score, ties (which llama.cpp's std::sort leaves in no set order) by position. */
static int scored_cmp(const void *a, const void *b) {
    const oxl_scored *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* typical: softmax (sorted), entropy H, candidates ordered by |−ln p − H| (ascending, ties by
 * position), kept until their probability sum exceeds typ_p; the result is unsorted. Returns -1 if
 * memory runs out. */
static int step_typical(oxl_sampler *s, oxl_cur *cur) {
    const float tp = s->params.typ_p;
    if (tp >= 1.0f)
        return 0;
    softmax(cur, true);
    float entropy = 0.0f;
    for (int32_t i = 0; i < cur->n; i++)
        entropy += -cur->c[i].p * logf(cur->c[i].p);
    oxl_cand *tmp = malloc((size_t)cur->n * sizeof *tmp);
    oxl_scored *idx = malloc((size_t)cur->n * sizeof *idx);
    if (!tmp || !idx) {
        free(tmp);
        free(idx);
        return -1;
    }
    for (int32_t i = 0; i < cur->n; i++) {
        float sc = fabsf(-logf(cur->c[i].p) - entropy);
        idx[i] = (oxl_scored){isnan(sc) ? INFINITY : sc, i}; /* NaN (a zero probability) sorts last */
    }
    qsort(idx, (size_t)cur->n, sizeof *idx, scored_cmp);
    float cum = 0.0f;
    int32_t last = cur->n;
    for (int32_t i = 0; i < cur->n; i++) {
        cum += cur->c[idx[i].i].p;
        if (cum > tp) {
            last = i + 1;
            break;
        }
    }
    for (int32_t i = 0; i < last; i++)
        tmp[i] = cur->c[idx[i].i];
    memcpy(cur->c, tmp, (size_t)last * sizeof *tmp);
    cur->n = last;
    cur->sorted = false;
    free(tmp);
    free(idx);
    return 0;
}

/* top-p: float softmax over the current order, then the prefix of the sorted candidates whose sum
 * reaches p. */
static void step_top_p(float top_p, oxl_cur *cur) {
    if (top_p >= 1.0f)
        return;
    softmax(cur, false);
    if (!cur->sorted)
        select_top_k(cur->c, cur->n, cur->n);
    cur->sorted = true;
    float cum = 0.0f;
    for (int32_t i = 0; i < cur->n; i++) {
        cum += cur->c[i].p;
        if (cum >= top_p) {
            cur->n = i + 1;
            break;
        }
    }
}

/* min-p: unsorted candidates are filtered in place, keeping their order; sorted ones cut. */
static void step_min_p(float min_p, oxl_cur *cur) {
    if (min_p <= 0.0f)
        return;
    oxl_cand *c = cur->c;
    int32_t n = cur->n;
    if (!cur->sorted) {
        float lo = max_logit(cur) + logf(min_p);
        int32_t kept = 0;
        for (int32_t i = 0; i < n; i++)
            if (c[i].logit >= lo)
                kept++;
        if (kept > 0) {
            kept = 0;
            for (int32_t i = 0; i < n; i++)
                if (c[i].logit >= lo)
                    c[kept++] = c[i];
            cur->n = kept;
            return;
        }
        select_top_k(c, n, n);
        cur->sorted = true;
    }
    float lo = c[0].logit + logf(min_p);
    int32_t i = 1;
    while (i < n && !(c[i].logit < lo))
        i++;
    cur->n = i;
}

/* top-a (an extension; llama.cpp has none): keeps the candidates with p >= a * p_max^2, sorted. */
static void step_top_a(float a, oxl_cur *cur) {
    if (a <= 0.0f || cur->n < 2)
        return;
    softmax(cur, true);
    const float lo = a * cur->c[0].p * cur->c[0].p;
    int32_t i = 1;
    while (i < cur->n && cur->c[i].p >= lo)
        i++;
    cur->n = i;
}

/* η-sampling (an extension; Hewitt et al. 2022): keeps the candidates with p >= min(eta,
 * sqrt(eta) exp(-H)), H the entropy of their distribution in nats; at least the first. */
static void step_eta(float eta, oxl_cur *cur) {
    if (eta <= 0.0f || cur->n < 2)
        return;
    softmax(cur, true);
    double h = 0.0;
    for (int32_t i = 0; i < cur->n; i++)
        if (cur->c[i].p > 0.0f)
            h -= (double)cur->c[i].p * log((double)cur->c[i].p);
    const float lo = fminf(eta, (float)(sqrt((double)eta) * exp(-h)));
    int32_t i = 1;
    while (i < cur->n && cur->c[i].p >= lo)
        i++;
    cur->n = i;
}

/* XTC: with probability xtc_probability (a float draw from its own generator), removes the most
 * probable candidates above the threshold except the least probable of them. */
static void step_xtc(oxl_sampler *s, oxl_cur *cur) {
    const oxl_sampler_params *p = &s->params;
    if (p->xtc_probability <= 0.0f || p->xtc_threshold > 0.5f || cur->n < 2)
        return;
    if (mt19937_uniform_f(&s->rng_xtc) > p->xtc_probability)
        return;
    softmax(cur, true);
    int32_t last = 0;
    for (int32_t i = 0; i < cur->n; i++) {
        if (cur->c[i].p >= p->xtc_threshold)
            last = i;
        else
            break;
    }
    if (last > 0) {
        cur->c += last;
        cur->n -= last;
    }
}

/* llama_sampler_temp_impl: divides the logits by t; t <= 0 keeps only the first largest logit
 * (the others become -infinity). */
static void apply_temp(oxl_cur *cur, float t) {
    if (cur->n == 0)
        return;
    if (t <= 0.0f) {
        int32_t mi = 0;
        float ml = cur->c[0].logit;
        for (int32_t i = 1; i < cur->n; i++) {
            if (cur->c[i].logit > ml) {
                cur->c[mi].logit = -INFINITY;
                mi = i;
                ml = cur->c[i].logit;
            } else {
                cur->c[i].logit = -INFINITY;
            }
        }
        return;
    }
    for (int32_t i = 0; i < cur->n; i++)
        cur->c[i].logit /= t;
}

/* temperature, or dynamic temperature when dynatemp_range > 0: softmax (sorted), normalized entropy
 * e = H / ln(n), temperature max(0, temp - range) + 2·range·e^exponent. */
static void step_temp(const oxl_sampler_params *p, oxl_cur *cur) {
    if (p->dynatemp_range > 0) {
        const float tmin = fmaxf(0.0f, p->temp - p->dynatemp_range), tmax = p->temp + p->dynatemp_range;
        if (cur->n <= 1)
            return;
        float max_entropy = -logf(1.0f / (float)cur->n);
        softmax(cur, true);
        float entropy = 0.0f;
        for (int32_t i = 0; i < cur->n; i++) {
            float pr = cur->c[i].p;
            if (pr > 0.0f)
                entropy -= pr * logf(pr);
        }
        float ne = entropy / max_entropy;
        apply_temp(cur, tmin + (tmax - tmin) * powf(ne, p->dynatemp_exponent));
        return;
    }
    apply_temp(cur, p->temp);
}

/* dist: draws u from the generator and returns the first candidate whose running sum of
 * exp(logit - max) (float terms, double sum) reaches u times their total. A single candidate is
 * returned without a draw. */
static oxl_token step_dist(oxl_sampler *s, oxl_cur *cur) {
    if (cur->n == 1)
        return cur->c[0].id;
    float m = max_logit(cur);
    double total = 0.0;
    for (int32_t i = 0; i < cur->n; i++) {
        cur->c[i].p = expf(cur->c[i].logit - m);
        total += cur->c[i].p;
    }
    const double target = total * oxl_mt19937_uniform(&s->rng);
    double run = 0.0;
    for (int32_t i = 0; i < cur->n; i++) {
        run += cur->c[i].p;
        if (run >= target)
            return cur->c[i].id;
    }
    return cur->c[cur->n - 1].id;
}

/* std::discrete_distribution<int> over c[0..n).p as libstdc++ draws it: double weights normalized by
 * their sum, cumulative sums with the last set to 1, one uniform double, the first cumulative sum
 * >= it; one candidate: index 0 without a draw. */
static int32_t discrete_draw(oxl_sampler *s, const oxl_cur *cur) {
    if (cur->n < 2)
        return 0;
    double sum = 0.0;
    for (int32_t i = 0; i < cur->n; i++)
        sum += (double)cur->c[i].p;
    double run = 0.0;
    for (int32_t i = 0; i < cur->n; i++) {
        run += (double)cur->c[i].p / sum;
        s->cum[i] = run;
    }
    s->cum[cur->n - 1] = 1.0;
    const double u = oxl_mt19937_uniform(&s->rng);
    int32_t lo = 0, hi = cur->n; /* lower_bound */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (s->cum[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* mirostat v1 (m = 100) and v2: llama_sampler_mirostat(_v2)_apply, then mu moves by eta times the
 * error of the drawn token's surprise against tau. */
static oxl_token step_mirostat(oxl_sampler *s, oxl_cur *cur, int32_t n_vocab) {
    const oxl_sampler_params *p = &s->params;
    softmax(cur, true);
    if (p->mirostat == 1) {
        const int32_t m = 100;
        float sum_ti_bi = 0.0f, sum_ti_sq = 0.0f;
        for (int32_t i = 0; i < m - 1 && i < cur->n - 1; i++) {
            float t_i = logf((float)(i + 2) / (float)(i + 1));
            float b_i = logf(cur->c[i].p / cur->c[i + 1].p);
            sum_ti_bi += t_i * b_i;
            sum_ti_sq += t_i * t_i;
        }
        float s_hat = sum_ti_bi / sum_ti_sq;
        float eps = s_hat - 1;
        float k = powf((eps * powf(2, s->mu)) / (1 - powf((float)n_vocab, -eps)), 1 / s_hat);
        /* int(k) as x86 converts it: out of range or NaN gives INT_MIN */
        int32_t ki = (k >= -2147483648.0f && k < 2147483648.0f) ? (int32_t)k : INT32_MIN;
        step_top_k(ki > 1 ? ki : 1, cur);
    } else {
        int32_t n = 0;
        while (n < cur->n && !(-log2f(cur->c[n].p) > s->mu))
            n++;
        cur->n = n == 0 ? 1 : n;
    }
    softmax(cur, true);
    int32_t idx = discrete_draw(s, cur);
    float e = -log2f(cur->c[idx].p) - p->mirostat_tau;
    s->mu = s->mu - p->mirostat_eta * e;
    return cur->c[idx].id;
}

/* The chain over cur (filled from the logits): a token, or -1 if memory runs out. */
static oxl_token sample_chain(oxl_sampler *s, oxl_cur *cur, int32_t n_vocab) {
    const oxl_sampler_params *p = &s->params;
    /* greedy (temperature in the chain) without a step that can drop the largest logit: the first
     * largest; without 't' in the chain the temperature is not applied at all, as in llama.cpp */
    if (p->temp <= 0.0f && strchr(s->order, 't') && p->mirostat == 0 && p->dynatemp_range <= 0.0f && p->typ_p >= 1.0f &&
        p->top_a <= 0.0f && p->eta <= 0.0f && p->xtc_probability <= 0.0f && !dry_on(p) &&
        (p->penalty_last_n == 0 ||
         (p->penalty_repeat == 1.0f && p->penalty_freq == 0.0f && p->penalty_present == 0.0f))) {
        int32_t best = 0;
        for (int32_t i = 1; i < cur->n; i++)
            if (cur->c[i].logit > cur->c[best].logit)
                best = i;
        return cur->c[best].id;
    }
    if (p->mirostat != 0) {
        if (p->temp != 1.0f)
            apply_temp(cur, p->temp);
        return step_mirostat(s, cur, n_vocab);
    }
    for (const char *o = s->order; *o; o++) {
        switch (*o) {
        case 'e':
            if (step_penalties(s, cur, n_vocab) != 0)
                return -1;
            break;
        case 'd':
            if (step_dry(s, cur, n_vocab) != 0)
                return -1;
            break;
        case 's': step_top_n_sigma(p, cur); break;
        case 'k': step_top_k(p->top_k, cur); break;
        case 'y':
            if (step_typical(s, cur) != 0)
                return -1;
            break;
        case 'p': step_top_p(p->top_p, cur); break;
        case 'm': step_min_p(p->min_p, cur); break;
        case 'x': step_xtc(s, cur); break;
        case 't': step_temp(p, cur); break;
        case 'A': step_top_a(p->top_a, cur); break;
        case 'H': step_eta(p->eta, cur); break;
        default: break;
        }
    }
    return step_dist(s, cur);
}

/* Picks a token from n_vocab logits through the chain (see oxillama.h). With a grammar, as
 * llama.cpp's common_sampler_sample: the chain first; a token the grammar rejects is drawn again
 * from the chain over the logits with every rejected candidate at -infinity (the generators moving
 * on from the first draw). Returns -1 if logits is NULL, n_vocab <= 0, memory runs out, or the
 * grammar allows no candidate (or passed one of its bounds). */
oxl_token oxl_sampler_sample(oxl_sampler *s, const float *logits, int32_t n_vocab) {
    if (!s || !logits || n_vocab <= 0)
        return -1;
    s->pending = -1;
    if (n_vocab > s->cap) {
        oxl_cand *c = realloc(s->cand, (size_t)n_vocab * sizeof *c);
        if (!c)
            return -1;
        s->cand = c;
        double *cum = realloc(s->cum, (size_t)n_vocab * sizeof *cum);
        if (!cum)
            return -1;
        s->cum = cum;
        free(s->ids);
        free(s->allowed);
        s->ids = NULL;
        s->allowed = NULL;
        s->cap = n_vocab;
    }
    oxl_cur cur = {s->cand, n_vocab, false};
    if (s->rb && s->rb->state == RB_FORCING && s->rb->force_pos < s->rb->n_forced) {
        /* the budget is spent: every logit but the forced token's at -infinity, as llama.cpp's
         * common_reasoning_budget_apply; the chain runs so that its generators advance as for any token */
        const oxl_token forced = s->rb->forced[s->rb->force_pos];
        if (forced < 0 || forced >= n_vocab)
            return -1;
        for (int32_t i = 0; i < n_vocab; i++)
            cur.c[i] = (oxl_cand){i, i == forced ? logits[i] : -INFINITY, 0.0f};
        if (isnan(logits[forced]) || isinf(logits[forced]))
            cur.c[forced].logit = 0.0f;
        if (sample_chain(s, &cur, n_vocab) < 0)
            return -1;
        s->pending = forced;
        return forced;
    }
    for (int32_t i = 0; i < n_vocab; i++)
        cur.c[i] = (oxl_cand){i, logits[i], 0.0f};
    oxl_token tok = sample_chain(s, &cur, n_vocab);
    if (!s->grammar || tok < 0) {
        s->pending = tok < 0 ? -1 : tok;
        return tok;
    }

    bool ok = false;
    if (oxl_grammar_apply(s->grammar, &tok, 1, &ok) != 0)
        return -1;
    if (!ok) { /* resample with the grammar applied to every candidate */
        if (!s->ids) {
            s->ids = malloc((size_t)s->cap * sizeof *s->ids);
            s->allowed = malloc((size_t)s->cap * sizeof *s->allowed);
            if (!s->ids || !s->allowed)
                return -1;
            for (int32_t i = 0; i < s->cap; i++)
                s->ids[i] = i;
        }
        if (oxl_grammar_apply(s->grammar, s->ids, n_vocab, s->allowed) != 0)
            return -1;
        int32_t n_ok = 0;
        cur = (oxl_cur){s->cand, n_vocab, false};
        for (int32_t i = 0; i < n_vocab; i++) {
            cur.c[i] = (oxl_cand){i, s->allowed[i] ? logits[i] : -INFINITY, 0.0f};
            n_ok += s->allowed[i];
        }
        if (n_ok == 0)
            return -1;
        tok = sample_chain(s, &cur, n_vocab);
        if (tok < 0)
            return tok;
    }
    s->pending = tok;
    return tok;
}
