/* The 2-bit I-quant quantizers' refusals (their bytes are checked against golden/quant by
 * test_quantize.c's generated list): a row holding NaN or Inf is a named error, not ggml's abort,
 * and iq2_xxs / iq2_xs without an importance matrix are refused as ggml_quantize_requires_imatrix
 * says (ggml asserts there); iq2_s quantizes without one. */
#include "quantize.h"

#include <criterion/criterion.h>

#include <math.h>
#include <string.h>

static float row[2 * 256], imat[256];
static uint8_t out[2 * 82];

static void fill(void) {
    for (int i = 0; i < 2 * 256; i++) {
        row[i] = sinf(0.37f * (float)i) * (1.0f + (float)(i % 7));
    }
    for (int i = 0; i < 256; i++) {
        imat[i] = 1.0f + (float)(i % 5);
    }
}

Test(quantize_iq2, non_finite_row_is_a_named_error) {
    static const oxl_type types[] = {OXL_TYPE_IQ2_XXS, OXL_TYPE_IQ2_XS, OXL_TYPE_IQ2_S};
    static const float bad[] = {NAN, INFINITY, -INFINITY};
    for (size_t t = 0; t < 3; t++) {
        for (size_t b = 0; b < 3; b++) {
            fill();
            row[256 + 17] = bad[b];
            oxl_error err = {0};
            cr_expect_lt(oxl_quantize_rows(types[t], row, out, 2, 256, imat, &err), 0);
            cr_expect_not_null(strstr(err.msg, "row 1 column 17"), "%s", err.msg);
            cr_expect_not_null(strstr(err.msg, "not finite"), "%s", err.msg);
        }
    }
}

Test(quantize_iq2, xxs_and_xs_require_an_imatrix) {
    fill();
    oxl_error err = {0};
    cr_expect_lt(oxl_quantize_rows(OXL_TYPE_IQ2_XXS, row, out, 1, 256, NULL, &err), 0);
    cr_expect_not_null(strstr(err.msg, "requires an importance matrix"), "%s", err.msg);
    memset(&err, 0, sizeof err);
    cr_expect_lt(oxl_quantize_rows(OXL_TYPE_IQ2_XS, row, out, 1, 256, NULL, &err), 0);
    cr_expect_not_null(strstr(err.msg, "requires an importance matrix"), "%s", err.msg);
    cr_expect_eq(oxl_quantize_rows(OXL_TYPE_IQ2_S, row, out, 2, 256, NULL, &err), 0, "%s", err.msg);
    cr_expect_eq(oxl_quantize_rows(OXL_TYPE_IQ2_XXS, row, out, 2, 256, imat, &err), 0, "%s", err.msg);
}
