/* The importance-matrix accumulator (src/quantize/imatrix_collect.h) with hand-made products: which
 * ones llama-imatrix's collect_imatrix keeps (blk.* weights over >= 16 columns, output.weight only
 * with --process-output, experts always, one count per expert, a batched 3-D product's columns
 * counted once), the sums of squares against values computed here in double, and both writers read
 * back by the importance-matrix reader (src/quantize/imatrix.h): weights = sum / count, 1 where an
 * expert saw no token. */
#include "imatrix.h"
#include "imatrix_collect.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define K 4     /* row length of the fake weights */
#define COLS 16 /* llama-imatrix's smallest collected batch */

static oxl_tensor weight(const char *name, int32_t slice, int32_t n_slice) {
    return (oxl_tensor){.name = name, .type = OXL_TYPE_F32, .ne = {K, 2}, .slice = slice, .n_slice = n_slice};
}

/* Column c of a product: (c + 1) * (j + 1) / 8 + offset. */
static void columns(float *x, int n, float offset) {
    for (int c = 0; c < n; c++) {
        for (int j = 0; j < K; j++) {
            x[c * K + j] = (float)(c + 1) * (float)(j + 1) / 8.0f + offset;
        }
    }
}

/* sum over n such columns of x[j]^2, in double */
static double sum_sq(int n, float offset, int j) {
    double s = 0.0;
    for (int c = 0; c < n; c++) {
        const double v = (c + 1) * (j + 1) / 8.0 + offset;
        s += v * v;
    }
    return s;
}

static void expect_weights(const oxl_imatrix *m, const char *name, const double *want, size_t n, const char *what) {
    size_t got_n = 0;
    const float *w = oxl_imatrix_find(m, name, &got_n);
    cr_assert_not_null(w, "%s: %s missing", what, name);
    cr_assert_eq(got_n, n, "%s: %s has %zu weights, want %zu", what, name, got_n, n);
    for (size_t i = 0; i < n; i++) {
        cr_expect(fabs(w[i] - want[i]) <= 1e-6 * fabs(want[i]), "%s: %s[%zu] = %.9g, want %.9g", what, name, i, w[i],
                  want[i]);
    }
}

Test(imatrix_collect, filters_sums_counts_and_both_layouts_read_back) {
    oxl_error err = {{0}};
    oxl_imatrix_acc *acc = oxl_imatrix_acc_new(false, &err);
    cr_assert_not_null(acc, "%s", err.msg);
    float x[2 * COLS * K];

    /* a plain blk.* weight: two products of 16 columns; one of 15 is ignored */
    const oxl_tensor q = weight("blk.0.attn_q.weight", 0, 0);
    columns(x, COLS, 0.0f);
    oxl_imatrix_acc_observe(acc, &q, x, COLS);
    columns(x, COLS, 1.0f);
    oxl_imatrix_acc_observe(acc, &q, x, COLS);
    oxl_imatrix_acc_observe(acc, &q, x, COLS - 1);
    /* not blk.*: ignored; output.weight only with --process-output */
    const oxl_tensor emb = weight("token_embd.weight", 0, 0), out = weight("output.weight", 0, 0);
    oxl_imatrix_acc_observe(acc, &emb, x, COLS);
    oxl_imatrix_acc_observe(acc, &out, x, COLS);
    /* experts of a *_exps tensor: any number of columns, a count per expert (expert 1: 3 tokens) */
    const oxl_tensor e1 = weight("blk.0.ffn_up_exps.weight", 1, 3);
    columns(x, 3, 0.5f);
    oxl_imatrix_acc_observe(acc, &e1, x, 3);
    /* a batched 3-D product (MLA's k_b: one call per head here): its columns counted once */
    const oxl_tensor h0 = weight("blk.0.attn_k_b.weight", 0, 2), h1 = weight("blk.0.attn_k_b.weight", 1, 2);
    columns(x, COLS, 0.0f);
    oxl_imatrix_acc_observe(acc, &h0, x, COLS);
    columns(x, COLS, 2.0f);
    oxl_imatrix_acc_observe(acc, &h1, x, COLS);

    cr_assert_eq(oxl_imatrix_acc_check(acc, &err), 0, "%s", err.msg);
    cr_expect_eq(oxl_imatrix_acc_n_entries(acc), 3, "attn_q, ffn_up_exps, attn_k_b");
    cr_expect_eq(oxl_imatrix_acc_chunk_count(acc, 8), 4, "max count 32 / 8");

    double want_q[K], want_e[3 * K], want_h[2 * K];
    for (int j = 0; j < K; j++) {
        want_q[j] = (sum_sq(COLS, 0.0, j) + sum_sq(COLS, 1.0, j)) / (2 * COLS);
        want_e[j] = 1.0;
        want_e[K + j] = sum_sq(3, 0.5, j) / 3;
        want_e[2 * K + j] = 1.0;
        want_h[j] = sum_sq(COLS, 0.0, j) / COLS;
        want_h[K + j] = sum_sq(COLS, 2.0, j) / COLS;
    }
    char dir[] = "/tmp/oxl-imatrix-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char gguf[64], dat[64];
    snprintf(gguf, sizeof gguf, "%s/m.gguf", dir);
    snprintf(dat, sizeof dat, "%s/m.dat", dir);
    const char *datasets[] = {"text.txt"};
    cr_assert_eq(oxl_imatrix_write_gguf(acc, gguf, datasets, 1, 8, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_imatrix_write_dat(acc, dat, "text.txt", 8, &err), 0, "%s", err.msg);
    const char *paths[] = {gguf, dat};
    for (int i = 0; i < 2; i++) {
        oxl_imatrix *m = oxl_imatrix_load(paths[i], &err);
        cr_assert_not_null(m, "%s: %s", paths[i], err.msg);
        cr_expect_eq(oxl_imatrix_n_entries(m), 3, "%s", paths[i]);
        cr_expect_eq(oxl_imatrix_chunk_count(m), 4, "%s", paths[i]);
        cr_expect_str_eq(oxl_imatrix_dataset(m), "text.txt", "%s", paths[i]);
        expect_weights(m, "blk.0.attn_q.weight", want_q, K, paths[i]);
        expect_weights(m, "blk.0.ffn_up_exps.weight", want_e, 3 * K, paths[i]);
        expect_weights(m, "blk.0.attn_k_b.weight", want_h, 2 * K, paths[i]);
        size_t n = 0;
        cr_expect_null(oxl_imatrix_find(m, "token_embd.weight", &n), "%s", paths[i]);
        cr_expect_null(oxl_imatrix_find(m, "output.weight", &n), "%s", paths[i]);
        oxl_imatrix_free(m);
        remove(paths[i]);
    }
    rmdir(dir);
    oxl_imatrix_acc_free(acc);
}

Test(imatrix_collect, process_output_and_non_finite_sums) {
    oxl_error err = {{0}};
    oxl_imatrix_acc *acc = oxl_imatrix_acc_new(true, &err);
    cr_assert_not_null(acc, "%s", err.msg);
    float x[COLS * K];
    columns(x, COLS, 0.0f);
    const oxl_tensor out = weight("output.weight", 0, 0);
    oxl_imatrix_acc_observe(acc, &out, x, COLS);
    cr_expect_eq(oxl_imatrix_acc_n_entries(acc), 1, "output.weight with --process-output");
    cr_expect_eq(oxl_imatrix_acc_check(acc, &err), 0, "%s", err.msg);
    x[5] = INFINITY;
    oxl_imatrix_acc_observe(acc, &out, x, COLS);
    cr_expect_eq(oxl_imatrix_acc_check(acc, &err), -1);
    cr_expect(strstr(err.msg, "inf detected in output.weight") != NULL, "%s", err.msg);
    /* the same weight with another row length is refused, not mixed */
    const oxl_tensor wide = {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {2 * K, 2}};
    float y[COLS * 2 * K] = {0};
    oxl_imatrix_acc *acc2 = oxl_imatrix_acc_new(true, &err);
    oxl_imatrix_acc_observe(acc2, &out, x, COLS);
    oxl_imatrix_acc_observe(acc2, &wide, y, COLS);
    cr_expect_eq(oxl_imatrix_acc_check(acc2, &err), -1);
    cr_expect(strstr(err.msg, "two different shapes") != NULL, "%s", err.msg);
    oxl_imatrix_acc_free(acc2);
    oxl_imatrix_acc_free(acc);
}
