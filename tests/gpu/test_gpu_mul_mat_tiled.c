/* mul_mat_tiled_<fmt> (templates/gpu/mul_mat_tiled.comp.j2) through oxl_gpu_mul_mat_f32, which takes
 * it from OXL_GPU_TILED_MIN_COLS columns on: for every format with a mul_mat_<fmt>, 8, 33 and 64
 * columns (one tile, a partial second, two whole), 45 rows (a whole tile and a partial one; 44 for
 * f32, f16 and bf16), K of one block and of many, against the CPU's activation quantizer and
 * vec_dot: every output within 1e-5 * sum |w x| (mul_mat_<fmt>'s bound in test_gpu_quant.c); f16
 * and bf16 against the CPU's product with the same bits (its gemm order, which the tiled shader sums
 * in; shapes the CPU sums in vec_dot's order go to the plain shader). The pass must have
 * dispatched the tiled shader, and fewer columns the plain one. Without a Vulkan device the tests
 * skip, unless OXILLAMA_REQUIRE_VULKAN=1 (gpu_test_device). */
#include "gpu.h"
#include "gpu_quant.h"
#include "gpu_test_util.h"
#include "kernels.h"
#include "quantize.h"

#include <stdio.h>
#include <string.h>

static uint64_t tt_state = 0x2545f4914f6cdd1dull;
static float tt_normal(void) {
    /* xorshift64 + Box-Muller */
    double u[2];
    for (int i = 0; i < 2; i++) {
        tt_state ^= tt_state << 13;
        tt_state ^= tt_state >> 7;
        tt_state ^= tt_state << 17;
        u[i] = ((double)(tt_state >> 11) + 0.5) / 9007199254740992.0;
    }
    return (float)(sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]));
}

/* R rows of K weights of format t times C f32 columns (K + pad floats apart, from float pad on),
 * written from float 2 of y; returns how many outputs are off. */
static int tt_check(oxl_gpu *g, oxl_type t, uint32_t K, uint32_t R, uint32_t C) {
    const oxl_kernels *k = oxl_kernels_get();
    const oxl_type_traits *tw = oxl_type_traits_get((uint32_t)t);
    const oxl_type p = tw->vec_dot_type;
    const uint32_t pad = 3, yoff = 2;
    const size_t wrow = oxl_row_size(t, K), xrow = oxl_row_size(p, K);
    oxl_error err = {0};
    float *wf = malloc((size_t)K * R * sizeof(float)), *xf = malloc((size_t)(K + pad) * C * sizeof(float));
    float *wd = malloc((size_t)K * R * sizeof(float)), *xd = malloc(K * sizeof(float));
    uint8_t *w = malloc(wrow * R), *xq = malloc(xrow);
    cr_assert(wf && xf && wd && xd && w && xq);
    for (size_t i = 0; i < (size_t)K * R; i++) {
        wf[i] = tt_normal();
    }
    for (size_t i = 0; i < (size_t)(K + pad) * C; i++) {
        xf[i] = tt_normal();
    }
    if (t == OXL_TYPE_F32) {
        memcpy(w, wf, wrow * R);
    } else {
        cr_assert(oxl_quantize_rows(t, wf, w, R, K, NULL, &err) == 0, "%s", err.msg);
    }
    for (uint32_t r = 0; r < R; r++) {
        k->dequant[t](w + r * wrow, wd + (size_t)r * K, K);
    }
    oxl_gpu_buf *bw = gpu_test_buf(g, w, wrow * R);
    oxl_gpu_buf *bx = gpu_test_buf(g, xf, (size_t)(K + pad) * C * sizeof(float));
    const size_t scratch = oxl_gpu_mul_mat_scratch(t, K, C);
    oxl_gpu_buf *bs = gpu_test_buf(g, NULL, scratch > 0 ? scratch : 4);
    oxl_gpu_buf *by = gpu_test_buf(g, NULL, (size_t)(yoff + R * C) * sizeof(float));
    char tiled[64], plain[64];
    snprintf(tiled, sizeof tiled, "mul_mat_tiled_%s", tw->name);
    snprintf(plain, sizeof plain, "mul_mat_%s", tw->name);
    const uint64_t n_tiled = oxl_gpu_dispatch_count(tiled), n_plain = oxl_gpu_dispatch_count(plain);
    cr_assert(oxl_gpu_begin(g, &err) == 0, "%s", err.msg);
    cr_assert(oxl_gpu_mul_mat_f32(g, t, bw, 0, (uint32_t)wrow, bx, pad, K + pad, bs, by, yoff, R, R, C, K, &err) == 0,
              "%s: %s", tw->name, err.msg);
    cr_assert(oxl_gpu_submit(g, &err) == 0, "%s", err.msg);
    const bool ordered = t == OXL_TYPE_F32 || t == OXL_TYPE_F16 || t == OXL_TYPE_BF16;
    const bool want_tiled =
        C >= OXL_GPU_TILED_MIN_COLS && (!ordered || (K % (t == OXL_TYPE_BF16 ? 32 : 16) == 0 && R % 4 == 0));
    /* the same bits for f16 and bf16, whose products are exact in float; f32's FMAs may be a
     * rounded multiply and add (Vulkan allows it; lavapipe does), so f32 keeps the bound below */
    const bool ggml = t == OXL_TYPE_F16 || t == OXL_TYPE_BF16;
    cr_expect_eq(oxl_gpu_dispatch_count(tiled) - n_tiled, want_tiled ? 1u : 0u, "%s, %u columns: %s dispatches",
                 tw->name, C, tiled);
    cr_expect_eq(oxl_gpu_dispatch_count(plain) - n_plain, want_tiled ? 0u : 1u, "%s, %u columns: %s dispatches",
                 tw->name, C, plain);
    float *y = gpu_test_read(g, by, (size_t)(yoff + R * C) * sizeof(float));
    int bad = 0;
    if (ggml) {
        uint8_t *xall = malloc(xrow * C);
        float *ref = malloc(sizeof(float) * R * C);
        cr_assert(xall && ref);
        for (uint32_t c = 0; c < C; c++) {
            const float *xc = xf + pad + (size_t)c * (K + pad);
            if (t == OXL_TYPE_F32) {
                memcpy(xall + c * xrow, xc, xrow);
            } else {
                k->quant[p](xc, xall + c * xrow, K);
            }
        }
        const bool gemm = gpu_test_cpu_product(t, K, R, C, w, wrow, xall, xrow, ref);
        char what[96];
        snprintf(what, sizeof what, "%s K %u, %u x %u (%s order)", want_tiled ? tiled : plain, K, R, C,
                 gemm ? "gemm" : "vec_dot");
        gpu_test_same_bits(y + yoff, ref, (size_t)R * C, what);
        free(xall), free(ref);
    }
    for (uint32_t c = 0; !ggml && c < C; c++) {
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
            double sa = 0.0;
            for (uint32_t i = 0; i < K; i++) {
                sa += fabs((double)wd[(size_t)r * K + i] * xd[i]);
            }
            const float got = y[yoff + c * R + r];
            if (!(fabs((double)got - cpu) <= 1e-5 * sa) && bad++ < 3) {
                cr_log_error("%s K %u row %u column %u of %u: gpu %.9g cpu %.9g, sum |w x| %.6g", tiled, K, r, c, C,
                             got, cpu, sa);
            }
        }
    }
    cr_expect(bad == 0, "%s: %d of %u outputs off (K %u, %u rows, %u columns)", tiled, bad, R * C, K, R, C);
    free(y);
    free(wf), free(xf), free(wd), free(xd), free(w), free(xq);
    oxl_gpu_free(g, bw);
    oxl_gpu_free(g, bx);
    oxl_gpu_free(g, bs);
    oxl_gpu_free(g, by);
    return bad;
}

static void tt_format(const char *fmt) {
    oxl_gpu *g = gpu_test_device();
    const oxl_type t = (oxl_type)oxl_type_from_name(fmt);
    const oxl_type_traits *tw = oxl_type_traits_get((uint32_t)t);
    cr_assert(tw != NULL && oxl_gpu_mul_mat_supported(t), "%s", fmt);
    char name[64];
    snprintf(name, sizeof name, "mul_mat_tiled_%s", fmt);
    cr_assert(oxl_gpu_shader(name) != NULL, "%s is not in the shader list", name);
    const int64_t pblck = oxl_type_traits_get((uint32_t)tw->vec_dot_type)->blck_size;
    const uint32_t blk = (uint32_t)(tw->blck_size > pblck ? tw->blck_size : pblck);
    /* f32/f16/bf16 step 32 elements along K: 48 ends in a partial step (and is no multiple of
     * bf16's 32: the plain shader), 992 is 31 whole steps; 6 and 45 rows are shapes the CPU sums in
     * vec_dot's order (the plain shader) */
    const bool ordered = blk == 1;
    const uint32_t ks[2] = {ordered ? 48 : blk, ordered ? 992 : (blk < 256 ? 37 * blk : 9 * blk)};
    const uint32_t cols[4] = {8, 33, 64, OXL_GPU_TILED_MIN_COLS - 1};
    for (int ki = 0; ki < 2; ki++) {
        for (int ci = 0; ci < 4; ci++) {
            tt_check(g, t, ks[ki], ordered ? 44 : 45, cols[ci]);
        }
    }
    if (ordered) {
        tt_check(g, t, 6, 44, 33);
        tt_check(g, t, 992, 45, 33);
    }
}

#define TT_FORMAT(f)                                                                                                   \
    Test(gpu_mul_mat_tiled, f, .timeout = 300) { tt_format(#f); }
TT_FORMAT(f32)
TT_FORMAT(f16)
TT_FORMAT(bf16)
TT_FORMAT(q8_0)
TT_FORMAT(q4_0)
TT_FORMAT(q4_1)
TT_FORMAT(q5_0)
TT_FORMAT(q5_1)
TT_FORMAT(q2_K)
TT_FORMAT(q3_K)
TT_FORMAT(q4_K)
TT_FORMAT(q5_K)
TT_FORMAT(q6_K)
TT_FORMAT(iq4_nl)
TT_FORMAT(iq4_xs)
TT_FORMAT(mxfp4)
TT_FORMAT(nvfp4)
TT_FORMAT(q1_0)

/* Every mul_mat_<fmt> of the list has its mul_mat_tiled_<fmt>, with the spec's 32 x 32 tile. */
Test(gpu_mul_mat_tiled, every_format_listed) {
    int n = 0;
    for (uint32_t id = 0; id < 64; id++) {
        const oxl_type_traits *tr = oxl_type_traits_get(id);
        char plain[64], tiled[64];
        if (tr == NULL || tr->name == NULL) {
            continue;
        }
        snprintf(plain, sizeof plain, "mul_mat_%s", tr->name);
        snprintf(tiled, sizeof tiled, "mul_mat_tiled_%s", tr->name);
        if (oxl_gpu_shader(plain) == NULL) {
            continue;
        }
        const oxl_gpu_shader_info *s = oxl_gpu_shader(tiled);
        cr_assert(s != NULL, "%s has no %s", plain, tiled);
        cr_expect(s->rows == 32 && s->cols == 32 && s->local == 256, "%s: %u x %u over %u", tiled, s->rows, s->cols,
                  s->local);
        n++;
    }
    cr_expect_eq(n, 18, "%d formats with mul_mat", n);
}
