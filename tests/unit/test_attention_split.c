/* Flash attention of a decode step whose cache range is split over the threads (src/ops/attention.c:
 * fewer KV heads than threads and at least 512 visible positions): each thread's run of positions
 * keeps its own running max, sum and accumulator, merged afterwards as ggml's
 * ggml_flash_attn_ext_reduce_partials. Checked against attention computed here by hand in double
 * from the same cache values:
 * - an f16 cache (within the f16 accumulator's rounding: 8e-3 on outputs up to ~1), one KV head for four query heads, 1
 * to 4 threads, a full causal range and a sliding window;
 * - an f32 cache with attention sinks (the sink joins the first run only), to 1e-5;
 * - a step below 512 positions is not split: 1 and 4 threads give the same bits. */
#include "attention.h"
#include "oxl_fp16.h"
#include "pool.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { D = 64, NH = 4, NCTX = 1024 };

typedef struct cache {
    float k[NCTX * D], v[NCTX * D]; /* the values as the cache holds them */
    uint16_t k16[NCTX * D], v16[NCTX * D];
    float q[NH * D];
} cache;

/* Keys and values that change along the positions, so that a lost or misweighted run shows. */
static void fill(cache *c, bool f16) {
    for (int p = 0; p < NCTX; p++) {
        for (int d = 0; d < D; d++) {
            const float kv = sinf(0.013f * (float)p * (float)(d % 7 + 1) + 0.3f * (float)d);
            const float vv = cosf(0.021f * (float)p + 0.17f * (float)d) * (1.0f + (float)(p % 97) / 97.0f);
            c->k16[p * D + d] = oxl_fp32_to_fp16(kv);
            c->v16[p * D + d] = oxl_fp32_to_fp16(vv);
            c->k[p * D + d] = f16 ? oxl_fp16_to_fp32(c->k16[p * D + d]) : kv;
            c->v[p * D + d] = f16 ? oxl_fp16_to_fp32(c->v16[p * D + d]) : vv;
        }
    }
    for (int i = 0; i < NH * D; i++) {
        const float qv = 1.5f * sinf(0.05f * (float)(i * i % 301) + 0.7f);
        /* an f16 cache's dot takes the query as f16 (its vec_dot_type) */
        c->q[i] = f16 ? oxl_fp16_to_fp32(oxl_fp32_to_fp16(qv)) : qv;
    }
}

/* Head h's output over positions lo .. pos, with an optional sink logit, in double. */
static void by_hand(const cache *c, int h, int32_t lo, int32_t pos, float scale, const float *sink, double *out) {
    double *s = malloc(sizeof(double) * NCTX), max = sink ? (double)*sink : -INFINITY, sum = 0.0;
    cr_assert_not_null(s);
    for (int32_t p = lo; p <= pos; p++) {
        double dot = 0.0;
        for (int d = 0; d < D; d++) {
            dot += (double)c->q[h * D + d] * c->k[p * D + d];
        }
        s[p] = dot * scale;
        max = s[p] > max ? s[p] : max;
    }
    for (int32_t p = lo; p <= pos; p++) {
        s[p] = exp(s[p] - max);
        sum += s[p];
    }
    if (sink) {
        sum += exp((double)*sink - max);
    }
    for (int d = 0; d < D; d++) {
        double acc = 0.0;
        for (int32_t p = lo; p <= pos; p++) {
            acc += s[p] * c->v[p * D + d];
        }
        out[d] = acc / sum;
    }
    free(s);
}

/* One decode step of the token at pos through oxl_attention on n_threads; out holds NH * D. */
static void decode(const cache *c, bool f16, int n_threads, int32_t pos, int32_t n_swa, const float *sinks,
                   float *out) {
    int32_t seq = 0;
    const oxl_kv_view kv = {.type_k = f16 ? OXL_TYPE_F16 : OXL_TYPE_F32,
                            .type_v = f16 ? OXL_TYPE_F16 : OXL_TYPE_F32,
                            .k = f16 ? (const void *)c->k16 : (const void *)c->k,
                            .v = f16 ? (const void *)c->v16 : (const void *)c->v,
                            .k_row = D * (f16 ? sizeof(uint16_t) : sizeof(float)),
                            .v_row = D * (f16 ? sizeof(uint16_t) : sizeof(float)),
                            .n_ctx = NCTX,
                            .n_tokens = 1,
                            .n_stream = 1,
                            .pos = &pos,
                            .seq = &seq};
    const oxl_attn_params p = {
        .n_head = NH, .n_head_kv = 1, .head_dim = D, .scale = 0.125f, .n_swa = n_swa, .sinks = sinks};
    oxl_pool *pool = oxl_pool_new(n_threads, NULL);
    cr_assert_not_null(pool);
    float *scores = malloc(sizeof(float) * (size_t)n_threads * (NCTX + D));
    cr_assert_not_null(scores);
    oxl_attention(pool, &kv, c->q, out, &p, true, scores);
    free(scores);
    oxl_pool_free(pool);
}

static void check(bool f16, int n_threads, int32_t pos, int32_t n_swa, const float *sinks, double tol) {
    static cache c;
    fill(&c, f16);
    float out[NH * D];
    double want[D];
    decode(&c, f16, n_threads, pos, n_swa, sinks, out);
    const int32_t lo = n_swa > 0 && pos - n_swa + 1 > 0 ? pos - n_swa + 1 : 0;
    double worst = 0.0;
    for (int h = 0; h < NH; h++) {
        by_hand(&c, h, lo, pos, 0.125f, sinks ? &sinks[h] : NULL, want);
        for (int d = 0; d < D; d++) {
            const double e = fabs((double)out[h * D + d] - want[d]);
            worst = e > worst ? e : worst;
            cr_expect(e < tol, "%s, %d threads, pos %d: head %d dim %d: %g, by hand %g", f16 ? "f16" : "f32", n_threads,
                      pos, h, d, (double)out[h * D + d], want[d]);
        }
    }
    cr_log_info("%s, %d threads, pos %d, window %d: max |error| %g", f16 ? "f16" : "f32", n_threads, pos, n_swa, worst);
}

Test(attention_split, f16_cache_split_over_threads_matches_by_hand) {
    for (int nt = 1; nt <= 4; nt++) {
        check(true, nt, 899, 0, NULL, 8e-3);
        check(true, nt, NCTX - 1, 0, NULL, 8e-3);
        check(true, nt, 1000, 600, NULL, 8e-3); /* a sliding window: the runs start at pos - 599 */
    }
}

Test(attention_split, f32_cache_with_sinks_split_over_threads_matches_by_hand) {
    const float sinks[NH] = {-1.0f, 0.5f, 3.0f, 40.0f}; /* the last one outweighs every score */
    for (int nt = 1; nt <= 4; nt++) {
        check(false, nt, 777, 0, sinks, 1e-5);
        check(false, nt, 777, 0, NULL, 1e-5);
    }
}

Test(attention_split, short_ranges_are_not_split) {
    static cache c;
    fill(&c, true);
    float one[NH * D], four[NH * D];
    decode(&c, true, 1, 300, 0, NULL, one);
    decode(&c, true, 4, 300, 0, NULL, four);
    cr_assert(memcmp(one, four, sizeof one) == 0, "below 512 positions the threads must not change the bits");
}
