/* The FP4 formats' scale bytes (oxl_fp16.h), at the values the quant goldens do not reach: E8M0's
 * two subnormal codes, UE4M3's subnormals, its saturation at 448 and its rounding carry. The
 * expected values follow from the formats' definitions (E8M0: 2^(e - 127); UE4M3: exponent bias 7,
 * 3 mantissa bits, 0x7f not a number), halved where ggml halves them (its kvalues_fp4 are the E2M1
 * values doubled), and from ggml_fp32_to_ue4m3's stated rules (clamp at 448, round half up on the
 * first dropped bit, subnormals round(x * 2^9) capped at 7). */
#include "oxl_fp16.h"

#include <criterion/criterion.h>

#include <math.h>

Test(fp4_scales, e8m0_halved) {
    cr_expect_eq(oxl_e8m0_to_fp32_half(0), ldexpf(1.0f, -128));
    cr_expect_eq(oxl_e8m0_to_fp32_half(1), ldexpf(1.0f, -127));
    cr_expect_eq(oxl_e8m0_to_fp32_half(2), ldexpf(1.0f, -126));
    cr_expect_eq(oxl_e8m0_to_fp32_half(127), 0.5f);
    cr_expect_eq(oxl_e8m0_to_fp32_half(128), 1.0f);
    cr_expect_eq(oxl_e8m0_to_fp32_half(254), ldexpf(1.0f, 126));
}

Test(fp4_scales, ue4m3_halved) {
    cr_expect_eq(oxl_ue4m3_to_fp32_half(0x00), 0.0f);
    cr_expect_eq(oxl_ue4m3_to_fp32_half(0x7f), 0.0f);
    cr_expect_eq(oxl_ue4m3_to_fp32_half(0x01), ldexpf(1.0f, -10)); /* subnormal 1 * 2^-9, halved */
    cr_expect_eq(oxl_ue4m3_to_fp32_half(0x07), 7.0f * ldexpf(1.0f, -10));
    cr_expect_eq(oxl_ue4m3_to_fp32_half(0x08), ldexpf(1.0f, -7)); /* 2^-6, halved */
    cr_expect_eq(oxl_ue4m3_to_fp32_half(0x38), 0.5f);             /* 1.0 */
    cr_expect_eq(oxl_ue4m3_to_fp32_half(0x3c), 0.75f);            /* 1.5 */
    cr_expect_eq(oxl_ue4m3_to_fp32_half(0x7e), 224.0f);           /* 448, the largest */
}

Test(fp4_scales, fp32_to_ue4m3) {
    cr_expect_eq(oxl_fp32_to_ue4m3(0.0f), 0);
    cr_expect_eq(oxl_fp32_to_ue4m3(-1.0f), 0);
    cr_expect_eq(oxl_fp32_to_ue4m3(NAN), 0);
    cr_expect_eq(oxl_fp32_to_ue4m3(1.0f), 0x38);
    cr_expect_eq(oxl_fp32_to_ue4m3(1.5f), 0x3c);
    cr_expect_eq(oxl_fp32_to_ue4m3(1.0625f), 0x39); /* half a step: rounds up */
    cr_expect_eq(oxl_fp32_to_ue4m3(1.9375f), 0x40); /* rounds up into the next exponent: 2.0 */
    cr_expect_eq(oxl_fp32_to_ue4m3(448.0f), 0x7e);
    cr_expect_eq(oxl_fp32_to_ue4m3(1000.0f), 0x7e); /* clamped */
    cr_expect_eq(oxl_fp32_to_ue4m3(480.0f), 0x7e);
    cr_expect_eq(oxl_fp32_to_ue4m3(ldexpf(1.0f, -9)), 0x01);   /* subnormal */
    cr_expect_eq(oxl_fp32_to_ue4m3(ldexpf(1.0f, -11)), 0x00);  /* rounds to 0 */
    cr_expect_eq(oxl_fp32_to_ue4m3(ldexpf(1.0f, -10)), 0x01);  /* round(0.5) = 1 */
    cr_expect_eq(oxl_fp32_to_ue4m3(ldexpf(15.0f, -10)), 0x07); /* 7.5 * 2^-9: round to 8, capped at 7 */
}
