/* Dispatch and type traits: the table a cap builds, ISA names, and ggml's trait values (ids, names,
 * block sizes and bytes per block from ggml/include/ggml.h and ggml-common.h). */
#include "golden_quant.h"
#include "kernel_checker.h"
#include "kernels.h"
#include "oxl_blocks.h"
#include "oxl_fp16.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ISA whose kernels serve type on isa: isa itself, or the cell it borrows, followed until a
 * cell of its own (generated/oxl_kernel_borrowed.inc). */
static oxl_isa lender_of(oxl_type type, oxl_isa isa) {
    static const struct {
        oxl_type type;
        oxl_isa isa, lender;
    } borrowed[] = {
#define OXL_BORROWED(t, i, l) {t, i, l},
#include "oxl_kernel_borrowed.inc"
#undef OXL_BORROWED
    };
    for (size_t j = 0; j < sizeof borrowed / sizeof borrowed[0]; j++) {
        if (borrowed[j].type == type && borrowed[j].isa == isa) {
            return lender_of(type, borrowed[j].lender);
        }
    }
    return isa;
}

Test(kernels, every_cap_gets_a_kernel_per_cell_within_the_cap) {
    /* every format the spec gives dequant and vec_dot (generated/oxl_format_facts.inc); others: -1 */
    static const int formats[] = {
#define OXL_FORMAT_FACTS(name, NAME, dequant, vec_dot, quantizer, golden) dequant &&vec_dot ? OXL_TYPE_##NAME : -1,
#include "oxl_format_facts.inc"
#undef OXL_FORMAT_FACTS
    };
    for (int cap = 0; cap < OXL_ISA_COUNT; cap++) {
        oxl_kernels k;
        oxl_kernels_build(&k, (oxl_isa)cap);
        for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
            if (formats[i] < 0) {
                continue;
            }
            const oxl_type t = (oxl_type)formats[i];
            cr_expect_not_null(k.dequant[t], "cap %s: no dequant for type %d", oxl_isa_name((oxl_isa)cap), t);
            cr_expect_not_null(k.vec_dot[t], "cap %s: no vec_dot for type %d", oxl_isa_name((oxl_isa)cap), t);
            cr_expect_leq(k.dequant_isa[t], (oxl_isa)cap);
            cr_expect_leq(k.vec_dot_isa[t], (oxl_isa)cap);
            cr_expect(oxl_cpu_has_isa(k.vec_dot_isa[t]));
            /* the best the CPU has within the cap, or the cell it borrows (generated list) */
            if (oxl_cpu_has_isa((oxl_isa)cap)) {
                cr_expect_eq(k.vec_dot_isa[t], lender_of(t, (oxl_isa)cap), "cap %s, type %d: vec_dot from %s",
                             oxl_isa_name((oxl_isa)cap), t, oxl_isa_name(k.vec_dot_isa[t]));
            }
        }
        cr_expect_not_null(k.gemm[OXL_TYPE_F32], "cap %s: no f32 gemm", oxl_isa_name((oxl_isa)cap));
        cr_expect_not_null(k.gemm[OXL_TYPE_F16], "cap %s: no f16 gemm", oxl_isa_name((oxl_isa)cap));
        cr_expect_null(k.gemm[OXL_TYPE_Q4_0], "gemm is only specified for f32, f16 and bf16");
        cr_expect_not_null(k.gemm[OXL_TYPE_BF16], "cap %s: no bf16 gemm", oxl_isa_name((oxl_isa)cap));
        cr_expect_not_null(k.swiglu[OXL_TYPE_F32], "cap %s: no swiglu", oxl_isa_name((oxl_isa)cap));
        cr_expect_not_null(k.quant[OXL_TYPE_Q8_0]);
        cr_expect_not_null(k.quant[OXL_TYPE_Q8_1]);
        cr_expect_not_null(k.quant[OXL_TYPE_Q8_K]);
        cr_expect_null(k.quant[OXL_TYPE_Q4_0], "q4_0 is not an activation format");
        cr_expect_not_null(k.dequant[OXL_TYPE_IQ2_XXS], "cap %s: no iq2_xxs dequant", oxl_isa_name((oxl_isa)cap));
        cr_expect_null(k.dequant[OXL_TYPE_I8], "i8 has no kernels");
    }
}

Test(kernels, scalar_is_always_there_and_names_round_trip) {
    cr_expect(oxl_cpu_has_isa(OXL_ISA_SCALAR));
    cr_expect_not(oxl_cpu_has_isa(OXL_ISA_COUNT));
    for (int i = 0; i < OXL_ISA_COUNT; i++) {
        cr_expect_eq(oxl_isa_from_name(oxl_isa_name((oxl_isa)i)), i);
    }
    cr_expect_eq(oxl_isa_from_name("AVX2"), OXL_ISA_AVX2);
    cr_expect_eq(oxl_isa_from_name("sse9"), -1);
    cr_expect_eq(oxl_kernels_get()->vec_dot[OXL_TYPE_Q4_0] != NULL, true);
    cr_expect_leq(oxl_kernels_get()->vec_dot_isa[OXL_TYPE_Q4_0], oxl_isa_cap());
}

Test(kernels, ggml_type_traits) {
    const oxl_type_traits *q4k = oxl_type_traits_get(12);
    cr_assert_not_null(q4k);
    cr_expect_str_eq(q4k->name, "q4_K");
    cr_expect_eq(q4k->blck_size, 256);
    cr_expect_eq(q4k->type_size, 144);
    cr_expect_eq(q4k->vec_dot_type, OXL_TYPE_Q8_K);
    cr_expect(q4k->is_quantized);
    const oxl_type_traits *bf16 = oxl_type_traits_get(30);
    cr_expect_str_eq(bf16->name, "bf16");
    cr_expect_not(bf16->is_quantized);
    /* removed ids and ids past the table */
    cr_expect_null(oxl_type_traits_get(4));
    cr_expect_null(oxl_type_traits_get(5));
    cr_expect_null(oxl_type_traits_get(31));
    cr_expect_null(oxl_type_traits_get(36));
    cr_expect_null(oxl_type_traits_get(OXL_TYPE_COUNT));
    cr_expect_null(oxl_type_traits_get(UINT32_MAX));
    cr_expect_eq(oxl_type_from_name("IQ2_XXS"), 16);
    cr_expect_eq(oxl_type_from_name("q4_k"), 12);
    cr_expect_eq(oxl_type_from_name("q4_2"), -1);
    cr_expect_eq(oxl_row_size(OXL_TYPE_Q4_0, 4096), 4096 / 32 * 18);
    cr_expect_eq(oxl_row_size(OXL_TYPE_F16, 7), 14);
}

static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- IQ4_NL and MXFP4 dots on odd numbers of blocks -----------------------------------------------
 * Every cell sums in ggml's x86 order: blocks in pairs into two accumulators, an odd last block
 * apart. The golden rows have 16 blocks, so golden/quant/<fmt>.prefix-dots.tsv holds ggml's own
 * dots of the first 1, 3, 5, 15 and 16 blocks of each golden row; on every ISA cap this CPU has each
 * must be equal bit for bit, and within 1e-5 of the sum of |terms| of the double-precision sum of the
 * golden's dq times its dequantized yq. */
static void check_prefix_dots(const char *name, oxl_type type) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/quant/%s.gguf", OXL_SOURCE_DIR, name);
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert(g != NULL, "%s", err.msg);
    oxl_quant_golden qg;
    cr_assert(oxl_quant_golden_read(g, &qg, &err) == 0, "%s", err.msg);
    cr_assert(qg.type == type && qg.yq_type == OXL_TYPE_Q8_0 && qg.dq != NULL && qg.yq != NULL);
    snprintf(path, sizeof path, "%s/golden/quant/%s.prefix-dots.tsv", OXL_SOURCE_DIR, name);
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL, "cannot open %s", path);
    struct {
        int row, blocks;
        float dot;
    } want[128];
    int n_want = 0;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#') {
            continue;
        }
        cr_assert(n_want < 128);
        char *end;
        want[n_want].row = (int)strtol(line, &end, 10);
        want[n_want].blocks = (int)strtol(end, &end, 10);
        want[n_want].dot = strtof(end, &end);
        cr_assert(want[n_want].row >= 0 && want[n_want].row < qg.nrows && want[n_want].blocks >= 1 &&
                      want[n_want].blocks <= qg.ne0 / 32,
                  "%s: bad line %s", path, line);
        n_want++;
    }
    fclose(f);
    cr_assert_eq(n_want, 16 * 5, "%s: %d lines", path, n_want);
    const size_t x_row = oxl_row_size(type, qg.ne0), y_row = oxl_row_size(OXL_TYPE_Q8_0, qg.ne0);
    int n_isas = 0;
    for (int cap = 0; cap < OXL_ISA_COUNT; cap++) {
        if (!oxl_cpu_has_isa((oxl_isa)cap)) {
            continue;
        }
        n_isas++;
        oxl_kernels kt;
        oxl_kernels_build(&kt, (oxl_isa)cap);
        for (int i = 0; i < n_want; i++) {
            const int64_t row = want[i].row, n = (int64_t)want[i].blocks * 32;
            const oxl_block_q8_0 *yb = (const oxl_block_q8_0 *)((const uint8_t *)qg.yq + row * y_row);
            double ref = 0.0, abs_sum = 0.0;
            for (int64_t j = 0; j < n; j++) {
                const double t =
                    (double)qg.dq[row * qg.ne0 + j] * ((double)oxl_fp16_to_fp32(yb[j / 32].d) * yb[j / 32].qs[j % 32]);
                ref += t;
                abs_sum += fabs(t);
            }
            float got;
            kt.vec_dot[type](n, &got, (const uint8_t *)qg.q + row * x_row, yb);
            cr_expect(same_bits(got, want[i].dot), "cap %s (%s), row %lld, %d blocks: %a, ggml's %a",
                      oxl_isa_name((oxl_isa)cap), oxl_isa_name(kt.vec_dot_isa[type]), (long long)row, want[i].blocks,
                      got, want[i].dot);
            cr_expect(!isfinite(abs_sum) || fabs(got - ref) <= 1e-5 * abs_sum,
                      "cap %s, row %lld, %d blocks: %.9g, double sum %.9g", oxl_isa_name((oxl_isa)cap), (long long)row,
                      want[i].blocks, got, ref);
        }
    }
    cr_expect_geq(n_isas, 1);
    oxl_gguf_close(g);
}

Test(kernels, iq4_nl_dots_on_odd_block_counts) { check_prefix_dots("iq4_nl", OXL_TYPE_IQ4_NL); }
Test(kernels, mxfp4_dots_on_odd_block_counts) { check_prefix_dots("mxfp4", OXL_TYPE_MXFP4); }

/* ---- IQ4_XS dots: ggml's own value on every ISA cap ----------------------------------------------
 * Every cell sums in ggml's x86 order (per super-block 8 exact int32 lanes, one FMA per lane, then
 * hsum_float_8), so each golden row's dot (ggml's vec_dot of the whole row, 2 super-blocks) must be
 * equal bit for bit on every ISA cap this CPU has; a non-finite golden dot by class. */
Test(kernels, iq4_xs_dots_equal_ggml_bit_for_bit) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/quant/iq4_xs.gguf", OXL_SOURCE_DIR);
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert(g != NULL, "%s", err.msg);
    oxl_quant_golden qg;
    cr_assert(oxl_quant_golden_read(g, &qg, &err) == 0, "%s", err.msg);
    cr_assert(qg.type == OXL_TYPE_IQ4_XS && qg.yq_type == OXL_TYPE_Q8_K && qg.yq != NULL && qg.dot != NULL);
    const size_t x_row = oxl_row_size(OXL_TYPE_IQ4_XS, qg.ne0), y_row = oxl_row_size(OXL_TYPE_Q8_K, qg.ne0);
    int n_checks = 0;
    for (int cap = 0; cap < OXL_ISA_COUNT; cap++) {
        if (!oxl_cpu_has_isa((oxl_isa)cap)) {
            continue;
        }
        oxl_kernels kt;
        oxl_kernels_build(&kt, (oxl_isa)cap);
        for (int64_t row = 0; row < qg.nrows; row++) {
            float got;
            kt.vec_dot[OXL_TYPE_IQ4_XS](qg.ne0, &got, (const uint8_t *)qg.q + row * x_row,
                                        (const uint8_t *)qg.yq + row * y_row);
            const float want = qg.dot[row];
            const bool ok = isfinite(want) ? same_bits(got, want) : (isnan(want) ? isnan(got) : got == want);
            cr_expect(ok, "cap %s (%s), row %lld: %a, ggml's %a", oxl_isa_name((oxl_isa)cap),
                      oxl_isa_name(kt.vec_dot_isa[OXL_TYPE_IQ4_XS]), (long long)row, got, want);
            n_checks++;
        }
    }
    cr_expect_geq(n_checks, 16);
    oxl_gguf_close(g);
}

/* ---- the ggml summation order: every ISA the CPU has gives the same bits ----------------------- */

/* Deterministic values over a wide exponent range with both signs, so that a different order of
 * the additions would show in the last bits. */
static float wide_value(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    const float u = (float)(*state >> 8) / 16777216.0f - 0.5f;
    return ldexpf(u, (int)(*state % 17) - 8);
}

Test(kernels, f32_f16_dots_and_gemms_are_bit_identical_across_isas) {
    enum { K = 320, ROWS = 9, COLS = 6 };
    static float a[ROWS * K], b[COLS * K];
    static uint16_t ah[ROWS * K], bh[COLS * K];
    static float af[ROWS * K], bf[COLS * K]; /* the f16 values as floats */
    uint32_t st = 12345;
    for (int i = 0; i < ROWS * K; i++) {
        a[i] = wide_value(&st);
        ah[i] = oxl_fp32_to_fp16(a[i]);
        af[i] = oxl_fp16_to_fp32(ah[i]);
    }
    for (int i = 0; i < COLS * K; i++) {
        b[i] = wide_value(&st);
        bh[i] = oxl_fp32_to_fp16(b[i]);
        bf[i] = oxl_fp16_to_fp32(bh[i]);
    }
    static const int64_t lengths[] = {5, 8, 44, 64, 100, 172, 192, 299, 320};
    static const int64_t ks[] = {16, 48, 64, 320};
    int n_isas = 0;
    for (int cap = 0; cap < OXL_ISA_COUNT; cap++) {
        if (!oxl_cpu_has_isa((oxl_isa)cap)) {
            continue;
        }
        n_isas++;
        oxl_kernels kt;
        oxl_kernels_build(&kt, (oxl_isa)cap);
        const char *isa = oxl_isa_name((oxl_isa)cap);
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            const int64_t n = lengths[li];
            for (int r = 0; r < ROWS; r++) {
                float got32, got16;
                kt.vec_dot[OXL_TYPE_F32](n, &got32, a + r * K, b + (r % COLS) * K);
                kt.vec_dot[OXL_TYPE_F16](n, &got16, ah + r * K, bh + (r % COLS) * K);
                cr_expect(same_bits(got32, oxl_ref_dot_f32(n, a + r * K, b + (r % COLS) * K)),
                          "%s: f32 vec_dot, n %lld, row %d", isa, (long long)n, r);
                cr_expect(same_bits(got16, oxl_ref_dot_f16(n, ah + r * K, bh + (r % COLS) * K)),
                          "%s: f16 vec_dot, n %lld, row %d", isa, (long long)n, r);
            }
        }
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t k = ks[ki];
            float c32[COLS * ROWS], c16[COLS * ROWS];
            kt.gemm[OXL_TYPE_F32](k, ROWS, COLS, a, K * sizeof(float), b, K * sizeof(float), c32, ROWS);
            kt.gemm[OXL_TYPE_F16](k, ROWS, COLS, ah, K * sizeof(uint16_t), bh, K * sizeof(uint16_t), c16, ROWS);
            for (int j = 0; j < COLS; j++) {
                for (int i = 0; i < ROWS; i++) {
                    cr_expect(same_bits(c32[j * ROWS + i], oxl_ref_gemm_one(k, a + i * K, b + j * K)),
                              "%s: f32 gemm, k %lld, output (%d, %d)", isa, (long long)k, i, j);
                    cr_expect(same_bits(c16[j * ROWS + i], oxl_ref_gemm_one(k, af + i * K, bf + j * K)),
                              "%s: f16 gemm, k %lld, output (%d, %d)", isa, (long long)k, i, j);
                }
            }
        }
    }
    cr_expect_geq(n_isas, 1);
}

/* The reference itself, on sums whose every rounding is worked out by hand: with 1.0 and many
 * 2^-24 terms, each 2^-24 added alone to 1.0 vanishes (a tie, rounded to even), so the result
 * counts the terms that met each other before meeting the 1.0 — which is what the order decides.
 * u = 2^-23, the ulp of 1. */
Test(kernels, ggml_order_reference_sums_in_ggml_order) {
    float x[80], y[80];
    for (int i = 0; i < 80; i++) {
        x[i] = 0x1p-24f;
        y[i] = 1.0f;
    }
    x[0] = 1.0f;
    /* dot, n = 64: lane 0 of acc0 = 1, every other lane of the four = 2^-24. Folds: acc0 + acc2
     * gives 1 in lane 0 (a tie) and u elsewhere, acc1 + acc3 u everywhere, then acc0 + acc1 gives
     * 1 + u in lane 0 and 2u elsewhere. Tree: t0 = 1 + 3u, t1..7 = 4u; q0 = 1 + 7u, q1..3 = 8u; (q0 + q2) + (q1 + q3) =
     * 1 + 31u. */
    cr_expect(same_bits(oxl_ref_dot_f32(64, x, y), 1.0f + 31 * 0x1p-23f), "%a", oxl_ref_dot_f32(64, x, y));
    /* n = 80: 16 leftovers (exact products), added in order: 1 + 31u + 2^-24 ties to 1 + 32u,
     * which then stays */
    cr_expect(same_bits(oxl_ref_dot_f32(80, x, y), 1.0f + 32 * 0x1p-23f), "%a", oxl_ref_dot_f32(80, x, y));
    /* gemm, k = 64: one accumulator; lane 0 takes 1, then three 2^-24 that each vanish; lanes 1..15
     * hold 2u. Tree: t0 = 1 + 2u, t1..7 = 4u; q0 = 1 + 6u, q1..3 = 8u; total 1 + 30u. */
    cr_expect(same_bits(oxl_ref_gemm_one(64, x, y), 1.0f + 30 * 0x1p-23f), "%a", oxl_ref_gemm_one(64, x, y));
    /* f32 leftovers are fused: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 would round to 1 + 2^-11 as a
     * product, but added to a sum of -1 in one FMA it stays exact */
    float xl[9] = {-1.0f, 0, 0, 0, 0, 0, 0, 0, 1.0f + 0x1p-12f}, yl[9] = {1.0f, 0, 0, 0, 0, 0, 0, 0, 1.0f + 0x1p-12f};
    cr_expect(same_bits(oxl_ref_dot_f32(9, xl, yl), 0x1p-11f + 0x1p-24f), "%a", oxl_ref_dot_f32(9, xl, yl));
    /* with 8 leftovers all take the rounded-product path: (1 + 2^-12)^2 rounds to 1 + 2^-11 */
    float x8[8] = {-1.0f, 0, 0, 0, 0, 0, 0, 1.0f + 0x1p-12f}, y8[8] = {1.0f, 0, 0, 0, 0, 0, 0, 1.0f + 0x1p-12f};
    cr_expect(same_bits(oxl_ref_dot_f32(8, x8, y8), 0x1p-11f), "%a", oxl_ref_dot_f32(8, x8, y8));
    /* f16, n = 67: zeros in the block, then leftovers 1, 2^-24, 2^-24 summed in double: 1 + u,
     * where a float sum would have stayed at 1 */
    uint16_t xh[67], yh[67];
    for (int i = 0; i < 67; i++) {
        xh[i] = oxl_fp32_to_fp16(i < 64 ? 0.0f : i == 64 ? 1.0f : 0x1p-24f);
        yh[i] = oxl_fp32_to_fp16(1.0f);
    }
    cr_expect(same_bits(oxl_ref_dot_f16(67, xh, yh), 1.0f + 0x1p-23f), "%a", oxl_ref_dot_f16(67, xh, yh));
}

/* The SiLU reference (ggml's vector expf) against the function it approximates, and its edges:
 * e = 0 beyond n < -192 gives x itself, e = inf beyond n > 192 gives a signed zero. */
Test(kernels, ggml_vector_silu_reference_is_silu) {
    double worst = 0.0;
    for (int i = -4000; i <= 4000; i++) {
        const float x = (float)i * 0.02f;
        const double want = (double)x / (1.0 + exp(-(double)x));
        const float got = oxl_ref_vsilu(x);
        if (want != 0.0) {
            worst = fmax(worst, fabs(got - want) / fabs(want));
        }
    }
    cr_expect_leq(worst, 0x1p-21, "max relative error %g (4 ulps allowed)", worst);
    cr_expect(same_bits(oxl_ref_vsilu(200.0f), 200.0f));
    cr_expect(same_bits(oxl_ref_vsilu(-200.0f), -0.0f));
    cr_expect(same_bits(oxl_ref_vsilu(0.0f), 0.0f));
    cr_expect(isnan(oxl_ref_vsilu(NAN)));
}
