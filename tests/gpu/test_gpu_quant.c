/* The quantized formats' GPU shaders (templates/gpu/{dequant_q,mul_mat_q,quantize_q8}.comp.j2)
 * against the CPU kernels and llama.cpp's quant goldens:
 *   dequant_<fmt>      bit for bit the CPU's dequant and golden/quant/<fmt>.gguf's dq;
 *   quantize_<partner> byte for byte the CPU's activation quantizer and the golden's yq;
 *   mul_mat_<fmt>      every output within 1e-5 * sum |w x| of the CPU's vec_dot of the same row and
 *                      column (the block integers are exact; only the float sums are ordered
 *                      differently: the golden checker's and the repacked gemm's tolerance).
 * On the golden rows and on random rows from the reference quantizer, for K of one block, several
 * blocks, K not a multiple of 256 where the block allows, and 1 and 7 columns; the operands sit at
 * offsets that are not multiples of 4 bytes. Without a Vulkan device the tests skip, unless
 * OXILLAMA_REQUIRE_VULKAN=1 (CI), where they fail (gpu_test_device). */
#include "golden_quant.h"
#include "gpu.h"
#include "gpu_quant.h"
#include "gpu_test_util.h"
#include "oxl_blocks.h"
#include "kernels.h"
#include "quantize.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static oxl_gpu *gq_open(void) { return gpu_test_device(); }

/* One buffer of a dispatch: host bytes copied in before and, when out, back after. */
typedef struct {
    void *host;
    size_t size;
    bool out;
} gq_arg;

static void gq_run(oxl_gpu *g, const char *shader, gq_arg *args, int n, const void *push, size_t push_size, uint32_t gx,
                   uint32_t gy) {
    oxl_error err = {{0}};
    oxl_gpu_buf *bufs[4] = {0};
    oxl_gpu_bind binds[4];
    for (int i = 0; i < n; i++) {
        /* whole words, so that a shader reading the last partial word stays inside the buffer */
        const size_t bytes = (args[i].size + 3) & ~(size_t)3;
        bufs[i] = oxl_gpu_alloc(g, bytes, &err);
        cr_assert(bufs[i] != NULL, "%s", err.msg);
        void *tmp = calloc(1, bytes);
        cr_assert(tmp != NULL);
        memcpy(tmp, args[i].host, args[i].size);
        cr_assert(oxl_gpu_write(g, bufs[i], 0, tmp, bytes, &err) == 0, "%s", err.msg);
        free(tmp);
        binds[i] = (oxl_gpu_bind){bufs[i], 0, 0};
    }
    cr_assert(oxl_gpu_begin(g, &err) == 0, "%s", err.msg);
    cr_assert(oxl_gpu_dispatch(g, shader, binds, n, push, push_size, gx, gy, 1, &err) == 0, "%s: %s", shader, err.msg);
    cr_assert(oxl_gpu_submit(g, &err) == 0, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        if (args[i].out) {
            cr_assert(oxl_gpu_read(g, bufs[i], 0, args[i].host, args[i].size, &err) == 0, "%s", err.msg);
        }
        oxl_gpu_free(g, bufs[i]);
    }
}

/* dequant_<fmt> of R rows of K elements (q) against the CPU's dequant (and want, when not NULL) */
static void gq_check_dequant(oxl_gpu *g, oxl_type t, const void *q, int64_t R, int64_t K, const float *want) {
    const oxl_type_traits *tw = oxl_type_traits_get(t);
    const size_t wrow = oxl_row_size(t, K);
    const uint32_t woff = 3, yoff = 5;
    uint8_t *w = calloc(woff + wrow * R, 1);
    float *y = calloc((size_t)(yoff + K * R), sizeof(float));
    float *cpu = malloc((size_t)(K * R) * sizeof(float));
    cr_assert(w && y && cpu);
    memcpy(w + woff, q, wrow * R);
    for (int64_t r = 0; r < R; r++) {
        oxl_kernels_get()->dequant[t]((const uint8_t *)q + r * wrow, cpu + r * K, K);
    }
    const uint32_t push[6] = {(uint32_t)R, (uint32_t)K, woff, (uint32_t)wrow, yoff, (uint32_t)K};
    gq_arg args[2] = {{w, woff + wrow * R, false}, {y, (yoff + K * R) * sizeof(float), true}};
    char name[64];
    snprintf(name, sizeof name, "dequant_%s", tw->name);
    gq_run(g, name, args, 2, push, sizeof push, (uint32_t)((K + 63) / 64), (uint32_t)R);
    int bad = 0;
    for (int64_t i = 0; i < K * R; i++) {
        if (isnan(y[yoff + i]) && isnan(cpu[i])) {
            continue; /* inf * 0 of an infinite scale: NaN bits are the device's */
        }
        if (memcmp(&y[yoff + i], &cpu[i], sizeof(float)) != 0 ||
            (want != NULL && memcmp(&cpu[i], &want[i], sizeof(float)) != 0)) {
            if (bad++ < 3) {
                cr_log_error("%s row %ld element %ld: gpu %.9g cpu %.9g golden %.9g", name, (long)(i / K),
                             (long)(i % K), y[yoff + i], cpu[i], want ? want[i] : NAN);
            }
        }
    }
    cr_expect(bad == 0, "%s: %d of %ld elements differ (K %ld)", name, bad, (long)(K * R), (long)K);
    free(w);
    free(y);
    free(cpu);
}

/* quantize_<partner> of C columns of K floats against the CPU's quantizer (and want): bytes equal,
 * and the bytes around the output (at an odd offset) untouched. Returns the CPU's blocks. */
static uint8_t *gq_check_quantize(oxl_gpu *g, oxl_type p, const float *x, int64_t C, int64_t K, const void *want) {
    const oxl_type_traits *tp = oxl_type_traits_get(p);
    const size_t xrow = oxl_row_size(p, K);
    const uint32_t qoff = 1, tail = 6;
    uint8_t *q = malloc(qoff + xrow * C + tail), *cpu = malloc(xrow * C);
    float *xin = malloc((size_t)(K * C) * sizeof(float));
    cr_assert(q && cpu && xin);
    memset(q, 0xa5, qoff + xrow * C + tail);
    memcpy(xin, x, (size_t)(K * C) * sizeof(float));
    for (int64_t c = 0; c < C; c++) {
        oxl_kernels_get()->quant[p](x + c * K, cpu + c * xrow, K);
    }
    const uint32_t push[6] = {(uint32_t)K, (uint32_t)C, 0, (uint32_t)K, qoff, (uint32_t)xrow};
    gq_arg args[2] = {{xin, (size_t)(K * C) * sizeof(float), false}, {q, qoff + xrow * C + tail, true}};
    char name[64];
    snprintf(name, sizeof name, "quantize_%s", tp->name);
    gq_run(g, name, args, 2, push, sizeof push, (uint32_t)(K / tp->blck_size), (uint32_t)C);
    int bad = 0;
    for (size_t i = 0; i < xrow * C; i++) {
        if (q[qoff + i] != cpu[i] || (want != NULL && cpu[i] != ((const uint8_t *)want)[i])) {
            if (bad++ < 3) {
                cr_log_error("%s column %zu byte %zu: gpu %02x cpu %02x", name, i / xrow, i % xrow, q[qoff + i],
                             cpu[i]);
            }
        }
    }
    cr_expect(bad == 0, "%s: %d of %zu bytes differ (K %ld)", name, bad, xrow * C, (long)K);
    cr_expect(q[0] == 0xa5, "%s wrote before its output", name);
    for (uint32_t i = 0; i < tail; i++) {
        cr_expect(q[qoff + xrow * C + i] == 0xa5, "%s wrote past its output", name);
    }
    free(q);
    free(xin);
    return cpu;
}

/* mul_mat_<fmt>: R rows of w (t) times C columns of x (the partner), against the CPU's vec_dot;
 * dots, when not NULL, also holds golden dots of row i with column i (the same tolerance). */
static void gq_check_mul_mat(oxl_gpu *g, oxl_type t, const void *w, int64_t R, const void *x, int64_t C, int64_t K,
                             const float *dots) {
    const oxl_kernels *k = oxl_kernels_get();
    const oxl_type_traits *tw = oxl_type_traits_get(t);
    const oxl_type p = tw->vec_dot_type;
    const size_t wrow = oxl_row_size(t, K), xrow = oxl_row_size(p, K);
    const uint32_t woff = 1, xoff = 2, yoff = 3;
    uint8_t *wb = calloc(woff + wrow * R, 1), *xb = calloc(xoff + xrow * C, 1);
    float *y = calloc((size_t)(yoff + R * C), sizeof(float));
    float *wd = malloc((size_t)K * sizeof(float)), *xd = malloc((size_t)K * sizeof(float));
    cr_assert(wb && xb && y && wd && xd);
    memcpy(wb + woff, w, wrow * R);
    memcpy(xb + xoff, x, xrow * C);
    const uint32_t push[9] = {(uint32_t)R, (uint32_t)C,    (uint32_t)K, woff,       (uint32_t)wrow,
                              xoff,        (uint32_t)xrow, yoff,        (uint32_t)R};
    gq_arg args[3] = {
        {wb, woff + wrow * R, false}, {xb, xoff + xrow * C, false}, {y, (yoff + R * C) * sizeof(float), true}};
    char name[64];
    snprintf(name, sizeof name, "mul_mat_%s", tw->name);
    gq_run(g, name, args, 3, push, sizeof push, (uint32_t)R, (uint32_t)C);
    int bad = 0;
    for (int64_t c = 0; c < C; c++) {
        k->dequant[p]((const uint8_t *)x + c * xrow, xd, K);
        for (int64_t r = 0; r < R; r++) {
            k->dequant[t]((const uint8_t *)w + r * wrow, wd, K);
            double sa = 0.0;
            for (int64_t i = 0; i < K; i++) {
                sa += fabs((double)wd[i] * xd[i]);
            }
            float cpu;
            k->vec_dot[t](K, &cpu, (const uint8_t *)w + r * wrow, (const uint8_t *)x + c * xrow);
            const float got = y[yoff + c * R + r];
            const double tol = 1e-5 * sa;
            bool ok;
            if (!isfinite(cpu)) {
                /* rows of non-finite scales (the goldens have some): the same class, NaN or the
                 * same infinity, as the golden checker asks */
                ok = isnan(cpu) ? isnan(got) : got == cpu;
            } else {
                ok = fabs((double)got - cpu) <= tol && (dots == NULL || r != c || fabs((double)got - dots[r]) <= tol);
            }
            if (!ok && bad++ < 3) {
                cr_log_error("%s K %ld row %ld column %ld: gpu %.9g cpu %.9g golden %.9g, sum |w x| %.6g", name,
                             (long)K, (long)r, (long)c, got, cpu, dots != NULL && r == c ? dots[r] : NAN, sa);
            }
        }
    }
    cr_expect(bad == 0, "%s: %d of %ld outputs off (K %ld, %ld columns)", name, bad, (long)(R * C), (long)K, (long)C);
    free(wb);
    free(xb);
    free(y);
    free(wd);
    free(xd);
}

static uint64_t gq_state = 0x9e3779b97f4a7c15ull;
static float gq_normal(void) {
    /* xorshift64 + Box-Muller */
    double u[2];
    for (int i = 0; i < 2; i++) {
        gq_state ^= gq_state << 13;
        gq_state ^= gq_state >> 7;
        gq_state ^= gq_state << 17;
        u[i] = ((double)(gq_state >> 11) + 0.5) / 9007199254740992.0;
    }
    return (float)(sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]));
}

static void gq_check_format(const char *fmt) {
    oxl_gpu *g = gq_open();
    const oxl_type t = (oxl_type)oxl_type_from_name(fmt);
    const oxl_type_traits *tw = oxl_type_traits_get(t);
    const oxl_type p = tw->vec_dot_type;
    const int64_t pblck = oxl_type_traits_get(p)->blck_size;
    const int64_t blk = tw->blck_size > pblck ? tw->blck_size : pblck;

    /* llama.cpp's golden rows */
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/quant/%s.gguf", OXL_SOURCE_DIR, fmt);
    oxl_error err = {{0}};
    oxl_gguf *gg = oxl_gguf_open(path, &err);
    cr_assert(gg != NULL, "%s", err.msg);
    oxl_quant_golden qg;
    cr_assert(oxl_quant_golden_read(gg, &qg, &err) == 0, "%s", err.msg);
    cr_assert(qg.type == t && qg.yq_type == p && qg.yq != NULL, "%s: not a %s golden with activations", path, fmt);
    gq_check_dequant(g, t, qg.q, qg.nrows, qg.ne0, qg.dq);
    free(gq_check_quantize(g, p, qg.y, qg.nrows, qg.ne0, qg.yq));
    gq_check_mul_mat(g, t, qg.q, qg.nrows, qg.yq, qg.nrows, qg.ne0, qg.dot);
    oxl_gguf_close(gg);

    /* random rows: one block, a few, not a multiple of 256 (32-element blocks), a long row */
    const int64_t ks[4] = {blk, 3 * blk, blk < 256 ? 21 * blk : 5 * blk, 4096};
    const int64_t R = 5;
    for (int ki = 0; ki < 4; ki++) {
        const int64_t K = ks[ki];
        float *wf = malloc((size_t)(K * R) * sizeof(float)), *xf = malloc((size_t)(K * 7) * sizeof(float));
        uint8_t *w = malloc(oxl_row_size(t, K) * R);
        cr_assert(wf && xf && w);
        for (int64_t i = 0; i < K * R; i++) {
            wf[i] = gq_normal();
        }
        for (int64_t i = 0; i < K * 7; i++) {
            xf[i] = gq_normal();
        }
        cr_assert(oxl_quantize_rows(t, wf, w, R, K, NULL, &err) == 0, "%s", err.msg);
        gq_check_dequant(g, t, w, R, K, NULL);
        for (int cols = 1; cols <= 7; cols += 6) {
            uint8_t *x = gq_check_quantize(g, p, xf, cols, K, NULL);
            gq_check_mul_mat(g, t, w, R, x, cols, K, NULL);
            free(x);
        }
        free(wf);
        free(xf);
        free(w);
    }
}

#define GQ_FORMAT(f)                                                                                                   \
    Test(gpu_quant, f, .timeout = 300) { gq_check_format(#f); }
GQ_FORMAT(q8_0)
GQ_FORMAT(q4_0)
GQ_FORMAT(q4_1)
GQ_FORMAT(q5_0)
GQ_FORMAT(q5_1)
GQ_FORMAT(q2_K)
GQ_FORMAT(q3_K)
GQ_FORMAT(q4_K)
GQ_FORMAT(q5_K)
GQ_FORMAT(q6_K)
GQ_FORMAT(iq4_nl)
GQ_FORMAT(iq4_xs)
GQ_FORMAT(mxfp4)
GQ_FORMAT(nvfp4)
GQ_FORMAT(q1_0)

/* The activation quantizers on the columns where rounding and the scale's sign matter: all zeros,
 * exact halves (ties to even), a negative maximum repeated (q8_K takes the first), magnitudes near
 * the float range's ends, and integers that hit 127 exactly. */
Test(gpu_quant, quantize_edges) {
    oxl_gpu *g = gq_open();
    const int64_t K = 512, C = 8;
    float *x = malloc((size_t)(K * C) * sizeof(float));
    cr_assert(x != NULL);
    for (int64_t c = 0; c < C; c++) {
        for (int64_t i = 0; i < K; i++) {
            float v = gq_normal();
            switch (c) {
            case 0: v = 0.0f; break;
            case 1: v = (float)(i % 255 - 127) + 0.5f; break;
            case 2: v = i % 7 == 0 ? -3.0f : v; break;
            case 3: v *= 1e-30f; break;
            case 4: v *= 1e30f; break;
            case 5: v = i % 32 == 5 ? 127.0f : (float)(i % 64) * 0.5f - 16.0f; break;
            case 6: v = i % 256 == 3 ? -254.0f : (float)((i * 7) % 509) - 254.0f; break;
            default: break;
            }
            x[c * K + i] = v;
        }
    }
    const oxl_type parts[3] = {OXL_TYPE_Q8_0, OXL_TYPE_Q8_1, OXL_TYPE_Q8_K};
    for (int i = 0; i < 3; i++) {
        free(gq_check_quantize(g, parts[i], x, C, K, NULL));
    }
    free(x);
}

/* Every half that is not a NaN as a block scale (subnormals, zeros of both signs, infinities): the
 * shaders convert fp16 by hand, which dequant_q8_0 must show to equal the CPU's conversion. */
Test(gpu_quant, fp16_scales) {
    oxl_gpu *g = gq_open();
    int64_t nb = 0;
    oxl_block_q8_0 *b = malloc(65536 * sizeof *b);
    cr_assert(b != NULL);
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {
            continue;
        }
        b[nb].d = (uint16_t)h;
        for (int j = 0; j < 32; j++) {
            b[nb].qs[j] = (int8_t)(j - 16);
        }
        nb++;
    }
    gq_check_dequant(g, OXL_TYPE_Q8_0, b, 1, nb * 32, NULL);
    free(b);
}

/* oxl_gpu_mul_mat_f32: f32 activations (columns padded apart) through the partner's quantizer into
 * scratch, then mul_mat_<fmt>, for a weight format of each partner, against the CPU's quantizer and
 * vec_dot. */
Test(gpu_quant, mul_mat_f32_activations) {
    oxl_gpu *g = gq_open();
    const oxl_kernels *k = oxl_kernels_get();
    const char *fmts[6] = {"q4_0", "q5_1", "q4_K", "iq4_xs", "f16", "f32"};
    const uint32_t K = 512, R = 6, C = 5, pad = 7;
    oxl_error err = {{0}};
    float *wf = malloc((size_t)K * R * sizeof(float)), *xf = malloc((size_t)(K + pad) * C * sizeof(float));
    float *wd = malloc(K * sizeof(float)), *xd = malloc(K * sizeof(float));
    cr_assert(wf && xf && wd && xd);
    for (size_t i = 0; i < (size_t)K * R; i++) {
        wf[i] = gq_normal();
    }
    for (size_t i = 0; i < (size_t)(K + pad) * C; i++) {
        xf[i] = gq_normal();
    }
    for (int f = 0; f < 6; f++) {
        const oxl_type t = (oxl_type)oxl_type_from_name(fmts[f]);
        const oxl_type p = oxl_type_traits_get(t)->vec_dot_type;
        const size_t wrow = oxl_row_size(t, K), xrow = oxl_row_size(p, K);
        uint8_t *w = malloc(wrow * R), *xq = malloc(xrow);
        cr_assert(w && xq);
        cr_assert(oxl_quantize_rows(t, wf, w, R, K, NULL, &err) == 0, "%s", err.msg);
        cr_assert(oxl_gpu_mul_mat_supported(t), "%s", fmts[f]);
        oxl_gpu_buf *bw = gpu_test_buf(g, w, wrow * R);
        oxl_gpu_buf *bx = gpu_test_buf(g, xf, (size_t)(K + pad) * C * sizeof(float));
        const size_t scratch = oxl_gpu_mul_mat_scratch(t, K, C);
        oxl_gpu_buf *bs = gpu_test_buf(g, NULL, scratch > 0 ? scratch : 4);
        oxl_gpu_buf *by = gpu_test_buf(g, NULL, (size_t)(2 + R * C) * sizeof(float));
        cr_assert(oxl_gpu_begin(g, &err) == 0, "%s", err.msg);
        cr_assert(oxl_gpu_mul_mat_f32(g, t, bw, 0, (uint32_t)wrow, bx, pad, K + pad, bs, by, 2, R, R, C, K, &err) == 0,
                  "%s: %s", fmts[f], err.msg);
        cr_assert(oxl_gpu_submit(g, &err) == 0, "%s", err.msg);
        float *y = gpu_test_read(g, by, (size_t)(2 + R * C) * sizeof(float));
        if (oxl_type_traits_get(t)->is_quantized) {
            /* oxl_gpu_dequant of rows 1.. at a row stride of K + 1 floats: the CPU's dequant */
            oxl_gpu_buf *bd = gpu_test_buf(g, NULL, (size_t)(K + 1) * R * sizeof(float));
            cr_assert(oxl_gpu_begin(g, &err) == 0, "%s", err.msg);
            cr_assert(oxl_gpu_dequant(g, t, bw, (uint32_t)wrow, (uint32_t)wrow, bd, 1, K + 1, K, R - 1, &err) == 0,
                      "%s", err.msg);
            cr_assert(oxl_gpu_submit(g, &err) == 0, "%s", err.msg);
            float *dg = gpu_test_read(g, bd, (size_t)(K + 1) * R * sizeof(float));
            for (uint32_t r = 1; r < R; r++) {
                k->dequant[t](w + r * wrow, wd, K);
                cr_expect(memcmp(dg + 1 + (r - 1) * (K + 1), wd, K * sizeof(float)) == 0, "oxl_gpu_dequant %s row %u",
                          fmts[f], r);
            }
            free(dg);
            oxl_gpu_free(g, bd);
        }
        for (uint32_t c = 0; c < C; c++) {
            const float *xc = xf + pad + (size_t)c * (K + pad);
            if (t == OXL_TYPE_F32) {
                memcpy(xq, xc, xrow);
            } else {
                k->quant[p](xc, xq, K);
            }
            k->dequant[p](xq, xd, K);
            for (uint32_t r = 0; r < R; r++) {
                float cpu;
                k->vec_dot[t](K, &cpu, w + r * wrow, xq);
                k->dequant[t](w + r * wrow, wd, K);
                double sa = 0.0;
                for (uint32_t i = 0; i < K; i++) {
                    sa += fabs((double)wd[i] * xd[i]);
                }
                const float got = y[2 + c * R + r];
                cr_expect(fabs((double)got - cpu) <= 1e-5 * sa, "%s row %u column %u: gpu %.9g cpu %.9g", fmts[f], r, c,
                          got, cpu);
            }
        }
        free(y);
        free(w);
        free(xq);
        oxl_gpu_free(g, bw);
        oxl_gpu_free(g, bx);
        oxl_gpu_free(g, bs);
        oxl_gpu_free(g, by);
    }
    free(wf);
    free(xf);
    free(wd);
    free(xd);
}
