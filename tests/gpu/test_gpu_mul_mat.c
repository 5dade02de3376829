/* mul_mat_f32 / _f16 / _bf16 and quantize_f16 / _bf16 against the CPU kernels: the activations'
 * bytes equal the CPU quantizer's; every f16 and bf16 output has the bits of the CPU's product (its
 * gemm or vec_dot order, as src/kernels/matmul.c chooses), so shapes cover both orders and the
 * leftovers past the last 64 elements. f32's FMAs may be a rounded multiply and add on a device
 * (Vulkan allows it; lavapipe does): f32 outputs within 1e-5 relative of the CPU's, the same order. */
#include "gpu_test_util.h"
#include "kernels.h"
#include "oxl_fp16.h"

#include <stdio.h>
#include <string.h>

/* Y = W . X on the device from f32 W (converted on the host to fmt as a GGUF stores it) and f32 X
 * (converted on the device by quantize_<fmt>), against the CPU's quant and product; `gemm`: whether
 * the shape is one the CPU sums in tinyBLAS's order. */
static void check_mul_mat(oxl_type t, const char *fmt, int K, int nrows, int ncols, float lo, float hi, bool gemm) {
    oxl_gpu *g = gpu_test_device();
    const oxl_kernels *kern = oxl_kernels_get();
    const size_t es = t == OXL_TYPE_F32 ? 4 : 2;
    float *wf = malloc(sizeof(float) * (size_t)K * nrows);
    float *xf = malloc(sizeof(float) * (size_t)K * ncols);
    gpu_test_fill(wf, (size_t)K * nrows, lo, hi, 1);
    gpu_test_fill(xf, (size_t)K * ncols, lo, hi, 2);
    uint8_t *w = malloc(es * (size_t)K * nrows);
    uint8_t *x = malloc(es * (size_t)K * ncols + 4);
    if (t == OXL_TYPE_F32) {
        memcpy(w, wf, 4 * (size_t)K * nrows);
        memcpy(x, xf, 4 * (size_t)K * ncols);
    } else {
        for (int r = 0; r < nrows; r++) {
            kern->quant[t](wf + (size_t)r * K, w + es * (size_t)r * K, K);
        }
        for (int c = 0; c < ncols; c++) {
            kern->quant[t](xf + (size_t)c * K, x + es * (size_t)c * K, K);
        }
    }
    float *ref = malloc(sizeof(float) * (size_t)nrows * ncols);
    cr_assert_eq(gpu_test_cpu_product(t, K, nrows, ncols, w, es * (size_t)K, x, es * (size_t)K, ref), gemm,
                 "%s K %d, %d x %d: the CPU's order is not the one the test means", fmt, K, nrows, ncols);
    oxl_error err = {0};
    oxl_gpu_buf *bw = gpu_test_buf(g, w, es * (size_t)K * nrows);
    oxl_gpu_buf *bxf = gpu_test_buf(g, xf, 4 * (size_t)K * ncols);
    oxl_gpu_buf *bx = bxf;
    if (t != OXL_TYPE_F32) {
        char q[32];
        snprintf(q, sizeof q, "quantize_%s", fmt);
        const size_t n = (size_t)K * ncols;
        bx = gpu_test_buf(g, NULL, es * n);
        const uint32_t pc[3] = {(uint32_t)n, 0, 0};
        uint32_t gx, gz;
        oxl_gpu_groups_1d((n + 1) / 2, oxl_gpu_shader(q)->local, &gx, &gz);
        oxl_gpu_bind b[2] = {{bxf, 0, 0}, {bx, 0, 0}};
        cr_assert_eq(oxl_gpu_dispatch(g, q, b, 2, pc, sizeof pc, gx, 1, gz, &err), 0, "%s", err.msg);
        uint8_t *xd = gpu_test_read(g, bx, es * n);
        cr_assert_eq(memcmp(xd, x, es * n), 0, "%s activations differ from the CPU quantizer's bytes", q);
        free(xd);
    }
    oxl_gpu_buf *by = gpu_test_buf(g, NULL, sizeof(float) * (size_t)nrows * ncols);
    char name[32];
    snprintf(name, sizeof name, "mul_mat_%s", fmt);
    oxl_gpu_mm_push pc = {(uint32_t)nrows, (uint32_t)ncols, (uint32_t)K, 0, (uint32_t)(es * K), 0, (uint32_t)K, 0,
                          (uint32_t)nrows};
    cr_assert_eq(oxl_gpu_begin(g, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_gpu_mul_mat(g, name, bw, bx, by, &pc, &err), 0, "%s", err.msg);
    float *y = malloc(sizeof(float) * (size_t)nrows * ncols);
    cr_assert_eq(oxl_gpu_rec_read(g, by, 0, y, sizeof(float) * (size_t)nrows * ncols, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_gpu_submit(g, &err), 0, "%s", err.msg);
    char what[96];
    snprintf(what, sizeof what, "%s K %d, %d rows x %d columns (%s order)", name, K, nrows, ncols,
             gemm ? "gemm" : "vec_dot");
    if (t == OXL_TYPE_F32) {
        float floor = 0;
        for (size_t i = 0; i < (size_t)nrows * ncols; i++) {
            floor = fabsf(ref[i]) > floor ? fabsf(ref[i]) : floor;
        }
        /* positive inputs: relative to each output; signed ones: relative to the largest output */
        gpu_test_close(y, ref, (size_t)nrows * ncols, 1e-5f, lo >= 0 ? 0.0f : floor, what);
    } else {
        gpu_test_same_bits(y, ref, (size_t)nrows * ncols, what);
    }
    oxl_gpu_free(g, bw);
    oxl_gpu_free(g, by);
    if (bx != bxf) {
        oxl_gpu_free(g, bx);
    }
    oxl_gpu_free(g, bxf);
    free(wf), free(xf), free(w), free(x), free(ref), free(y);
}

/* Shapes: the gemm order (K a multiple of the step, rows of 4, >= 2 columns); vec_dot with K a
 * multiple of 64, with leftovers (as a model's n_ff = 172), odd K (rows start mid-word) and one column. */
#define ORDERS(t, f)                                                                                                   \
    check_mul_mat(t, f, 256, 32, 7, -1.0f, 1.0f, true);                                                                \
    check_mul_mat(t, f, 256, 33, 7, 0.1f, 1.0f, false);                                                                \
    check_mul_mat(t, f, 172, 64, 5, -1.0f, 1.0f, false);                                                               \
    check_mul_mat(t, f, 96, 8, 3, -1.0f, 1.0f, true);                                                                  \
    check_mul_mat(t, f, 129, 9, 3, -1.0f, 1.0f, false);                                                                \
    check_mul_mat(t, f, 67, 5, 1, -1.0f, 1.0f, false);                                                                 \
    check_mul_mat(t, f, 4096, 4, 1, -1.0f, 1.0f, false)

Test(gpu_mul_mat, f32) { ORDERS(OXL_TYPE_F32, "f32"); }
Test(gpu_mul_mat, f16) { ORDERS(OXL_TYPE_F16, "f16"); }
Test(gpu_mul_mat, bf16) { ORDERS(OXL_TYPE_BF16, "bf16"); }

/* More than 65535 row groups: the host splits them over z. */
Test(gpu_mul_mat, rows_split_over_z) { check_mul_mat(OXL_TYPE_F32, "f32", 4, 70001, 1, 0.1f, 1.0f, false); }

/* The rounding of special values: subnormal halves, ties, overflow to infinity, NaN. */
Test(gpu_mul_mat, quantize_rounding) {
    oxl_gpu *g = gpu_test_device();
    const oxl_kernels *kern = oxl_kernels_get();
    const float v[] = {0.0f,     -0.0f,     1e-8f, 3e-8f,    6e-8f,    1e-5f, -2.5e-6f,       65504.0f,
                       65519.0f, 65520.0f,  1e30f, -1e30f,   1.0f / 3, 0.1f,  1.00048828125f, 2049.0f,
                       INFINITY, -INFINITY, NAN,   1.5e-38f, 3.4e38f,  0.5f,  -7.25f};
    const size_t n = sizeof v / sizeof v[0];
    const oxl_type types[2] = {OXL_TYPE_F16, OXL_TYPE_BF16};
    const char *names[2] = {"quantize_f16", "quantize_bf16"};
    for (int k = 0; k < 2; k++) {
        uint16_t ref[32];
        kern->quant[types[k]](v, ref, (int64_t)n);
        oxl_gpu_buf *bx = gpu_test_buf(g, v, sizeof v);
        oxl_gpu_buf *by = gpu_test_buf(g, NULL, 2 * n + 2);
        const uint32_t pc[3] = {(uint32_t)n, 0, 0};
        oxl_error err = {0};
        oxl_gpu_bind b[2] = {{bx, 0, 0}, {by, 0, 0}};
        cr_assert_eq(oxl_gpu_dispatch(g, names[k], b, 2, pc, sizeof pc, 1, 1, 1, &err), 0, "%s", err.msg);
        uint16_t *y = gpu_test_read(g, by, 2 * n);
        for (size_t i = 0; i < n; i++) {
            cr_expect_eq(y[i], ref[i], "%s(%g): device 0x%04x, CPU 0x%04x", names[k], (double)v[i], y[i], ref[i]);
        }
        free(y);
        oxl_gpu_free(g, bx);
        oxl_gpu_free(g, by);
    }
}

/* Named errors: a shader not in the list, a wrong push-constant size. */
Test(gpu_mul_mat, named_errors) {
    oxl_gpu *g = gpu_test_device();
    oxl_gpu_buf *b = gpu_test_buf(g, NULL, 64);
    oxl_gpu_bind bind[3] = {{b, 0, 0}, {b, 0, 0}, {b, 0, 0}};
    oxl_error err = {0};
    const uint32_t pc[9] = {0};
    cr_assert_eq(oxl_gpu_dispatch(g, "mul_mat_nope", bind, 3, pc, sizeof pc, 1, 1, 1, &err), -1);
    cr_assert(strstr(err.msg, "'mul_mat_nope' is not in the shader list"), "%s", err.msg);
    cr_assert_eq(oxl_gpu_dispatch(g, "mul_mat_f32", bind, 3, pc, 8, 1, 1, 1, &err), -1);
    cr_assert(strstr(err.msg, "takes 36 bytes of push constants, given 8"), "%s", err.msg);
    oxl_gpu_free(g, b);
}
