/* The op shaders against the CPU ops of src/ops: norms, RoPE in each mode, the GLU activations, the
 * elementwise ops, cache rows, softmax and flash attention over an f16 cache. */
#include "act.h"
#include "attention.h"
#include "gpu_ops.h"
#include "gpu_test_util.h"
#include "norm.h"
#include "oxl_fp16.h"
#include "pool.h"
#include "rope.h"

#include <stdio.h>
#include <string.h>

static float *fdup(const float *x, size_t n) {
    float *y = malloc(n * sizeof(float));
    cr_assert(y);
    memcpy(y, x, n * sizeof(float));
    return y;
}

/* ---- norms ---------------------------------------------------------------------------------- */
static void check_norm(bool rms, int d, int n, bool with_w, int w_rows, bool with_b) {
    oxl_gpu *g = gpu_test_device();
    float *x = malloc(sizeof(float) * d * n), *w = malloc(sizeof(float) * d * w_rows), *b = malloc(sizeof(float) * d);
    gpu_test_fill(x, (size_t)d * n, -2.0f, 3.0f, 11);
    gpu_test_fill(w, (size_t)d * w_rows, 0.5f, 1.5f, 12);
    gpu_test_fill(b, (size_t)d, -0.5f, 0.5f, 13);
    const oxl_tensor tw = {.type = OXL_TYPE_F32, .ne = {d, w_rows}, .data = w};
    const oxl_tensor tb = {.type = OXL_TYPE_F32, .ne = {d, 1}, .data = b};
    float *ref = fdup(x, (size_t)d * n);
    oxl_norm(rms ? OXL_NORM_RMS : OXL_NORM_LAYER, x, with_w ? &tw : NULL, with_b ? &tb : NULL, ref, d, n, 1e-5f);
    oxl_gpu_buf *bx = gpu_test_buf(g, x, sizeof(float) * d * n), *bw = gpu_test_buf(g, w, sizeof(float) * d * w_rows),
                *bb = gpu_test_buf(g, b, sizeof(float) * d), *by = gpu_test_buf(g, NULL, sizeof(float) * d * n);
    oxl_error err = {0};
    cr_assert_eq(oxl_gpu_norm(g, rms, bx, 0, with_w ? bw : NULL, 0, (uint32_t)w_rows, with_b ? bb : NULL, 0, by, 0,
                              (uint32_t)d, (uint32_t)n, 1e-5f, &err),
                 0, "%s", err.msg);
    float *y = gpu_test_read(g, by, sizeof(float) * d * n);
    /* the sums are double sums as the CPU's (two floats): the CPU's bits where the division and
     * square root are correctly rounded */
    if (gpu_test_exact_math(g)) {
        gpu_test_same_bits(y, ref, (size_t)d * n, rms ? "rms_norm" : "norm");
    } else {
        gpu_test_close(y, ref, (size_t)d * n, 1e-5f, 1e-3f, rms ? "rms_norm" : "norm");
    }
    oxl_gpu_free(g, bx), oxl_gpu_free(g, bw), oxl_gpu_free(g, bb), oxl_gpu_free(g, by);
    free(x), free(w), free(b), free(ref), free(y);
}

Test(gpu_ops, rms_norm) {
    check_norm(true, 288, 5, true, 1, false);
    check_norm(true, 64, 12, true, 4, false); /* per-head weights: column c takes row c % 4 */
    check_norm(true, 100, 3, false, 1, false);
    check_norm(true, 4096, 3, true, 1, false);
    check_norm(true, 2816, 2, true, 1, false); /* d not a power of two: the mean's quotient is corrected */
}

Test(gpu_ops, norm) {
    check_norm(false, 288, 5, true, 1, true);
    check_norm(false, 33, 7, false, 1, false);
    check_norm(false, 3000, 2, true, 1, true);
}

/* ---- RoPE ----------------------------------------------------------------------------------- */
static void check_rope(oxl_rope r, const char *shader, int head_dim, int n_head, int n_tok, bool multi_pos) {
    oxl_gpu *g = gpu_test_device();
    const size_t tok = (size_t)head_dim * n_head, n = tok * n_tok;
    float *x = malloc(sizeof(float) * n), *cs = malloc(sizeof(float) * r.n_rot * n_tok);
    gpu_test_fill(x, n, -1.0f, 1.0f, 21);
    float *ref = fdup(x, n);
    for (int j = 0; j < n_tok; j++) {
        const int32_t p = 3 + 517 * j;
        const int32_t pos[4] = {p, multi_pos ? p / 2 : p, multi_pos ? p % 7 : p, 0};
        oxl_rope_apply_multi(ref + j * tok, n_head, head_dim, pos, &r);
        oxl_rope_cos_sin(pos, &r, cs + (size_t)j * r.n_rot);
    }
    oxl_gpu_buf *bx = gpu_test_buf(g, x, sizeof(float) * n), *bc = gpu_test_buf(g, cs, sizeof(float) * r.n_rot * n_tok);
    oxl_error err = {0};
    cr_assert_eq(oxl_gpu_rope(g, shader, bx, 0, (uint32_t)tok, bc, 0, (uint32_t)r.n_rot, (uint32_t)head_dim,
                              (uint32_t)n_head, (uint32_t)n_tok, r.fused, &err),
                 0, "%s", err.msg);
    float *y = gpu_test_read(g, bx, sizeof(float) * n);
    gpu_test_close(y, ref, n, 2e-6f, 1.0f, shader);
    oxl_gpu_free(g, bx), oxl_gpu_free(g, bc);
    free(x), free(cs), free(ref), free(y);
}

Test(gpu_ops, rope_modes) {
    const oxl_rope base = {.mode = OXL_ROPE_NORM,
                           .n_rot = 64,
                           .freq_base = 10000.0f,
                           .freq_scale = 1.0f,
                           .attn_factor = 1.0f,
                           .beta_fast = 32.0f,
                           .beta_slow = 1.0f,
                           .n_ctx_orig = 4096};
    check_rope(base, "rope_norm", 64, 4, 5, false);
    oxl_rope r = base;
    r.mode = OXL_ROPE_NEOX;
    r.n_rot = 32; /* partial rotation: the rest of the head passes */
    check_rope(r, "rope_neox", 64, 3, 4, false);
    r.fused = true;
    check_rope(r, "rope_neox", 64, 3, 4, false);
    /* YaRN and frequency factors */
    float factors[32];
    for (int i = 0; i < 32; i++) {
        factors[i] = 1.0f + 0.25f * (float)i;
    }
    r = base;
    r.mode = OXL_ROPE_NEOX;
    r.freq_scale = 0.25f;
    r.ext_factor = 1.0f;
    r.attn_factor = 0.9f;
    r.factors = factors;
    check_rope(r, "rope_neox", 64, 2, 3, false);
    /* M-RoPE and interleaved M-RoPE with distinct t, h, w positions */
    r = base;
    r.mode = OXL_ROPE_MROPE;
    r.sections[0] = 16, r.sections[1] = 8, r.sections[2] = 8;
    check_rope(r, "rope_multi", 64, 2, 3, true);
    r.mode = OXL_ROPE_IMROPE;
    check_rope(r, "rope_multi", 64, 2, 3, true);
}

/* ---- activations and elementwise ops -------------------------------------------------------- */
static void check_glu(const char *shader, int n, int rows) {
    oxl_gpu *g = gpu_test_device();
    const size_t len = (size_t)n * rows;
    float *gx = malloc(sizeof(float) * len), *u = malloc(sizeof(float) * len);
    gpu_test_fill(gx, len, -12.0f, 12.0f, 31);
    gpu_test_fill(u, len, -2.0f, 2.0f, 32);
    float *ref = fdup(gx, len);
    if (strcmp(shader, "glu_swiglu") == 0) {
        oxl_swiglu(ref, u, n, rows);
    } else if (strcmp(shader, "glu_geglu") == 0) {
        oxl_geglu(ref, u, (int64_t)len);
    } else {
        oxl_gelu(ref, (int64_t)len);
    }
    oxl_gpu_buf *bg = gpu_test_buf(g, gx, sizeof(float) * len), *bu = gpu_test_buf(g, u, sizeof(float) * len),
                *by = gpu_test_buf(g, NULL, sizeof(float) * len);
    const oxl_gpu_glu_push pc = {(uint32_t)n, (uint32_t)rows, 0, (uint32_t)n, 0, (uint32_t)n, 0, (uint32_t)n};
    oxl_error err = {0};
    cr_assert_eq(oxl_gpu_glu(g, shader, bg, bu, by, &pc, &err), 0, "%s", err.msg);
    float *y = gpu_test_read(g, by, sizeof(float) * len);
    /* swiglu: the CPU's vector exp differs in the last bits; gelu: an f16 table entry, which a tanh
     * one ulp away can round to the neighbouring half (2^-10 relative) */
    const float tol = strcmp(shader, "glu_swiglu") == 0 ? 1e-5f : 1e-3f;
    gpu_test_close(y, ref, len, tol, 1e-3f, shader);
    if (strcmp(shader, "glu_swiglu") != 0) { /* the f16 table entries: nearly all the same bits */
        int same = 0;
        for (size_t i = 0; i < len; i++) {
            same += y[i] == ref[i];
        }
        cr_expect_geq(same, (int)(len * 9 / 10), "%s: only %d of %zu values equal the CPU's bits", shader, same, len);
    }
    oxl_gpu_free(g, bg), oxl_gpu_free(g, bu), oxl_gpu_free(g, by);
    free(gx), free(u), free(ref), free(y);
}

Test(gpu_ops, glu) {
    check_glu("glu_swiglu", 100, 7);
    check_glu("glu_geglu", 100, 7);
    check_glu("gelu", 333, 3);
}

Test(gpu_ops, add_mul_scale) {
    oxl_gpu *g = gpu_test_device();
    enum { N = 300, NB = 60 };
    float a[N], b[NB];
    gpu_test_fill(a, N, -3.0f, 3.0f, 41);
    gpu_test_fill(b, NB, -3.0f, 3.0f, 42);
    oxl_gpu_buf *ba = gpu_test_buf(g, a, sizeof a), *bb = gpu_test_buf(g, b, sizeof b),
                *by = gpu_test_buf(g, NULL, sizeof a);
    const char *ops[4] = {"add", "mul", "scale", "softcap"};
    oxl_error err = {0};
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(oxl_gpu_binary(g, ops[k], ba, 0, bb, 0, NB, by, 0, N, 0.375f, &err), 0, "%s", err.msg);
        float *y = gpu_test_read(g, by, sizeof a);
        if (k == 3) { /* the soft-cap: the device's tanh is not libm's (a few ulps near 0) */
            float ref[N];
            memcpy(ref, a, sizeof a);
            oxl_softcap(ref, N, 0.375f);
            gpu_test_close(y, ref, N, 1e-5f, 1e-3f, "softcap");
            free(y);
            continue;
        }
        for (int i = 0; i < N; i++) {
            const float want = k == 0 ? a[i] + b[i % NB] : k == 1 ? a[i] * b[i % NB] : a[i] * 0.375f;
            cr_assert_eq(y[i], want, "%s[%d]: %g, want %g", ops[k], i, (double)y[i], (double)want);
        }
        free(y);
    }
    oxl_gpu_free(g, ba), oxl_gpu_free(g, bb), oxl_gpu_free(g, by);
}

Test(gpu_ops, soft_max) {
    oxl_gpu *g = gpu_test_device();
    enum { D = 200, N = 3 };
    float x[D * N];
    gpu_test_fill(x, D * N, -20.0f, 20.0f, 51);
    oxl_gpu_buf *bx = gpu_test_buf(g, x, sizeof x);
    oxl_error err = {0};
    cr_assert_eq(oxl_gpu_soft_max(g, bx, 0, bx, 0, D, N, 0.5f, &err), 0, "%s", err.msg);
    float *y = gpu_test_read(g, bx, sizeof x);
    float ref[D * N];
    for (int j = 0; j < N; j++) {
        double m = -INFINITY, s = 0;
        for (int i = 0; i < D; i++) {
            m = fmax(m, 0.5 * x[j * D + i]);
        }
        for (int i = 0; i < D; i++) {
            s += exp(0.5 * x[j * D + i] - m);
        }
        for (int i = 0; i < D; i++) {
            ref[j * D + i] = (float)(exp(0.5 * x[j * D + i] - m) / s);
        }
    }
    gpu_test_close(y, ref, D * N, 1e-5f, 1e-6f, "soft_max");
    free(y);
    oxl_gpu_free(g, bx);
}

/* ---- cache rows ----------------------------------------------------------------------------- */
Test(gpu_ops, set_rows_f16) {
    oxl_gpu *g = gpu_test_device();
    enum { D = 48, N = 5, ROWS = 16 };
    float x[D * N];
    gpu_test_fill(x, D * N, -70000.0f, 70000.0f, 61);
    x[3] = 1e-7f, x[4] = -3e-6f, x[5] = 0.1f;
    const uint32_t rows[N] = {9, 2, 15, 0, 7};
    oxl_gpu_buf *bx = gpu_test_buf(g, x, sizeof x), *br = gpu_test_buf(g, rows, sizeof rows),
                *bd = gpu_test_buf(g, NULL, sizeof(uint16_t) * D * ROWS);
    oxl_error err = {0};
    cr_assert_eq(oxl_gpu_set_rows(g, false, bx, 0, D, br, 0, bd, 0, D, D, N, &err), 0, "%s", err.msg);
    uint16_t *c = gpu_test_read(g, bd, sizeof(uint16_t) * D * ROWS);
    for (int j = 0; j < N; j++) {
        for (int i = 0; i < D; i++) {
            const uint16_t want = oxl_fp32_to_fp16(x[j * D + i]);
            cr_assert_eq(c[rows[j] * D + i], want, "row %u [%d]: 0x%04x, want 0x%04x", rows[j], i, c[rows[j] * D + i],
                         want);
        }
    }
    cr_assert_eq(c[D], 0, "a row not written changed");
    free(c);
    oxl_gpu_free(g, bx), oxl_gpu_free(g, br), oxl_gpu_free(g, bd);
}

/* ---- flash attention ------------------------------------------------------------------------ */
typedef struct attn_case {
    int n_head, n_head_kv, head_dim, n_tok, n_ctx, n_seq;
    oxl_attn_params p;
    bool sinks, non_causal;
    bool f32; /* an f32 cache (flash_attn_f32), else f16 */
} attn_case;

/* Attention of every query head of every token in double from the f16 cache values and the f16 query. */
static void attn_by_hand(const attn_case *c, const oxl_kv_view *kv, const uint16_t *k, const uint16_t *v,
                         const float *q, double *out) {
    const int D = c->head_dim, G = c->n_head / c->n_head_kv;
    double *s = malloc(sizeof(double) * c->n_ctx);
    for (int j = 0; j < c->n_tok; j++) {
        int32_t lo, n_kv;
        oxl_attention_range(kv, &c->p, j, &lo, &n_kv);
        const size_t row0 = (size_t)kv->seq[j] * c->n_ctx;
        for (int h = 0; h < c->n_head; h++) {
            const int hk = h / G;
            const float slope = oxl_attention_slope(&c->p, h);
            double m = c->p.sinks ? (double)c->p.sinks[h] : -INFINITY, sum = 0;
            for (int32_t p = lo; p < n_kv; p++) {
                double dot = 0;
                for (int d = 0; d < D; d++) {
                    /* an f32 cache holds the same values (the halves'); its dot takes q as it is */
                    const float qf = q[((size_t)j * c->n_head + h) * D + d];
                    const float qh = c->f32 ? qf : oxl_fp16_to_fp32(oxl_fp32_to_fp16(qf));
                    dot += (double)qh * oxl_fp16_to_fp32(k[(row0 + p) * c->n_head_kv * D + hk * D + d]);
                }
                double sc = dot * c->p.scale;
                if (c->p.softcap != 0) {
                    sc = c->p.softcap * tanh(sc / c->p.softcap);
                }
                if (c->p.max_bias > 0) {
                    sc += (double)slope * (p - kv->pos[j]);
                }
                s[p] = sc;
                m = fmax(m, sc);
            }
            for (int32_t p = lo; p < n_kv; p++) {
                s[p] = exp(s[p] - m);
                sum += s[p];
            }
            if (c->p.sinks) {
                sum += exp((double)c->p.sinks[h] - m);
            }
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int32_t p = lo; p < n_kv; p++) {
                    acc += s[p] * oxl_fp16_to_fp32(v[(row0 + p) * c->n_head_kv * D + hk * D + d]);
                }
                out[((size_t)j * c->n_head + h) * D + d] = acc / sum;
            }
        }
    }
    free(s);
}

static void check_attn(attn_case c) {
    oxl_gpu *g = gpu_test_device();
    const int D = c.head_dim;
    const size_t kvw = (size_t)c.n_head_kv * D, rows = (size_t)c.n_ctx * c.n_seq;
    uint16_t *k = malloc(sizeof(uint16_t) * kvw * rows), *v = malloc(sizeof(uint16_t) * kvw * rows);
    float *tmp = malloc(sizeof(float) * kvw * rows);
    gpu_test_fill(tmp, kvw * rows, -1.0f, 1.0f, 71);
    for (size_t i = 0; i < kvw * rows; i++) {
        k[i] = oxl_fp32_to_fp16(tmp[i]);
    }
    gpu_test_fill(tmp, kvw * rows, -2.0f, 2.0f, 72);
    for (size_t i = 0; i < kvw * rows; i++) {
        v[i] = oxl_fp32_to_fp16(tmp[i]);
    }
    const size_t qn = (size_t)c.n_tok * c.n_head * D;
    float *q = malloc(sizeof(float) * qn), sinks[64];
    gpu_test_fill(q, qn, -1.5f, 1.5f, 73);
    gpu_test_fill(sinks, 64, -1.0f, 3.0f, 74);
    if (c.sinks) {
        c.p.sinks = sinks;
    }
    /* the pass: tokens at the end of their sequence's filled rows, alternating sequences */
    int32_t pos[64], seq[64], pos_hi[64];
    for (int j = 0; j < c.n_tok; j++) {
        seq[j] = j % c.n_seq;
        pos[j] = c.n_ctx - c.n_tok + j - 3 * (j % 2);
        pos_hi[j] = c.n_ctx - 1;
    }
    float *kf = malloc(sizeof(float) * kvw * rows), *vf = malloc(sizeof(float) * kvw * rows);
    for (size_t i = 0; i < kvw * rows; i++) {
        kf[i] = oxl_fp16_to_fp32(k[i]);
        vf[i] = oxl_fp16_to_fp32(v[i]);
    }
    const size_t es = c.f32 ? 4 : 2;
    const oxl_kv_view kv = {.type_k = c.f32 ? OXL_TYPE_F32 : OXL_TYPE_F16,
                            .type_v = c.f32 ? OXL_TYPE_F32 : OXL_TYPE_F16,
                            .k = c.f32 ? (const void *)kf : (const void *)k,
                            .v = c.f32 ? (const void *)vf : (const void *)v,
                            .k_row = kvw * es,
                            .v_row = kvw * es,
                            .n_ctx = c.n_ctx,
                            .n_tokens = c.n_tok,
                            .n_stream = c.n_tok,
                            .pos = pos,
                            .seq = seq,
                            .pos_hi = c.non_causal ? pos_hi : NULL};
    c.p.n_head = c.n_head, c.p.n_head_kv = c.n_head_kv, c.p.head_dim = D;
    float *cpu = malloc(sizeof(float) * qn), *scores = malloc(sizeof(float) * 4 * (c.n_ctx + D));
    oxl_pool *pool = oxl_pool_new(2, NULL);
    oxl_attention(pool, &kv, q, cpu, &c.p, true, scores);
    oxl_pool_free(pool);
    double *want = malloc(sizeof(double) * qn);
    attn_by_hand(&c, &kv, k, v, q, want);
    /* the device pass */
    int32_t tok[4 * 64];
    float aux[128];
    for (int j = 0; j < c.n_tok; j++) {
        int32_t lo, n_kv;
        oxl_attention_range(&kv, &c.p, j, &lo, &n_kv);
        tok[4 * j] = seq[j] * c.n_ctx, tok[4 * j + 1] = lo, tok[4 * j + 2] = n_kv, tok[4 * j + 3] = pos[j];
    }
    for (int h = 0; h < c.n_head; h++) {
        aux[h] = oxl_attention_slope(&c.p, h);
        aux[c.n_head + h] = sinks[h];
    }
    oxl_gpu_buf *bq = gpu_test_buf(g, q, sizeof(float) * qn), *bk = gpu_test_buf(g, kv.k, es * kvw * rows),
                *bv = gpu_test_buf(g, kv.v, es * kvw * rows), *bo = gpu_test_buf(g, NULL, sizeof(float) * qn),
                *ba = gpu_test_buf(g, aux, sizeof aux), *bt = gpu_test_buf(g, tok, sizeof(int32_t) * 4 * c.n_tok);
    const float cap = c.p.softcap;
    const oxl_gpu_flash_push pc = {
        .head_dim = (uint32_t)D,
        .n_head = (uint32_t)c.n_head,
        .n_head_kv = (uint32_t)c.n_head_kv,
        .n_tok = (uint32_t)c.n_tok,
        .q_tok = (uint32_t)(c.n_head * D),
        .k_row = (uint32_t)kvw,
        .v_row = (uint32_t)kvw,
        .o_tok = (uint32_t)(c.n_head * D),
        .flags = (cap != 0 ? 1u : 0u) | (c.p.max_bias > 0 ? 2u : 0u) | (c.sinks ? 4u : 0u),
        .scale = cap != 0 ? c.p.scale / cap : c.p.scale,
        .softcap = cap,
    };
    oxl_error err = {0};
    cr_assert_eq(oxl_gpu_flash_attn(g, c.f32, bq, bk, bv, bo, ba, bt, &pc, &err), 0, "%s", err.msg);
    float *out = gpu_test_read(g, bo, sizeof(float) * qn);
    double worst_hand = 0, worst_cpu = 0, big = 0;
    for (size_t i = 0; i < qn; i++) {
        big = fmax(big, fabs(want[i]));
        worst_hand = fmax(worst_hand, fabs(out[i] - want[i]));
        worst_cpu = fmax(worst_cpu, fabs(out[i] - cpu[i]));
    }
    /* The device takes the CPU's steps (f16 V: the accumulator rounded to a half after each step, as
     * ggml's), so it follows the CPU's result closely; against the exact value an f16 accumulator is
     * within its roundings, an f32 one within float sums. */
    cr_assert_leq(worst_hand, (c.f32 ? 2e-5 : 8e-3) * big, "device vs exact: %g (largest output %g)", worst_hand, big);
    cr_assert_leq(worst_cpu, (c.f32 ? 2e-5 : 5e-4) * big, "device vs the CPU's flash attention: %g (largest output %g)",
                  worst_cpu, big);
    free(out);
    oxl_gpu_free(g, bq), oxl_gpu_free(g, bk), oxl_gpu_free(g, bv), oxl_gpu_free(g, bo), oxl_gpu_free(g, ba),
        oxl_gpu_free(g, bt);
    free(k), free(v), free(kf), free(vf), free(tmp), free(q), free(cpu), free(scores), free(want);
}

Test(gpu_ops, flash_attn_causal_gqa) {
    check_attn((attn_case){
        .n_head = 8, .n_head_kv = 2, .head_dim = 64, .n_tok = 5, .n_ctx = 150, .n_seq = 2, .p = {.scale = 0.125f}});
}

Test(gpu_ops, flash_attn_swa_chunk) {
    check_attn((attn_case){.n_head = 4,
                           .n_head_kv = 4,
                           .head_dim = 32,
                           .n_tok = 4,
                           .n_ctx = 200,
                           .n_seq = 1,
                           .p = {.scale = 0.2f, .n_swa = 37}});
    check_attn((attn_case){.n_head = 4,
                           .n_head_kv = 1,
                           .head_dim = 32,
                           .n_tok = 4,
                           .n_ctx = 200,
                           .n_seq = 1,
                           .p = {.scale = 0.2f, .n_chunk = 64}});
}

Test(gpu_ops, flash_attn_softcap_sinks_alibi) {
    check_attn((attn_case){.n_head = 4,
                           .n_head_kv = 2,
                           .head_dim = 128,
                           .n_tok = 3,
                           .n_ctx = 90,
                           .n_seq = 1,
                           .p = {.scale = 0.3f, .softcap = 5.0f}});
    check_attn((attn_case){.n_head = 4,
                           .n_head_kv = 2,
                           .head_dim = 64,
                           .n_tok = 3,
                           .n_ctx = 90,
                           .n_seq = 1,
                           .p = {.scale = 0.125f},
                           .sinks = true});
    check_attn((attn_case){.n_head = 6,
                           .n_head_kv = 6,
                           .head_dim = 16,
                           .n_tok = 3,
                           .n_ctx = 90,
                           .n_seq = 1,
                           .p = {.scale = 0.25f, .max_bias = 8.0f}});
}

Test(gpu_ops, flash_attn_non_causal) {
    check_attn((attn_case){.n_head = 2,
                           .n_head_kv = 1,
                           .head_dim = 64,
                           .n_tok = 4,
                           .n_ctx = 70,
                           .n_seq = 1,
                           .p = {.scale = 0.125f},
                           .non_causal = true});
}

Test(gpu_ops, flash_attn_f32_cache) {
    check_attn((attn_case){.n_head = 8,
                           .n_head_kv = 2,
                           .head_dim = 64,
                           .n_tok = 5,
                           .n_ctx = 150,
                           .n_seq = 2,
                           .p = {.scale = 0.125f},
                           .f32 = true});
    check_attn((attn_case){.n_head = 4,
                           .n_head_kv = 2,
                           .head_dim = 32,
                           .n_tok = 4,
                           .n_ctx = 90,
                           .n_seq = 1,
                           .p = {.scale = 0.3f, .softcap = 5.0f, .n_swa = 20},
                           .sinks = true,
                           .f32 = true});
}

Test(gpu_ops, set_rows_f32) {
    oxl_gpu *g = gpu_test_device();
    enum { D = 30, N = 3, ROWS = 8 };
    float x[D * N];
    gpu_test_fill(x, D * N, -5.0f, 5.0f, 62);
    const uint32_t rows[N] = {5, 0, 3};
    oxl_gpu_buf *bx = gpu_test_buf(g, x, sizeof x), *br = gpu_test_buf(g, rows, sizeof rows),
                *bd = gpu_test_buf(g, NULL, sizeof(float) * D * ROWS);
    oxl_error err = {0};
    cr_assert_eq(oxl_gpu_set_rows(g, true, bx, 0, D, br, 0, bd, 0, D, D, N, &err), 0, "%s", err.msg);
    float *c = gpu_test_read(g, bd, sizeof(float) * D * ROWS);
    for (int j = 0; j < N; j++) {
        cr_assert_eq(memcmp(c + rows[j] * D, x + j * D, sizeof(float) * D), 0, "row %u differs", rows[j]);
    }
    free(c);
    oxl_gpu_free(g, bx), oxl_gpu_free(g, br), oxl_gpu_free(g, bd);
}
