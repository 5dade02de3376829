/* Samplers: llama.cpp's default chain top-k → top-p → min-p → temperature → dist
 * (common/sampling.cpp builds it; src/llama-sampler.cpp implements each step), or greedy argmax
 * when temp <= 0. */
#include "sampler.h"

#include "oxillama.h"

#include <math.h>
#include <stdbool.h>
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

// --- the sampler -----------------------------------------------------------------------------------

typedef struct {
    int32_t id;
    float logit;
    float p;
} oxl_cand;

struct oxl_sampler {
    oxl_sampler_params params;
    oxl_mt19937 rng;
    oxl_cand *cand; /* (n_vocab) candidates, reused by every call */
    int32_t cap;    /* allocated length of cand */
};

oxl_sampler_params oxl_sampler_default_params(void) {
    return (oxl_sampler_params){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = OXL_SEED_RANDOM};
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

/* Returns NULL when params is NULL or memory runs out. The candidate buffer is allocated at the first
 * oxl_sampler_sample and kept (grown only if a larger vocabulary comes). */
oxl_sampler *oxl_sampler_new(const oxl_sampler_params *params) {
    if (!params)
        return NULL;
    oxl_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->params = *params;
    oxl_mt19937_seed(&s->rng, params->seed == OXL_SEED_RANDOM ? random_seed() : params->seed);
    return s;
}

void oxl_sampler_free(oxl_sampler *s) {
    if (!s)
        return;
    free(s->cand);
    free(s);
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

/* Largest logit: c[0] when sorted, else a scan (as llama.cpp). */
static float max_logit(const oxl_cand *c, int32_t n, bool sorted) {
    float m = c[0].logit;
    for (int32_t i = 1; !sorted && i < n; i++)
        m = fmaxf(m, c[i].logit);
    return m;
}

/* Picks a token from n_vocab logits. temp <= 0: the first largest logit (llama.cpp's greedy sampler).
 * Otherwise, over the candidates in the order llama.cpp has them (vocabulary order until a step sorts
 * them): top-k keeps the k largest, sorted; top-p (softmax in current order, then sorted) keeps the
 * shortest prefix whose probability sum reaches p; min-p keeps logits >= max + ln(p); temperature
 * divides the logits; dist draws u from the generator and returns the first candidate whose running
 * sum of exp(logit - max) (float terms, double sum) reaches u times their total. A single remaining
 * candidate is returned without a draw, as llama.cpp does. Returns -1 if logits is NULL, n_vocab <= 0
 * or memory runs out. */
oxl_token oxl_sampler_sample(oxl_sampler *s, const float *logits, int32_t n_vocab) {
    if (!s || !logits || n_vocab <= 0)
        return -1;
    const oxl_sampler_params *p = &s->params;
    if (p->temp <= 0.0f) {
        int32_t best = 0;
        for (int32_t i = 1; i < n_vocab; i++)
            if (logits[i] > logits[best])
                best = i;
        return best;
    }
    if (n_vocab > s->cap) {
        oxl_cand *c = realloc(s->cand, (size_t)n_vocab * sizeof *c);
        if (!c)
            return -1;
        s->cand = c;
        s->cap = n_vocab;
    }
    oxl_cand *c = s->cand;
    for (int32_t i = 0; i < n_vocab; i++)
        c[i] = (oxl_cand){i, logits[i], 0.0f};
    int32_t n = n_vocab;
    bool sorted = false;

    /* top-k */
    if (p->top_k > 0) {
        n = p->top_k < n ? p->top_k : n;
        select_top_k(c, n_vocab, n);
        sorted = true;
    }

    /* top-p: float softmax over the current order, then the prefix of the sorted candidates */
    if (p->top_p < 1.0f) {
        float m = max_logit(c, n, sorted), sum = 0.0f;
        for (int32_t i = 0; i < n; i++) {
            c[i].p = expf(c[i].logit - m);
            sum += c[i].p;
        }
        for (int32_t i = 0; i < n; i++)
            c[i].p /= sum;
        if (!sorted)
            select_top_k(c, n, n);
        sorted = true;
        float cum = 0.0f;
        for (int32_t i = 0; i < n; i++) {
            cum += c[i].p;
            if (cum >= p->top_p) {
                n = i + 1;
                break;
            }
        }
    }

    /* min-p: unsorted candidates are filtered in place, keeping their order; sorted ones cut */
    if (p->min_p > 0.0f) {
        bool applied = false;
        if (!sorted) {
            float lo = max_logit(c, n, false) + logf(p->min_p);
            int32_t kept = 0;
            for (int32_t i = 0; i < n; i++)
                if (c[i].logit >= lo)
                    kept++;
            if (kept > 0) {
                kept = 0;
                for (int32_t i = 0; i < n; i++)
                    if (c[i].logit >= lo)
                        c[kept++] = c[i];
                n = kept;
                applied = true;
            }
        }
        if (!applied) {
            if (!sorted)
                select_top_k(c, n, n);
            sorted = true;
            float lo = c[0].logit + logf(p->min_p);
            int32_t i = 1;
            while (i < n && !(c[i].logit < lo))
                i++;
            n = i;
        }
    }

    /* temperature */
    for (int32_t i = 0; i < n; i++)
        c[i].logit /= p->temp;

    /* dist */
    if (n == 1)
        return c[0].id;
    float m = max_logit(c, n, sorted);
    double total = 0.0;
    for (int32_t i = 0; i < n; i++) {
        c[i].p = expf(c[i].logit - m);
        total += c[i].p;
    }
    const double target = total * oxl_mt19937_uniform(&s->rng);
    double run = 0.0;
    for (int32_t i = 0; i < n; i++) {
        run += c[i].p;
        if (run >= target)
            return c[i].id;
    }
    return c[n - 1].id;
}
