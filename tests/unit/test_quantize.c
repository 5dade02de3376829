/* Reference quantizers against golden/quant (ggml_quantize_chunk's bytes: q without and q_imatrix
 * with the importance matrix), the whole quant golden runner on each file, and refusal of
 * non-finite input and bad row lengths. */
#include "golden_quant.h"
#include "oxl_blocks.h"
#include "quantize.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A few formats with kernels, one of each kind (the golden-quant ctest runs every file): the whole
 * golden runner applies. */
static const char *const quant_golden_files[] = {"f16", "bf16", "q8_0", "q4_0"};
/* Every format with a reference quantizer and a golden file (the spec: generated/oxl_format_facts.inc). */
static const char *const quant_reference_files[] = {
#define OXL_FORMAT_FACTS(name, NAME, dequant, vec_dot, quantizer, golden) quantizer &&golden ? #name : NULL,
#include "oxl_format_facts.inc"
#undef OXL_FORMAT_FACTS
};

static oxl_gguf *open_quant_golden(const char *fmt) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/quant/%s.gguf", OXL_SOURCE_DIR, fmt);
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    return g;
}

Test(quantize, reference_bytes_equal_golden_q_and_q_imatrix) {
    int n_files = 0;
    for (size_t i = 0; i < sizeof quant_reference_files / sizeof quant_reference_files[0]; i++) {
        if (quant_reference_files[i] == NULL) {
            continue;
        }
        n_files++;
        oxl_gguf *g = open_quant_golden(quant_reference_files[i]);
        oxl_quant_golden qg;
        oxl_error err = {{0}};
        cr_assert_eq(oxl_quant_golden_read(g, &qg, &err), 0, "%s", err.msg);
        oxl_golden_report r = {stderr, 0, 0};
        oxl_golden_check_reference_quant(&qg, &r);
        cr_expect(r.n_pass == 2 && r.n_fail == 0, "%s: %d of 2 reference checks failed", quant_reference_files[i],
                  r.n_fail);
        oxl_gguf_close(g);
    }
    cr_expect_geq(n_files, 14, "the spec lists %d formats with a quantizer and a golden file", n_files);
}

Test(quantize, golden_runner_passes_every_file) {
    for (size_t i = 0; i < sizeof quant_golden_files / sizeof quant_golden_files[0]; i++) {
        oxl_gguf *g = open_quant_golden(quant_golden_files[i]);
        oxl_error err = {{0}};
        oxl_golden_report r = {NULL, 0, 0};
        cr_assert_eq(oxl_golden_quant(g, &r, &err), 0, "%s", err.msg);
        cr_expect(r.n_pass > 0 && r.n_fail == 0, "%s: %d checks failed", quant_golden_files[i], r.n_fail);
        oxl_gguf_close(g);
    }
}

Test(quantize, non_finite_input_names_row_and_column) {
    float x[2 * 32];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)i / 7.0f;
    }
    x[32 + 5] = NAN;
    oxl_block_q4_0 y[2];
    oxl_error err = {{0}};
    cr_assert_eq(oxl_quantize_rows(OXL_TYPE_Q4_0, x, y, 2, 32, NULL, &err), -1);
    cr_expect(strstr(err.msg, "row 1") && strstr(err.msg, "column 5"), "message: %s", err.msg);
    x[32 + 5] = INFINITY;
    cr_assert_eq(oxl_quantize_rows(OXL_TYPE_Q8_0, x, y, 2, 32, NULL, &err), -1);
    cr_expect(strstr(err.msg, "q8_0") != NULL, "message: %s", err.msg);
}

Test(quantize, refuses_partial_blocks_and_unsupported_types) {
    float x[48] = {0};
    uint8_t y[64];
    oxl_error err = {{0}};
    cr_assert_eq(oxl_quantize_rows(OXL_TYPE_Q8_0, x, y, 1, 48, NULL, &err), -1);
    cr_expect(strstr(err.msg, "48") != NULL, "message: %s", err.msg);
    cr_assert_eq(oxl_quantize_rows(OXL_TYPE_IQ2_XXS, x, y, 1, 256, NULL, &err), -1);
    cr_expect(strstr(err.msg, "iq2_xxs") != NULL, "message: %s", err.msg);
    /* iq1_s without an importance matrix (ggml asserts there); iq1_m falls back to x^2 weights */
    float x256[256] = {1.0f};
    uint8_t y256[64];
    cr_assert_eq(oxl_quantize_rows(OXL_TYPE_IQ1_S, x256, y256, 1, 256, NULL, &err), -1);
    cr_expect(strstr(err.msg, "importance matrix") != NULL, "message: %s", err.msg);
    cr_expect_eq(oxl_quantize_rows(OXL_TYPE_IQ1_M, x256, y256, 1, 256, NULL, &err), 0, "%s", err.msg);
}

/* Finite input of any magnitude (the largest floats, subnormals, mixed signs, constant rows) must
 * quantize without a crash in every format, with and without an importance matrix. */
Test(quantize, extreme_finite_input_never_crashes) {
    enum { NE0 = 256, NROWS = 6 };
    static float x[NROWS * NE0];
    float imatrix[NE0];
    for (int j = 0; j < NE0; j++) {
        x[0 * NE0 + j] = (j & 1) ? 3.4e38f : -3.4e38f;
        x[1 * NE0 + j] = (j % 3) ? 1e-45f : -1e-44f;
        x[2 * NE0 + j] = 7.0f;
        x[3 * NE0 + j] = j == 17 ? 3e38f : 1e-30f * (float)j;
        x[4 * NE0 + j] = 0.0f;
        x[5 * NE0 + j] = -65504.0f * (float)(j % 5);
        imatrix[j] = j % 4 ? 1e30f : 0.0f;
    }
    static uint8_t y[NROWS * NE0 * 4];
    int n_types = 0;
    for (int t = 0; t < OXL_TYPE_COUNT; t++) {
        if (!oxl_quantize_supported((oxl_type)t)) {
            continue;
        }
        n_types++;
        oxl_error err = {{0}};
        cr_expect_eq(oxl_quantize_rows((oxl_type)t, x, y, NROWS, NE0, NULL, &err),
                     oxl_quantize_requires_imatrix((oxl_type)t) ? -1 : 0, "%s", err.msg);
        cr_expect_eq(oxl_quantize_rows((oxl_type)t, x, y, NROWS, NE0, imatrix, &err), 0, "%s", err.msg);
    }
    cr_expect_geq(n_types, 15);
}

/* Random finite bit patterns (every exponent, subnormals, both signs), as rows and as importance
 * weights: no format may crash on them. */
Test(quantize, random_finite_bit_patterns_never_crash) {
    enum { NE0 = 256, NROWS = 64 };
    static float x[NROWS * NE0];
    float imatrix[NE0];
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < NROWS * NE0 + NE0; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        uint32_t bits = (uint32_t)(s >> 32);
        if ((bits & 0x7f800000u) == 0x7f800000u) {
            bits &= ~0x00800000u; /* not inf/NaN */
        }
        float f;
        memcpy(&f, &bits, sizeof f);
        if (i < NROWS * NE0) {
            x[i] = (i / NE0) % 4 == 0 ? f * 1e-30f : f; /* some rows of tiny values */
        } else {
            imatrix[i - NROWS * NE0] = fabsf(f);
        }
    }
    static uint8_t y[NROWS * NE0 * 4];
    for (int t = 0; t < OXL_TYPE_COUNT; t++) {
        if (!oxl_quantize_supported((oxl_type)t)) {
            continue;
        }
        oxl_error err = {{0}};
        cr_expect_eq(oxl_quantize_rows((oxl_type)t, x, y, NROWS, NE0, NULL, &err),
                     oxl_quantize_requires_imatrix((oxl_type)t) ? -1 : 0, "%s", err.msg);
        cr_expect_eq(oxl_quantize_rows((oxl_type)t, x, y, NROWS, NE0, imatrix, &err), 0, "%s", err.msg);
    }
}
