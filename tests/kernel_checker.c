/* Kernel checks against the quant goldens; see kernel_checker.h. */
#include "kernel_checker.h"

#include "golden_quant.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The golden file whose q (dequant, vec_dot) or yq (quant) is in `type`. */
typedef struct oxl_checker_golden {
    oxl_gguf *g;
    oxl_quant_golden qg;
} oxl_checker_golden;

static void oxl_checker_open(oxl_checker_golden *cg, oxl_type type, oxl_isa isa) {
    if (!oxl_cpu_has_isa(isa)) {
        cr_skip_test("this CPU has no %s", oxl_isa_name(isa));
    }
    /* f32 has no golden file of its own: it borrows the f32 tensors x and y of f16's */
    const char *fmt = type == OXL_TYPE_F32 ? "f16" : oxl_type_traits_get(type)->name;
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/quant/%s.gguf", OXL_SOURCE_DIR, fmt);
    oxl_error err = {{0}};
    cg->g = oxl_gguf_open(path, &err);
    cr_assert(cg->g != NULL, "%s", err.msg);
    cr_assert(oxl_quant_golden_read(cg->g, &cg->qg, &err) == 0, "%s", err.msg);
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
    oxl_golden_check_dequant(&cg.qg, fn, name, &r);
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

void oxl_check_vec_dot(oxl_type type, oxl_isa isa, oxl_vec_dot_fn fn, const char *name) {
    oxl_checker_golden cg;
    oxl_checker_open(&cg, type, isa);
    oxl_golden_report r = {stderr, 0, 0};
    if (type == OXL_TYPE_F32) {
        oxl_check_vec_dot_f32(&cg.qg, fn, name, &r);
    } else {
        oxl_golden_check_vec_dot(&cg.qg, fn, name, &r);
    }
    oxl_checker_finish(&cg, &r, name);
}
