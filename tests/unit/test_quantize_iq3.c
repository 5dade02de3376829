/* IQ3_XXS and IQ3_S quantizers beyond the golden rows: a non-finite value is a named error (ggml
 * aborts on it), and a row whose weights overflow to infinity (where ggml's grid search finds no
 * point and aborts) quantizes to grid points. */
#include "oxl_blocks.h"
#include "quantize.h"

#include <criterion/criterion.h>

#include <math.h>
#include <string.h>

Test(quantize_iq3, non_finite_row_is_a_named_error) {
    static float x[2 * 256];
    for (int i = 0; i < 512; i++) {
        x[i] = sinf((float)i);
    }
    static uint8_t y[2 * 110];
    const oxl_type types[] = {OXL_TYPE_IQ3_XXS, OXL_TYPE_IQ3_S};
    const char *names[] = {"iq3_xxs", "iq3_s"};
    for (int t = 0; t < 2; t++) {
        oxl_error err = {{0}};
        x[256 + 77] = t ? -INFINITY : NAN;
        cr_assert_eq(oxl_quantize_rows(types[t], x, y, 2, 256, NULL, &err), -1);
        cr_expect(strstr(err.msg, names[t]) && strstr(err.msg, "row 1") && strstr(err.msg, "column 77"), "message: %s",
                  err.msg);
    }
}

Test(quantize_iq3, overflowing_weights_give_grid_points) {
    static float x[256];
    for (int i = 0; i < 256; i++) {
        x[i] = (i % 3 ? 3e38f : -2e38f) / (float)((i % 7) + 1);
    }
    oxl_block_iq3_xxs yx;
    oxl_block_iq3_s ys;
    oxl_error err = {{0}};
    cr_assert_eq(oxl_quantize_rows(OXL_TYPE_IQ3_XXS, x, &yx, 1, 256, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_quantize_rows(OXL_TYPE_IQ3_S, x, &ys, 1, 256, NULL, &err), 0, "%s", err.msg);
    /* IQ3_S keeps every sign: bit j of signs[k] is x[8k + j] < 0 */
    for (int k = 0; k < 32; k++) {
        uint8_t want = 0;
        for (int j = 0; j < 8; j++) {
            want |= (uint8_t)((x[8 * k + j] < 0) << j);
        }
        cr_expect_eq(ys.signs[k], want, "signs[%d] = %#x, want %#x", k, ys.signs[k], want);
    }
}
