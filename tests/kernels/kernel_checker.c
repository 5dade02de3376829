/* Kernel checks against the quant goldens; see kernel_checker.h. */
#include "kernel_checker.h"

#include "golden_quant.h"
#include "oxl_fp16.h"
#include "oxl_blocks.h"
#include "oxl_kernel_decls.h"
#include "matmul.h"
#include "quantize.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The golden file whose q (dequant, vec_dot) or yq (quant) is in `type`. */
typedef struct oxl_checker_golden {
    oxl_gguf *g;
    oxl_quant_golden qg;
} oxl_checker_golden;

static void oxl_checker_read(oxl_checker_golden *cg, const char *fmt, char *path, size_t path_size) {
    snprintf(path, path_size, "%s/golden/quant/%s.gguf", OXL_SOURCE_DIR, fmt);
    oxl_error err = {{0}};
    cg->g = oxl_gguf_open(path, &err);
    cr_assert(cg->g != NULL, "%s", err.msg);
    cr_assert(oxl_quant_golden_read(cg->g, &cg->qg, &err) == 0, "%s", err.msg);
}

static void oxl_checker_open(oxl_checker_golden *cg, oxl_type type, oxl_isa isa) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    /* f32 has no golden file of its own: it borrows the f32 tensors x and y of f16's */
    const char *fmt = type == OXL_TYPE_F32 ? "f16" : oxl_type_traits_get(type)->name;
    char path[4096];
    oxl_checker_read(cg, fmt, path, sizeof path);
    if (cg->qg.y == NULL) {
        /* an activation-only format (q8_1, q8_K): its golden holds only the reference
         * quantization, so its cells are checked on the golden of the first weight format (by
         * type id) that pairs with it and has one */
        oxl_gguf_close(cg->g);
        cg->g = NULL;
        for (uint32_t id = 0; id < OXL_TYPE_COUNT && cg->g == NULL; id++) {
            const oxl_type_traits *t = oxl_type_traits_get(id);
            if (t == NULL || id == (uint32_t)type || t->vec_dot_type != type) {
                continue;
            }
            snprintf(path, sizeof path, "%s/golden/quant/%s.gguf", OXL_SOURCE_DIR, t->name);
            FILE *f = fopen(path, "rb");
            if (f != NULL) {
                fclose(f);
                oxl_checker_read(cg, t->name, path, sizeof path);
            }
        }
        cr_assert(cg->g != NULL, "no golden/quant file of a format paired with %s", fmt);
    }
    if (type == OXL_TYPE_F32) {
        /* as if quantized to f32: q = dq = x, yq = y; the dot reference is computed in double */
        cg->qg.type = cg->qg.yq_type = OXL_TYPE_F32;
        cg->qg.q = cg->qg.dq = cg->qg.x;
        cg->qg.yq = cg->qg.y;
        cg->qg.dot = cg->qg.dot_f64 = NULL;
    }
    cr_assert(cg->qg.type == type || cg->qg.yq_type == type, "%s holds no %s tensors", path,
              oxl_type_traits_get(type)->name);
}

static void oxl_checker_finish(oxl_checker_golden *cg, const oxl_golden_report *r, const char *name) {
    oxl_gguf_close(cg->g);
    cr_assert(r->n_pass > 0 && r->n_fail == 0, "%s: %d checks failed", name, r->n_fail);
}

void oxl_check_dequant(oxl_type type, oxl_isa isa, oxl_dequant_fn fn, const char *name) {
    oxl_checker_golden cg;
    oxl_checker_open(&cg, type, isa);
    oxl_golden_report r = {stderr, 0, 0};
    if (cg.qg.type != type) {
        oxl_golden_check_dequant_activation(&cg.qg, fn, name, &r);
    } else {
        oxl_golden_check_dequant(&cg.qg, fn, name, &r);
    }
    oxl_checker_finish(&cg, &r, name);
}

void oxl_check_quant(oxl_type type, oxl_isa isa, oxl_quant_fn fn, const char *name) {
    oxl_checker_golden cg;
    oxl_checker_open(&cg, type, isa);
    oxl_golden_report r = {stderr, 0, 0};
    oxl_golden_check_quant(&cg.qg, fn, name, &r);
    oxl_checker_finish(&cg, &r, name);
}

/* f32: no golden dot exists, so each row's dot is compared with its double-precision sum */
static void oxl_check_vec_dot_f32(const oxl_quant_golden *qg, oxl_vec_dot_fn fn, const char *name,
                                  oxl_golden_report *r) {
    double worst = 0.0;
    for (int64_t row = 0; row < qg->nrows; row++) {
        const float *x = qg->x + row * qg->ne0, *y = qg->y + row * qg->ne0;
        double want = 0.0, abs_terms = 0.0;
        for (int64_t i = 0; i < qg->ne0; i++) {
            want += (double)x[i] * y[i];
            abs_terms += fabs((double)x[i] * y[i]);
        }
        float got = 0.0f;
        fn(qg->ne0, &got, x, y);
        const double rel = abs_terms > 0.0 ? fabs(got - want) / abs_terms : fabs(got - want);
        worst = rel > worst ? rel : worst;
    }
    oxl_golden_line(r, worst <= 1e-5, "%s  vec_dot vs double sum: %lld rows, max |Δ|/Σ|terms| = %.3g (tolerance 1e-5)",
                    name, (long long)qg->nrows, worst);
}

/* ---- ggml's AVX-512 summation order, written out lane by lane ----------------------------------
 * ggml_vec_dot_f32/_f16 (ggml-cpu/vec.cpp with simd-mappings.h, AVX-512 without FP16: STEP 64,
 * EPR 16) keep 4 x 16 lane sums over the first n & ~63 elements, fold them 0+2, 1+3, 0+1 and reduce
 * the 16 lanes with GCC's _mm512_reduce_add_ps tree; llamafile's tinyBLAS<16, __m512> keeps one 16
 * lane sum per output over all k. Every product in the lane sums is added with one rounding (FMA). */

static float oxl_ref_tree16(const float lane[16]) {
    float half[8], quarter[4];
    for (int i = 0; i < 8; i++) {
        half[i] = lane[i + 8] + lane[i];
    }
    for (int i = 0; i < 4; i++) {
        quarter[i] = half[i + 4] + half[i];
    }
    return (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]);
}

/* the 64-lane part of ggml_vec_dot over x[0..np), np = n & ~63 */
static float oxl_ref_dot64(int64_t np, const float *x, const float *y) {
    float lanes[4][16] = {{0}};
    for (int64_t i = 0; i < np; i++) {
        const int64_t chunk = (i % 64) / 16, lane = i % 16;
        lanes[chunk][lane] = fmaf(x[i], y[i], lanes[chunk][lane]);
    }
    float folded[16];
    for (int l = 0; l < 16; l++) {
        const float a = lanes[0][l] + lanes[2][l];
        const float b = lanes[1][l] + lanes[3][l];
        folded[l] = a + b;
    }
    return oxl_ref_tree16(folded);
}

float oxl_ref_dot_f32(int64_t n, const float *x, const float *y) {
    const int64_t np = n & ~(int64_t)63;
    float sum = oxl_ref_dot64(np, x, y);
    /* leftovers: ggml's float `sumf += x[i]*y[i]` as the reference build compiled it: the first
     * (n - np) & ~7 as a rounded product then a rounded add, the last (n - np) % 8 as FMAs */
    const int64_t nv = np + ((n - np) & ~(int64_t)7);
    for (int64_t i = np; i < nv; i++) {
        const float p = x[i] * y[i];
        sum += p;
    }
    for (int64_t i = nv; i < n; i++) {
        sum = fmaf(x[i], y[i], sum);
    }
    return sum;
}

float oxl_ref_dot_f16(int64_t n, const uint16_t *x, const uint16_t *y) {
    float *xf = malloc((size_t)(n + 1) * sizeof(float)), *yf = malloc((size_t)(n + 1) * sizeof(float));
    cr_assert(xf != NULL && yf != NULL);
    for (int64_t i = 0; i < n; i++) {
        xf[i] = oxl_fp16_to_fp32(x[i]);
        yf[i] = oxl_fp16_to_fp32(y[i]);
    }
    const int64_t np = n & ~(int64_t)63;
    /* ggml_float (double) sum; leftover products rounded to float, then added in double */
    double sum = oxl_ref_dot64(np, xf, yf);
    for (int64_t i = np; i < n; i++) {
        const float p = xf[i] * yf[i];
        sum += (double)p;
    }
    free(xf);
    free(yf);
    return (float)sum;
}

/* ---- AVX512-BF16's vdpbf16ps (Intel SDM pseudo-code), written out element by element ---------
 * Lane l of an accumulator takes elements 2l + 1 then 2l of each 32-element chunk: the product of
 * the two bf16 values (exact in fp32), added with rounding to nearest even; denormal inputs read
 * as zero, denormal results become zero of the same sign. */
static float oxl_ref_bf16_daz(uint16_t h) {
    if ((h & 0x7f80) == 0) {
        return (h & 0x8000) ? -0.0f : 0.0f;
    }
    return oxl_bf16_to_fp32(h);
}

static float oxl_ref_ftz(float f) {
    if (f != 0.0f && fabsf(f) < FLT_MIN) {
        return signbit(f) ? -0.0f : 0.0f;
    }
    return f;
}

/* lanes[l] after the vdpbf16ps steps over x[0..k), y[0..k) (k % 32 == 0) */
static void oxl_ref_dpbf16(int64_t k, const uint16_t *x, const uint16_t *y, float lanes[16]) {
    for (int l = 0; l < 16; l++) {
        lanes[l] = 0.0f;
    }
    for (int64_t c = 0; c < k; c += 32) {
        for (int l = 0; l < 16; l++) {
            for (int e = 1; e >= 0; e--) {
                const int64_t i = c + 2 * l + e;
                const float p = oxl_ref_bf16_daz(x[i]) * oxl_ref_bf16_daz(y[i]);
                lanes[l] = oxl_ref_ftz(lanes[l] + p);
            }
        }
    }
}

float oxl_ref_dot_bf16(int64_t n, const uint16_t *x, const uint16_t *y) {
    /* ggml_vec_dot_bf16 with __AVX512BF16__: elements 64j..64j+31 into c1, 64j+32..64j+63 into c2 */
    const int64_t np = n & ~(int64_t)63;
    float c1[16] = {0}, c2[16] = {0};
    for (int64_t j = 0; j < np; j += 64) {
        for (int l = 0; l < 16; l++) {
            float a = c1[l];
            for (int e = 1; e >= 0; e--) {
                const int64_t i = j + 2 * l + e;
                a = oxl_ref_ftz(a + oxl_ref_bf16_daz(x[i]) * oxl_ref_bf16_daz(y[i]));
            }
            c1[l] = a;
            float b = c2[l];
            for (int e = 1; e >= 0; e--) {
                const int64_t i = j + 32 + 2 * l + e;
                b = oxl_ref_ftz(b + oxl_ref_bf16_daz(x[i]) * oxl_ref_bf16_daz(y[i]));
            }
            c2[l] = b;
        }
    }
    double sum = 0.0;
    sum += (double)oxl_ref_tree16(c1);
    sum += (double)oxl_ref_tree16(c2);
    for (int64_t i = np; i < n; i++) {
        const float p = oxl_bf16_to_fp32(x[i]) * oxl_bf16_to_fp32(y[i]);
        sum += (double)p;
    }
    return (float)sum;
}

float oxl_ref_gemm_bf16_one(int64_t k, const uint16_t *a, const uint16_t *b) {
    float lanes[16];
    oxl_ref_dpbf16(k, a, b, lanes);
    return oxl_ref_tree16(lanes);
}

float oxl_ref_gemm_one(int64_t k, const float *a, const float *b) {
    float lane[16] = {0};
    for (int64_t l = 0; l < k; l++) {
        lane[l % 16] = fmaf(a[l], b[l], lane[l % 16]);
    }
    return oxl_ref_tree16(lane);
}

/* bit-identical, or both NaN (NaN payloads are not part of the order) */
static bool oxl_same_float(float a, float b) {
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    return ua == ub || (isnan(a) && isnan(b));
}

/* Lengths that reach every part of the order: no 64-block, leftovers only, whole blocks, both, the
 * model shapes (8 = head dim, 64 = n_embd, 172 = n_ff of stories260K) and the full 512-row. */
static const int64_t oxl_order_lengths[] = {0,  1,   3,   7,   8,   15,  16,  17,  44,  63, 64,
                                            65, 100, 127, 128, 172, 200, 256, 300, 511, 512};

/* fn against the reference on every golden row pair and every length (f32: x, y; f16: q, yq) */
static void oxl_check_dot_order(const oxl_quant_golden *qg, oxl_type type, oxl_vec_dot_fn fn, const char *name,
                                oxl_golden_report *r) {
    const size_t es = oxl_type_traits_get(type)->type_size;
    const uint8_t *xs = type == OXL_TYPE_F32 ? (const void *)qg->x : qg->q;
    const uint8_t *ys = type == OXL_TYPE_F32 ? (const void *)qg->y : qg->yq;
    int checks = 0, bad = 0;
    for (int64_t row = 0; row < qg->nrows; row++) {
        for (size_t li = 0; li < sizeof oxl_order_lengths / sizeof oxl_order_lengths[0]; li++) {
            const int64_t n = oxl_order_lengths[li];
            if (n > qg->ne0) {
                continue;
            }
            const void *x = xs + (size_t)(row * qg->ne0) * es, *y = ys + (size_t)(row * qg->ne0) * es;
            const float want = type == OXL_TYPE_F32   ? oxl_ref_dot_f32(n, x, y)
                               : type == OXL_TYPE_F16 ? oxl_ref_dot_f16(n, x, y)
                                                      : oxl_ref_dot_bf16(n, x, y);
            float got = -1.0f;
            fn(n, &got, x, y);
            checks++;
            if (!oxl_same_float(got, want) && bad++ < 5) {
                fprintf(stderr, "%s  row %lld, n %lld: %a, the ggml order gives %a\n", name, (long long)row,
                        (long long)n, got, want);
            }
        }
    }
    oxl_golden_line(r, bad == 0, "%s  vec_dot vs ggml's AVX-512 order: %d/%d bit-identical", name, checks - bad,
                    checks);
}

/* f16, bf16: at n = 512 the golden dot is ggml_vec_dot_f16 of the AVX-512 build (ggml_vec_dot_bf16
 * of its AVX512-BF16 build) with no leftovers, so the kernel must reproduce it to the bit */
static void oxl_check_dot_golden_bits(const oxl_quant_golden *qg, oxl_vec_dot_fn fn, const char *name,
                                      oxl_golden_report *r) {
    const size_t row = oxl_row_size(qg->type, qg->ne0), yrow = oxl_row_size(qg->yq_type, qg->ne0);
    int bad = 0;
    for (int64_t i = 0; i < qg->nrows; i++) {
        float got = -1.0f;
        fn(qg->ne0, &got, (const uint8_t *)qg->q + i * row, (const uint8_t *)qg->yq + i * yrow);
        if (!oxl_same_float(got, qg->dot[i]) && bad++ < 5) {
            fprintf(stderr, "%s  row %lld: %a, llama.cpp's dot %a\n", name, (long long)i, got, qg->dot[i]);
        }
    }
    oxl_golden_line(r, bad == 0, "%s  vec_dot vs dot bit for bit: %lld/%lld rows", name, (long long)(qg->nrows - bad),
                    (long long)qg->nrows);
}

void oxl_check_vec_dot(oxl_type type, oxl_isa isa, oxl_vec_dot_fn fn, const char *name) {
    oxl_checker_golden cg;
    oxl_checker_open(&cg, type, isa);
    oxl_golden_report r = {stderr, 0, 0};
    if (type == OXL_TYPE_F32) {
        oxl_check_vec_dot_f32(&cg.qg, fn, name, &r);
    } else {
        oxl_golden_check_vec_dot(&cg.qg, fn, name, &r);
    }
    if (type == OXL_TYPE_F32 || type == OXL_TYPE_F16 || type == OXL_TYPE_BF16) {
        oxl_check_dot_order(&cg.qg, type, fn, name, &r);
    }
    /* q4_0/q8_0 on x86: ggml's own dot (one accumulator of 8 lanes, hsum_float_8), which the
     * golden's llama.cpp computed; the K.q products of a q8_0/q4_0 KV cache depend on it */
    const bool x86_q = (type == OXL_TYPE_Q4_0 || type == OXL_TYPE_Q8_0) &&
                       (isa == OXL_ISA_AVX2 || isa == OXL_ISA_AVX512BW || isa == OXL_ISA_AVX512VNNI);
    if (type == OXL_TYPE_F16 || type == OXL_TYPE_BF16 || x86_q) {
        oxl_check_dot_golden_bits(&cg.qg, fn, name, &r);
    }
    oxl_checker_finish(&cg, &r, name);
}

/* gemm against the reference for every output, on blocks whose m and n are and are not multiples
 * of any register tile, with ldc > m; a: the golden's weight rows, b: its activation rows. */
static void oxl_check_gemm_order(const oxl_quant_golden *qg, oxl_type type, oxl_gemm_fn fn, const char *name,
                                 oxl_golden_report *r) {
    static const int64_t ks[] = {16, 32, 64, 96, 176, 224, 512};
    static const int64_t shapes[][2] = {{16, 16}, {16, 2}, {5, 7}, {4, 3}, {1, 1}, {12, 16}};
    const size_t es = oxl_type_traits_get(type)->type_size;
    const uint8_t *a = type == OXL_TYPE_F32 ? (const void *)qg->x : qg->q;
    const uint8_t *b = type == OXL_TYPE_F32 ? (const void *)qg->y : qg->yq;
    const size_t ld = (size_t)qg->ne0 * es;
    float *af = malloc((size_t)(qg->nrows * qg->ne0) * sizeof(float));
    float *bf = malloc((size_t)(qg->nrows * qg->ne0) * sizeof(float));
    const int64_t ldc = qg->nrows + 3;
    float *c = malloc((size_t)(ldc * qg->nrows) * sizeof(float));
    cr_assert(af != NULL && bf != NULL && c != NULL);
    /* f32, f16 as floats for the f32 reference; the bf16 reference reads the bf16 bits */
    for (int64_t i = 0; i < qg->nrows * qg->ne0 && type != OXL_TYPE_BF16; i++) {
        af[i] = type == OXL_TYPE_F32 ? qg->x[i] : oxl_fp16_to_fp32(((const uint16_t *)qg->q)[i]);
        bf[i] = type == OXL_TYPE_F32 ? qg->y[i] : oxl_fp16_to_fp32(((const uint16_t *)qg->yq)[i]);
    }
    int checks = 0, bad = 0;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int64_t k = ks[ki], m = shapes[si][0], n = shapes[si][1];
            if (k > qg->ne0 || m > qg->nrows || n > qg->nrows || k % oxl_gemm_k_step(type) != 0) {
                continue;
            }
            /* rows start at row 1 of a and column 2 of b so tiles see unaligned data */
            const int64_t a0 = qg->nrows - m < 1 ? 0 : 1, b0 = qg->nrows - n < 2 ? 0 : 2;
            for (int64_t i = 0; i < ldc * qg->nrows; i++) {
                c[i] = -7.0f;
            }
            fn(k, m, n, a + (size_t)a0 * ld, ld, b + (size_t)b0 * ld, ld, c, ldc);
            for (int64_t j = 0; j < n; j++) {
                for (int64_t i = 0; i < ldc; i++) {
                    const float got = c[j * ldc + i];
                    float want = -7.0f; /* outside the block: untouched */
                    if (i < m && type == OXL_TYPE_BF16) {
                        want = oxl_ref_gemm_bf16_one(k, (const uint16_t *)qg->q + (a0 + i) * qg->ne0,
                                                     (const uint16_t *)qg->yq + (b0 + j) * qg->ne0);
                    } else if (i < m) {
                        want = oxl_ref_gemm_one(k, af + (a0 + i) * qg->ne0, bf + (b0 + j) * qg->ne0);
                    }
                    checks++;
                    if (!oxl_same_float(got, want) && bad++ < 5) {
                        fprintf(stderr,
                                "%s  k %lld, m %lld, n %lld, out (%lld, %lld): %a, the tinyBLAS order gives %a\n", name,
                                (long long)k, (long long)m, (long long)n, (long long)i, (long long)j, got, want);
                    }
                }
            }
        }
    }
    free(af);
    free(bf);
    free(c);
    oxl_golden_line(r, bad == 0, "%s  gemm vs tinyBLAS's AVX-512 order: %d/%d bit-identical", name, checks - bad,
                    checks);
}

void oxl_check_gemm(oxl_type type, oxl_isa isa, oxl_gemm_fn fn, const char *name) {
    oxl_checker_golden cg;
    oxl_checker_open(&cg, type, isa);
    oxl_golden_report r = {stderr, 0, 0};
    oxl_check_gemm_order(&cg.qg, type, fn, name, &r);
    if (type != OXL_TYPE_F32) {
        oxl_golden_check_gemm(&cg.qg, fn, name, &r);
    }
    oxl_checker_finish(&cg, &r, name);
}

/* ---- ggml_vec_swiglu_f32 (ggml-cpu/vec.cpp, AVX-512 build) --------------------------------------
 * ggml_v_expf(t): n = (t * log2(e) + 1.5 * 2^23) - 1.5 * 2^23 (round to integer), b = t - n * ln2
 * with ln2 in two parts, j = a degree-5 polynomial in b written as FMAs, e = vscalefps(j, n) =
 * j * 2^n rounded once; |n| > 192 gives 0 (n <= 0) or inf. silu(x) = x / (1 + ggml_v_expf(0 - x)). */
float oxl_ref_vexpf(float t) {
    const float n = fmaf(t, 0x1.715476p+0f, 0x1.8p23f) - 0x1.8p23f;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, t));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    if (isnan(n)) {
        return n;
    }
    if (fabsf(n) > 192.0f) {
        return n <= 0.0f ? 0.0f : INFINITY;
    }
    return ldexpf(j, (int)n);
}

float oxl_ref_vsilu(float x) { return x / (1.0f + oxl_ref_vexpf(0.0f - x)); }

static void oxl_ref_swiglu(int64_t n, float *y, const float *x, const float *g) {
    const int64_t groups_end = n & ~(int64_t)15;
    for (int64_t i = 0; i < n; i++) {
        y[i] = i < groups_end ? oxl_ref_vsilu(x[i]) * g[i] : x[i] / (1.0f + expf(-x[i])) * g[i];
    }
}

void oxl_check_swiglu(oxl_type type, oxl_isa isa, oxl_swiglu_fn fn, const char *name) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    cr_assert_eq(type, OXL_TYPE_F32);
    /* activations: a fine grid over the range where e is finite and not, the edges of ggml's
     * |n| <= 192 branch (t = +-133.08 ...), signed zeros, subnormals, huge values, inf, NaN */
    enum { N = 2048 };
    static float x[N], g[N], want[N], got[N];
    static const float special[] = {0.0f,    -0.0f,  0x1p-149f, -0x1p-149f, 0x1p-127f, 1e-30f,   -1e-30f,   87.0f,
                                    88.7f,   -88.7f, -89.0f,    103.9f,     -104.0f,   132.9f,   133.2f,    -132.9f,
                                    -133.2f, 140.0f, -140.0f,   1e30f,      -1e30f,    INFINITY, -INFINITY, NAN};
    const int n_special = (int)(sizeof special / sizeof special[0]);
    uint32_t st = 777;
    for (int i = 0; i < N; i++) {
        st = st * 1664525u + 1013904223u;
        const float u = (float)(st >> 8) / 16777216.0f;
        x[i] = i < n_special ? special[i] : i < 1024 ? -150.0f + 300.0f * (float)i / 1024.0f : (u - 0.5f) * 24.0f;
        g[i] = 0.25f + u;
    }
    oxl_golden_report r = {stderr, 0, 0};
    static const int64_t lengths[] = {0, 5, 16, 17, 44, 172, 300, N};
    int checks = 0, bad = 0;
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        const int64_t n = lengths[li];
        for (int in_place = 0; in_place < 2; in_place++) {
            /* rows start at several offsets so every element meets both parts of the row split */
            for (int64_t off = 0; off + n <= N && off < 40; off += 13) {
                oxl_ref_swiglu(n, want, x + off, g + off);
                if (in_place) {
                    memcpy(got, x + off, (size_t)n * sizeof(float));
                    fn(n, got, got, g + off);
                } else {
                    fn(n, got, x + off, g + off);
                }
                for (int64_t i = 0; i < n; i++) {
                    checks++;
                    if (!oxl_same_float(got[i], want[i]) && bad++ < 5) {
                        fprintf(stderr, "%s  n %lld, row offset %lld, x %a: %a, ggml gives %a\n", name, (long long)n,
                                (long long)off, x[off + i], got[i], want[i]);
                    }
                }
            }
        }
    }
    oxl_golden_line(&r, bad == 0, "%s  swiglu vs ggml_vec_swiglu_f32: %d/%d bit-identical", name, checks - bad, checks);
    cr_assert(r.n_pass > 0 && r.n_fail == 0, "%s: %d checks failed", name, r.n_fail);
}

/* ---- ggml_vec_mad_f32 / ggml_vec_mad_f16 (ggml-cpu/vec.h, AVX-512 build) -------------------------
 * y[i] = fmaf(x[i], s, y[i]); the f16 version keeps y in f16, so each result is rounded to the
 * nearest half (ties to even, as F16C's vcvtps2ph with rounding mode 0). */
void oxl_check_mad(oxl_type type, oxl_isa isa, oxl_mad_fn fn, const char *name) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    cr_assert(type == OXL_TYPE_F32 || type == OXL_TYPE_F16);
    enum { N = 300 };
    static float x[N], y0[N], want[N], got[N];
    uint32_t st = 4242;
    for (int i = 0; i < N; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = ((float)(st >> 8) / 16777216.0f - 0.5f) * 8.0f;
        st = st * 1664525u + 1013904223u;
        const float y = ((float)(st >> 8) / 16777216.0f - 0.5f) * 30.0f;
        /* an f16 accumulator only ever holds halves */
        y0[i] = type == OXL_TYPE_F16 ? oxl_fp16_to_fp32(oxl_fp32_to_fp16(y)) : y;
    }
    static const float scales[] = {0.0f, 1.0f, 0.3333333f, -2.5f, 1e-3f, 7.77f};
    static const int64_t lengths[] = {0, 1, 15, 16, 17, 64, 100, N};
    oxl_golden_report r = {stderr, 0, 0};
    int checks = 0, bad = 0;
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++) {
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            const int64_t n = lengths[li];
            const float s = scales[si];
            for (int64_t i = 0; i < n; i++) {
                const float f = fmaf(x[i], s, y0[i]);
                want[i] = type == OXL_TYPE_F16 ? oxl_fp16_to_fp32(oxl_fp32_to_fp16(f)) : f;
            }
            memcpy(got, y0, sizeof got);
            fn(n, got, x, s);
            for (int64_t i = 0; i < N; i++) {
                checks++;
                const float w = i < n ? want[i] : y0[i];
                if (!oxl_same_float(got[i], w) && bad++ < 5) {
                    fprintf(stderr, "%s  n %lld, s %a, element %lld: %a, expected %a\n", name, (long long)n, s,
                            (long long)i, got[i], w);
                }
            }
        }
    }
    oxl_golden_line(&r, bad == 0, "%s  mad vs fmaf%s: %d/%d bit-identical", name,
                    type == OXL_TYPE_F16 ? " + f16 rounding" : "", checks - bad, checks);
    cr_assert(r.n_pass > 0 && r.n_fail == 0, "%s: %d checks failed", name, r.n_fail);
}

/* ---- mad_rows: ggml_vec_scale_f16 + ggml_vec_mad_f16 per cache row -------------------------------- */
static float oxl_round_half(float v) { return oxl_fp16_to_fp32(oxl_fp32_to_fp16(v)); }

void oxl_check_mad_rows(oxl_type type, oxl_isa isa, oxl_mad_rows_fn fn, const char *name) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    cr_assert(type == OXL_TYPE_F16);
    enum { N = 300, LD = N + 8, ROWS = 9, HEADS = 3 };
    static uint16_t x[ROWS * LD];
    static float y0[HEADS * N], want[HEADS * N], got[HEADS * N + 1];
    float ms[HEADS * ROWS], vs[HEADS * ROWS];
    uint32_t st = 777;
    for (int i = 0; i < ROWS * LD; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = oxl_fp32_to_fp16(((float)(st >> 8) / 16777216.0f - 0.5f) * 6.0f);
    }
    for (int i = 0; i < HEADS * N; i++) {
        st = st * 1664525u + 1013904223u;
        y0[i] = oxl_round_half(((float)(st >> 8) / 16777216.0f - 0.5f) * 40.0f);
    }
    /* a first maximum (ms 0), rows without a new maximum (ms 1), rescales, and the vs of each; each
     * head its own sequence (rotated) */
    static const float ms_set[] = {0.0f, 1.0f, 1.0f, 0.75f, 1.0f, 0.0123f, 1.0f, 0.999f, 1.0f};
    static const float vs_set[] = {1.0f, 0.5f, 0.03125f, 1.0f, 0.8f, 1.0f, 1e-4f, 1.0f, 0.333f};
    static const int64_t lengths[] = {0, 1, 15, 16, 17, 48, 64, 80, 100, 128, 129, 256, N};
    oxl_golden_report r = {stderr, 0, 0};
    int checks = 0, bad = 0;
    for (int heads = 1; heads <= HEADS; heads++) {
        for (int rows = 0; rows <= ROWS; rows++) {
            for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
                const int64_t n = lengths[li];
                /* the accumulators n apart, the scales rows apart, as the op defines them */
                for (int h = 0; h < heads; h++) {
                    for (int k = 0; k < rows; k++) {
                        ms[h * rows + k] = ms_set[(k + 2 * h) % ROWS];
                        vs[h * rows + k] = vs_set[(k + 2 * h) % ROWS];
                    }
                    for (int64_t i = 0; i < n; i++) {
                        float a = y0[h * N + i];
                        for (int k = 0; k < rows; k++) {
                            if (ms[h * rows + k] != 1.0f) {
                                a = oxl_round_half(a * ms[h * rows + k]);
                            }
                            a = oxl_round_half(fmaf(oxl_fp16_to_fp32(x[k * LD + i]), vs[h * rows + k], a));
                        }
                        want[h * n + i] = a;
                    }
                }
                for (int h = 0; h < heads; h++) {
                    memcpy(got + h * n, y0 + h * N, (size_t)n * sizeof(float));
                }
                got[heads * n] = -7.0f; /* past the last accumulator: untouched */
                fn(n, rows, heads, got, x, LD * sizeof(uint16_t), ms, vs);
                for (int64_t i = 0; i < heads * n; i++) {
                    checks++;
                    if (!oxl_same_float(got[i], want[i]) && bad++ < 5) {
                        fprintf(stderr, "%s  n %lld, rows %d, heads %d, element %lld: %a, expected %a\n", name,
                                (long long)n, rows, heads, (long long)i, got[i], want[i]);
                    }
                }
                checks++;
                if (got[heads * n] != -7.0f && bad++ < 5) {
                    fprintf(stderr, "%s  n %lld, heads %d: wrote past the accumulators\n", name, (long long)n, heads);
                }
            }
        }
    }
    oxl_golden_line(&r, bad == 0, "%s  mad_rows vs scale + fmaf + f16 rounding per row: %d/%d bit-identical", name,
                    checks - bad, checks);
    cr_assert(r.n_pass > 0 && r.n_fail == 0, "%s: %d checks failed", name, r.n_fail);
}

/* ---- dot_rows: vec_dot per row and head ------------------------------------------------------ */
void oxl_check_dot_rows(oxl_type type, oxl_isa isa, oxl_dot_rows_fn fn, const char *name) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    cr_assert(type == OXL_TYPE_F16);
    oxl_kernels k;
    oxl_kernels_build(&k, isa);
    const oxl_vec_dot_fn dot = k.vec_dot[type];
    cr_assert(dot != NULL && k.vec_dot_isa[type] == isa, "%s: no vec_dot of the same ISA", name);
    enum { N = 300, LD = N + 8, ROWS = 9, HEADS = 3, LDY = N + 4 };
    static uint16_t x[ROWS * LD], y[HEADS * LDY];
    static float got[HEADS * ROWS + 1];
    uint32_t st = 4242;
    for (int i = 0; i < ROWS * LD; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = oxl_fp32_to_fp16(((float)(st >> 8) / 16777216.0f - 0.5f) * 6.0f);
    }
    for (int i = 0; i < HEADS * LDY; i++) {
        st = st * 1664525u + 1013904223u;
        y[i] = oxl_fp32_to_fp16(((float)(st >> 8) / 16777216.0f - 0.5f) * 3.0f);
    }
    static const int64_t lengths[] = {0, 1, 15, 16, 17, 48, 64, 65, 80, 100, 128, 129, 256, N};
    oxl_golden_report r = {stderr, 0, 0};
    int checks = 0, bad = 0;
    for (int heads = 1; heads <= HEADS; heads++) {
        for (int rows = 0; rows <= ROWS; rows++) {
            for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
                const int64_t n = lengths[li];
                got[heads * rows] = -7.0f; /* past the last score: untouched */
                fn(n, rows, heads, got, x, LD * sizeof(uint16_t), y, LDY * sizeof(uint16_t));
                for (int h = 0; h < heads; h++) {
                    for (int k2 = 0; k2 < rows; k2++) {
                        float want;
                        dot(n, &want, x + k2 * LD, y + h * LDY);
                        checks++;
                        if (!oxl_same_float(got[h * rows + k2], want) && bad++ < 5) {
                            fprintf(stderr, "%s  n %lld, rows %d, heads %d, row %d head %d: %a, expected %a\n", name,
                                    (long long)n, rows, heads, k2, h, got[h * rows + k2], want);
                        }
                    }
                }
                checks++;
                if (got[heads * rows] != -7.0f && bad++ < 5) {
                    fprintf(stderr, "%s  n %lld, rows %d, heads %d: wrote past the scores\n", name, (long long)n, rows,
                            heads);
                }
            }
        }
    }
    oxl_golden_line(&r, bad == 0, "%s  dot_rows vs vec_dot per row and head: %d/%d bit-identical", name, checks - bad,
                    checks);
    cr_assert(r.n_pass > 0 && r.n_fail == 0, "%s: %d checks failed", name, r.n_fail);
}

/* ---- repacked layouts: gemm_rp(repack(W)) against vec_dot(W) -----------------------------------
 * ggml_vec_dot_q4_0_q8_0 / _q8_0_q8_0 of the x86 build (ggml-cpu/arch/x86/quants.c): 8 float lanes,
 * lane v = the exact integer sum of elements 4v..4v+3 of a block, acc[v] = fma(d_w * d_x, lane,
 * acc[v]) block after block, then hsum_float_8: ((l4 + l0) + (l6 + l2)) + ((l5 + l1) + (l7 + l3)). */
static float oxl_ref_ggml_dot_q8(oxl_type type, int64_t k, const void *w, const void *x) {
    const oxl_block_q8_0 *xb = x;
    float acc[8] = {0};
    for (int64_t b = 0; b < k / 32; b++) {
        int8_t q[32];
        float dw;
        if (type == OXL_TYPE_Q4_0) {
            const oxl_block_q4_0 *wb = (const oxl_block_q4_0 *)w + b;
            for (int e = 0; e < 16; e++) {
                q[e] = (int8_t)((wb->qs[e] & 0x0f) - 8);
                q[e + 16] = (int8_t)((wb->qs[e] >> 4) - 8);
            }
            dw = oxl_fp16_to_fp32(wb->d);
        } else {
            const oxl_block_q8_0 *wb = (const oxl_block_q8_0 *)w + b;
            memcpy(q, wb->qs, 32);
            dw = oxl_fp16_to_fp32(wb->d);
        }
        const float d = dw * oxl_fp16_to_fp32(xb[b].d);
        for (int v = 0; v < 8; v++) {
            int32_t lane = 0;
            for (int e = 4 * v; e < 4 * v + 4; e++) {
                lane += q[e] * xb[b].qs[e];
            }
            acc[v] = fmaf(d, (float)lane, acc[v]);
        }
    }
    return ((acc[4] + acc[0]) + (acc[6] + acc[2])) + ((acc[5] + acc[1]) + (acc[7] + acc[3]));
}

static void oxl_check_repacked(oxl_type type, oxl_isa isa, const char *name) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    oxl_kernels kk, ks;
    oxl_kernels_build(&kk, isa);
    oxl_kernels_build(&ks, OXL_ISA_SCALAR);
    cr_assert(kk.repack[type] != NULL && kk.gemm_rp[type] != NULL && kk.repack_isa[type] == isa,
              "%s: the %s table does not choose this layout", name, oxl_isa_name(isa));
    const oxl_type_traits *tr = oxl_type_traits_get(type);
    const oxl_type pt = tr->vec_dot_type;
    const int rows = kk.repack_rows[type];
    oxl_golden_report r = {stderr, 0, 0};
    int checks = 0, bad = 0;
    uint32_t st = 99;
    /* 288: 9 blocks of 32, an odd count (the formats with 32-element blocks; skipped for the K-quants);
     * 4128 (129 blocks) and 32800 (1025) past the block chunks of 64 and the 1024 blocks of a
     * decode step that MXFP4's layout prepares at once */
    const int64_t ks_list[] = {256, 512, 1024, 288, 4128, 32800};
    const int64_t ns_list[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 32, 33}; /* 33: past the exact path */
    for (size_t ki = 0; ki < sizeof ks_list / sizeof ks_list[0]; ki++) {
        const int64_t k = ks_list[ki], m = 3 * rows, nmax = 33, ldc = m + 5;
        if (k % tr->blck_size != 0) {
            continue;
        }
        float *wf = malloc((size_t)(m * k) * sizeof(float)), *xf = malloc((size_t)(nmax * k) * sizeof(float));
        float *row = malloc((size_t)k * sizeof(float)), *col = malloc((size_t)k * sizeof(float));
        const size_t wrow = oxl_row_size(type, k), xrow = oxl_row_size(pt, k);
        char *w = malloc(wrow * (size_t)m), *x = malloc(xrow * (size_t)nmax);
        const size_t rp_bytes = (size_t)(m / rows) * (size_t)(k / tr->blck_size) * kk.repack_group_bytes[type];
        void *wrp = malloc(rp_bytes);
        const int64_t bstride = k / 32 + k / 4;
        int32_t *bsum = malloc((size_t)(nmax * bstride) * sizeof(int32_t));
        float *c = malloc((size_t)(ldc * nmax) * sizeof(float));
        for (int64_t i = 0; i < m * k; i++) {
            st = st * 1664525u + 1013904223u;
            /* rows of different magnitudes, some elements large (exercising every scale) */
            wf[i] =
                ((float)(st >> 8) / 16777216.0f - 0.5f) * (1.0f + (float)(i / k % 5)) * ((st & 63) == 0 ? 8.0f : 1.0f);
        }
        for (int64_t i = 0; i < nmax * k; i++) {
            st = st * 1664525u + 1013904223u;
            xf[i] = ((float)(st >> 8) / 16777216.0f - 0.5f) * 3.0f;
        }
        oxl_error err = {0};
        /* importance weights (varying, positive) where the format cannot be quantized without them */
        float *imat = NULL;
        if (oxl_quantize_requires_imatrix(type)) {
            imat = malloc((size_t)k * sizeof(float));
            for (int64_t e = 0; e < k; e++) {
                imat[e] = 0.5f + (float)(e % 7);
            }
        }
        cr_assert_eq(oxl_quantize_rows(type, wf, w, m, k, imat, &err), 0, "%s", err.msg);
        free(imat);
        for (int64_t j = 0; j < nmax; j++) {
            ks.quant[pt](xf + j * k, x + (size_t)j * xrow, k);
            if (pt == OXL_TYPE_Q8_0) {
                oxl_q8_0_sums(x + (size_t)j * xrow, k, bsum + j * bstride);
            }
        }
        kk.repack[type](k, m, w, wrow, wrp);
        for (size_t ni = 0; ni < sizeof ns_list / sizeof ns_list[0]; ni++) {
            const int64_t n = ns_list[ni];
            if (n > 17 && type != OXL_TYPE_Q4_0 && type != OXL_TYPE_Q8_0) {
                continue; /* 32 and 33: the edges of Q4_0/Q8_0's exact path (OXL_RP_EXACT_COLS) */
            }
            for (int64_t i = 0; i < ldc * nmax; i++) {
                c[i] = -12345.0f;
            }
            kk.gemm_rp[type](k, m, n, wrp, x, xrow, pt == OXL_TYPE_Q8_0 ? bsum : NULL, c, ldc);
            for (int64_t j = 0; j < nmax; j++) {
                ks.dequant[pt](x + (size_t)j * xrow, col, k);
                for (int64_t i = 0; i < ldc; i++) {
                    const float got = c[j * ldc + i];
                    checks++;
                    if (j >= n || i >= m) {
                        if (got != -12345.0f && bad++ < 5) {
                            fprintf(stderr, "%s  k %lld n %lld: wrote outside the product at row %lld column %lld\n",
                                    name, (long long)k, (long long)n, (long long)i, (long long)j);
                        }
                        continue;
                    }
                    float want = 0.0f;
                    ks.vec_dot[type](k, &want, w + (size_t)i * wrow, x + (size_t)j * xrow);
                    /* one column of Q4_0/Q8_0: ggml's own order, to the bit; on AVX-512 VNNI also every
                     * column of a batch of up to 32 (OXL_RP_EXACT_COLS: a verified draft is scored as
                     * single tokens are) */
                    const bool exact = (type == OXL_TYPE_Q4_0 || type == OXL_TYPE_Q8_0) &&
                                       (n == 1 || (isa == OXL_ISA_AVX512VNNI && n <= 32));
                    /* one column of IQ4_NL/IQ4_XS, every column count of Q1_0/TQ2_0/MXFP4: the plain
                     * vec_dot, which sums in ggml's order, to the bit */
                    if ((n == 1 && (type == OXL_TYPE_IQ4_NL || type == OXL_TYPE_IQ4_XS)) || type == OXL_TYPE_Q1_0 ||
                        type == OXL_TYPE_TQ2_0 || type == OXL_TYPE_MXFP4) {
                        if (!oxl_same_float(got, want) && bad++ < 5) {
                            fprintf(stderr, "%s  k %lld n %lld row %lld column %lld: %a, vec_dot gives %a\n", name,
                                    (long long)k, (long long)n, (long long)i, (long long)j, got, want);
                        }
                        continue;
                    }
                    /* IQ3_S/IQ2_XXS: every column in the plain vec_dot's order, whatever n, to the bit */
                    if (type == OXL_TYPE_IQ3_S || type == OXL_TYPE_IQ2_XXS) {
                        if (!oxl_same_float(got, want) && bad++ < 5) {
                            fprintf(stderr, "%s  k %lld n %lld row %lld column %lld: %a, vec_dot gives %a\n", name,
                                    (long long)k, (long long)n, (long long)i, (long long)j, got, want);
                        }
                        continue;
                    }
                    if (exact) {
                        want = oxl_ref_ggml_dot_q8(type, k, w + (size_t)i * wrow, x + (size_t)j * xrow);
                        if (!oxl_same_float(got, want) && bad++ < 5) {
                            fprintf(stderr, "%s  k %lld n %lld row %lld column %lld: %a, ggml's order gives %a\n", name,
                                    (long long)k, (long long)n, (long long)i, (long long)j, got, want);
                        }
                        continue;
                    }
                    ks.dequant[type](w + (size_t)i * wrow, row, k);
                    double bound = 0.0;
                    for (int64_t e = 0; e < k; e++) {
                        bound += fabs((double)row[e] * (double)col[e]);
                    }
                    if (!(fabs((double)got - (double)want) <= 1e-5 * bound + 1e-30) && bad++ < 5) {
                        fprintf(stderr,
                                "%s  k %lld n %lld row %lld column %lld: %.9g, vec_dot gives %.9g (sum |w x| %.3g)\n",
                                name, (long long)k, (long long)n, (long long)i, (long long)j, got, want, bound);
                    }
                }
            }
        }
        free(wf), free(xf), free(row), free(col), free(w), free(x), free(wrp), free(bsum), free(c);
    }
    oxl_golden_line(&r, bad == 0,
                    "%s  gemm_rp(repack(W)) vs vec_dot(W): %d/%d within 1e-5 of sum |w x| (one column of Q4_0/Q8_0/"
                    "IQ4_NL/IQ4_XS, up to 32 columns of Q4_0/Q8_0 on AVX-512 VNNI, every column of "
                    "Q1_0/TQ2_0/MXFP4/IQ3_S/IQ2_XXS: ggml's order, bit-identical)",
                    name, checks - bad, checks);
    cr_assert(r.n_pass > 0 && r.n_fail == 0, "%s: %d checks failed", name, r.n_fail);
}

void oxl_check_repack(oxl_type type, oxl_isa isa, oxl_repack_fn fn, const char *name) {
    (void)fn;
    oxl_check_repacked(type, isa, name);
}

void oxl_check_gemm_rp(oxl_type type, oxl_isa isa, oxl_gemm_rp_fn fn, const char *name) {
    (void)fn;
    oxl_check_repacked(type, isa, name);
}

/* ---- ggml's tiled flash attention steps (ggml-cpu/simd-gemm.h, vec.cpp) ------------------------ */
void oxl_check_sgemm_acc(oxl_type type, oxl_isa isa, oxl_sgemm_acc_fn fn, const char *name) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    cr_assert_eq(type, OXL_TYPE_F32);
    static const int64_t shapes[][3] = {{64, 64, 64}, {1, 64, 16}, {7, 13, 48}, {5, 1, 80}, {130, 64, 128}, {3, 0, 32}};
    oxl_golden_report r = {stderr, 0, 0};
    int checks = 0, bad = 0;
    uint32_t st = 31337;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t m = shapes[si][0], k = shapes[si][1], n = shapes[si][2];
        float *a = malloc((size_t)(m * k + 1) * sizeof(float)), *b = malloc((size_t)(k * n + 1) * sizeof(float));
        float *c = malloc((size_t)(m * n) * sizeof(float)), *want = malloc((size_t)(m * n) * sizeof(float));
        for (int64_t i = 0; i < m * k; i++) {
            st = st * 1664525u + 1013904223u;
            a[i] = ((float)(st >> 8) / 16777216.0f - 0.5f) * 4.0f;
        }
        for (int64_t i = 0; i < k * n; i++) {
            st = st * 1664525u + 1013904223u;
            b[i] = ((float)(st >> 8) / 16777216.0f - 0.5f) * 2.0f;
        }
        for (int64_t i = 0; i < m * n; i++) {
            st = st * 1664525u + 1013904223u;
            c[i] = want[i] = (float)(st >> 8) / 16777216.0f - 0.5f;
        }
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                for (int64_t kk = 0; kk < k; kk++) {
                    want[i * n + j] = fmaf(b[kk * n + j], a[i * k + kk], want[i * n + j]);
                }
            }
        }
        fn(m, k, n, c, a, b);
        for (int64_t i = 0; i < m * n; i++) {
            checks++;
            if (!oxl_same_float(c[i], want[i]) && bad++ < 5) {
                fprintf(stderr, "%s  %lldx%lldx%lld element %lld: %a, simd_gemm gives %a\n", name, (long long)m,
                        (long long)k, (long long)n, (long long)i, c[i], want[i]);
            }
        }
        free(a), free(b), free(c), free(want);
    }
    oxl_golden_line(&r, bad == 0, "%s  sgemm_acc vs simd_gemm: %d/%d bit-identical", name, checks - bad, checks);
    cr_assert(r.n_pass > 0 && r.n_fail == 0, "%s: %d checks failed", name, r.n_fail);
}

void oxl_check_softmax(oxl_type type, oxl_isa isa, oxl_softmax_fn fn, const char *name) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    cr_assert_eq(type, OXL_TYPE_F32);
    enum { N = 300 };
    static float x[N], got[N], want[N];
    uint32_t st = 2024;
    for (int i = 0; i < N; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = i % 37 == 5 ? -INFINITY : ((float)(st >> 8) / 16777216.0f - 0.9f) * 60.0f;
    }
    static const int64_t lengths[] = {0, 3, 16, 17, 64, 100, N};
    static const float maxes[] = {0.0f, 5.5f, 31.0f, -2.0f};
    oxl_golden_report r = {stderr, 0, 0};
    int checks = 0, bad = 0;
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        for (size_t mi = 0; mi < sizeof maxes / sizeof maxes[0]; mi++) {
            const int64_t n = lengths[li];
            const float max = maxes[mi];
            /* the reference: ggml_v_expf lane by lane (oxl_ref_vsilu's exp, as swiglu's check) */
            double sum_want = 0.0;
            int64_t i = 0;
            for (; i + 16 <= n; i += 16) {
                float u[16];
                for (int l = 0; l < 16; l++) {
                    u[l] = want[i + l] = oxl_ref_vexpf(x[i + l] - max);
                }
                float h[8];
                for (int l = 0; l < 8; l++) {
                    h[l] = u[l] + u[l + 8];
                }
                for (int l = 0; l < 4; l++) {
                    h[l] += h[l + 4];
                }
                sum_want += (double)((h[0] + h[2]) + (h[1] + h[3]));
            }
            for (; i < n; i++) {
                want[i] = expf(x[i] - max);
                sum_want += (double)want[i];
            }
            const double sum = fn(n, got, x, max);
            checks++;
            if (sum != sum_want && bad++ < 5) {
                fprintf(stderr, "%s  n %lld max %g: sum %.17g, ggml gives %.17g\n", name, (long long)n, max, sum,
                        sum_want);
            }
            for (int64_t e = 0; e < n; e++) {
                checks++;
                if (!oxl_same_float(got[e], want[e]) && bad++ < 5) {
                    fprintf(stderr, "%s  n %lld element %lld: %a, ggml gives %a\n", name, (long long)n, (long long)e,
                            got[e], want[e]);
                }
            }
        }
    }
    oxl_golden_line(&r, bad == 0, "%s  softmax vs ggml_vec_soft_max_f32: %d/%d bit-identical", name, checks - bad,
                    checks);
    cr_assert(r.n_pass > 0 && r.n_fail == 0, "%s: %d checks failed", name, r.n_fail);
}
