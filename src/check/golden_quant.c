/* golden.kind = quant: every generated kernel cell this CPU supports, and the reference quantizer,
 * against the outputs of llama.cpp's CPU backend stored in the golden file. */
#include "golden_quant.h"

#include "errors.h"
#include "oxl_kernel_decls.h"
#include "quantize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OXL_DOT_TOLERANCE 1e-5
/* dot_f64 is a double sum rounded to float: a sum of the same terms agrees to float precision */
#define OXL_DOT_F64_TOLERANCE 1e-7

/* Tensor `name` with the given type and shape (ne1 = 0: a vector of ne0): 1 with its data in *out,
 * 0 when absent, -1 with err when present with another type or shape. */
static int oxl_quant_tensor(const oxl_gguf *g, const char *name, oxl_type type, int64_t ne0, int64_t ne1,
                            const void **out, oxl_error *err) {
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, name);
    if (t == NULL) {
        return 0;
    }
    const int64_t want_ne1 = ne1 ? ne1 : 1;
    if (t->type != (uint32_t)type || t->ne[0] != ne0 || t->ne[1] != want_ne1 || t->ne[2] != 1 || t->ne[3] != 1) {
        const oxl_type_traits *tr = oxl_type_traits_get(t->type);
        return oxl_err_set(err, "%s: tensor '%s' is %s (%lld, %lld, %lld, %lld), expected %s (%lld, %lld)",
                           oxl_gguf_path(g), name, tr ? tr->name : "unknown", (long long)t->ne[0], (long long)t->ne[1],
                           (long long)t->ne[2], (long long)t->ne[3], oxl_type_traits_get(type)->name, (long long)ne0,
                           (long long)want_ne1);
    }
    *out = t->data;
    return 1;
}

static int oxl_quant_required(const oxl_gguf *g, const char *name, oxl_type type, int64_t ne0, int64_t ne1,
                              const void **out, oxl_error *err) {
    const int rc = oxl_quant_tensor(g, name, type, ne0, ne1, out, err);
    if (rc == 0) {
        return oxl_err_set(err, "%s: missing tensor '%s'", oxl_gguf_path(g), name);
    }
    return rc < 0 ? -1 : 0;
}

static int oxl_quant_type_key(const oxl_gguf *g, const char *key, oxl_type *out, oxl_error *err) {
    int64_t id = 0;
    const int rc = oxl_gguf_get_int(g, key, &id, err);
    if (rc <= 0) {
        return rc;
    }
    if (id < 0 || id > UINT32_MAX || oxl_type_traits_get((uint32_t)id) == NULL) {
        return oxl_err_set(err, "%s: %s = %lld is not a ggml type id", oxl_gguf_path(g), key, (long long)id);
    }
    *out = (oxl_type)id;
    return 1;
}

int oxl_quant_golden_read(const oxl_gguf *g, oxl_quant_golden *qg, oxl_error *err) {
    memset(qg, 0, sizeof *qg);
    qg->path = oxl_gguf_path(g);
    const int has_type = oxl_quant_type_key(g, "golden.type_id", &qg->type, err);
    if (has_type <= 0) {
        return has_type < 0 ? -1 : oxl_err_set(err, "%s: missing key golden.type_id", qg->path);
    }
    const int has_yq = oxl_quant_type_key(g, "golden.vec_dot_type_id", &qg->yq_type, err);
    if (has_yq < 0 || oxl_gguf_get_bool(g, "golden.requires_imatrix", &qg->requires_imatrix, err) < 0) {
        return -1;
    }
    const oxl_gguf_tensor *x = oxl_gguf_find_tensor(g, "x");
    if (x == NULL) {
        return oxl_err_set(err, "%s: missing tensor 'x'", qg->path);
    }
    const oxl_type_traits *tr = oxl_type_traits_get(qg->type);
    qg->ne0 = x->ne[0];
    qg->nrows = x->ne[1];
    if (qg->ne0 <= 0 || qg->ne0 % tr->blck_size != 0) {
        return oxl_err_set(err, "%s: tensor 'x' row length %lld is not a multiple of %s's block size %lld", qg->path,
                           (long long)qg->ne0, tr->name, (long long)tr->blck_size);
    }
    const int64_t ne0 = qg->ne0, nr = qg->nrows;
    const void *p = NULL;
    if (oxl_quant_required(g, "x", OXL_TYPE_F32, ne0, nr, &p, err) < 0) {
        return -1;
    }
    qg->x = p;
    if (oxl_quant_required(g, "imatrix", OXL_TYPE_F32, ne0, 0, &p, err) < 0) {
        return -1;
    }
    qg->imatrix = p;
    if (oxl_quant_required(g, "q", qg->type, ne0, nr, &qg->q, err) < 0 ||
        oxl_quant_required(g, "q_imatrix", qg->type, ne0, nr, &qg->q_imatrix, err) < 0) {
        return -1;
    }
    /* y, dq, yq and the dots exist only for formats with a vec_dot (not for q8_1, q8_K) */
    const void *y = NULL, *dq = NULL, *dot = NULL, *dot_f64 = NULL;
    if (oxl_quant_tensor(g, "y", OXL_TYPE_F32, ne0, nr, &y, err) < 0 ||
        oxl_quant_tensor(g, "dq", OXL_TYPE_F32, ne0, nr, &dq, err) < 0 ||
        (has_yq && oxl_quant_tensor(g, "yq", qg->yq_type, ne0, nr, &qg->yq, err) < 0) ||
        oxl_quant_tensor(g, "dot", OXL_TYPE_F32, nr, 0, &dot, err) < 0 ||
        oxl_quant_tensor(g, "dot_f64", OXL_TYPE_F32, nr, 0, &dot_f64, err) < 0) {
        return -1;
    }
    qg->y = y;
    qg->dq = dq;
    qg->dot = dot;
    qg->dot_f64 = dot_f64;
    return 0;
}

/* First difference of two rows of `size` bytes, or -1. */
static int64_t oxl_first_diff(const void *a, const void *b, size_t size) {
    const uint8_t *pa = a, *pb = b;
    for (size_t i = 0; i < size; i++) {
        if (pa[i] != pb[i]) {
            return (int64_t)i;
        }
    }
    return -1;
}

/* Compares nrows rows of row_size bytes; one line: where the first difference is, or success. */
static void oxl_compare_rows(const oxl_quant_golden *qg, const void *got, const void *want, size_t row_size,
                             size_t elem_size, const char *what, const char *name, oxl_golden_report *r) {
    int bad_rows = 0;
    int64_t first_row = -1, first_byte = -1;
    for (int64_t row = 0; row < qg->nrows; row++) {
        const int64_t at =
            oxl_first_diff((const uint8_t *)got + row * row_size, (const uint8_t *)want + row * row_size, row_size);
        if (at >= 0) {
            if (bad_rows++ == 0) {
                first_row = row;
                first_byte = at;
            }
        }
    }
    if (bad_rows == 0) {
        oxl_golden_line(r, true, "%s  %s: %lld rows identical", name, what, (long long)qg->nrows);
    } else {
        oxl_golden_line(r, false, "%s  %s: %d/%lld rows differ, first at row %lld byte %lld (element %lld)", name, what,
                        bad_rows, (long long)qg->nrows, (long long)first_row, (long long)first_byte,
                        (long long)(first_byte / (int64_t)elem_size));
    }
}

void oxl_golden_check_dequant(const oxl_quant_golden *qg, oxl_dequant_fn fn, const char *name, oxl_golden_report *r) {
    if (qg->dq == NULL) {
        oxl_golden_line(r, false, "%s  %s has no tensor 'dq'", name, qg->path);
        return;
    }
    const size_t row_size = oxl_row_size(qg->type, qg->ne0);
    float *out = malloc((size_t)(qg->ne0 * qg->nrows) * sizeof(float));
    if (out == NULL) {
        oxl_golden_line(r, false, "%s  out of memory", name);
        return;
    }
    for (int64_t row = 0; row < qg->nrows; row++) {
        fn((const uint8_t *)qg->q + row * row_size, out + row * qg->ne0, qg->ne0);
    }
    /* An overflowed f16 scale (inf) gives NaN where a level is 0: x86 makes its default NaN negative,
     * AArch64 positive. NaN against NaN is the same class; every other value must be bit-exact. */
    for (int64_t i = 0; i < qg->ne0 * qg->nrows; i++) {
        if (isnan(out[i]) && isnan(qg->dq[i])) {
            out[i] = qg->dq[i];
        }
    }
    oxl_compare_rows(qg, out, qg->dq, (size_t)qg->ne0 * sizeof(float), sizeof(float), "dequant == dq bit-exact", name,
                     r);
    free(out);
}

void oxl_golden_check_quant(const oxl_quant_golden *qg, oxl_quant_fn fn, const char *name, oxl_golden_report *r) {
    if (qg->y == NULL || qg->yq == NULL) {
        oxl_golden_line(r, false, "%s  %s has no tensors 'y' and 'yq'", name, qg->path);
        return;
    }
    const oxl_type_traits *tr = oxl_type_traits_get(qg->yq_type);
    const size_t row_size = oxl_row_size(qg->yq_type, qg->ne0);
    uint8_t *out = malloc(row_size * (size_t)qg->nrows);
    if (out == NULL) {
        oxl_golden_line(r, false, "%s  out of memory", name);
        return;
    }
    for (int64_t row = 0; row < qg->nrows; row++) {
        fn(qg->y + row * qg->ne0, out + (size_t)row * row_size, qg->ne0);
    }
    oxl_compare_rows(qg, out, qg->yq, row_size, tr->type_size, "quant(y) == yq byte-identical", name, r);
    free(out);
}

/* Same class for non-finite values: both NaN, or equal infinities. */
static bool oxl_same_class(double a, double b) { return (isnan(a) && isnan(b)) || (isinf(a) && a == b); }

/* got[row] (the kernel's dot of q row with yq row, computed by `what`) against the golden dot. */
static void oxl_compare_dots(const oxl_quant_golden *qg, const float *got_rows, const char *what, const char *name,
                             oxl_golden_report *r) {
    /* |terms| need yq as floats: its scalar dequantizer (checked bit-exact by its own cells) */
    oxl_kernels scalar;
    oxl_kernels_build(&scalar, OXL_ISA_SCALAR);
    if (scalar.dequant[qg->yq_type] == NULL) {
        oxl_golden_line(r, false, "%s  no dequantizer for the activation format %s", name,
                        oxl_type_traits_get(qg->yq_type)->name);
        return;
    }
    float *yf = malloc((size_t)qg->ne0 * sizeof(float));
    if (yf == NULL) {
        oxl_golden_line(r, false, "%s  out of memory", name);
        return;
    }
    const size_t y_row = oxl_row_size(qg->yq_type, qg->ne0);
    double worst = 0.0, worst_f64 = 0.0;
    int bad_rows = 0;
    int64_t first_bad = -1;
    for (int64_t row = 0; row < qg->nrows; row++) {
        const void *yq = (const uint8_t *)qg->yq + row * y_row;
        const float got = got_rows[row];
        scalar.dequant[qg->yq_type](yq, yf, qg->ne0);
        double abs_terms = 0.0;
        for (int64_t i = 0; i < qg->ne0; i++) {
            abs_terms += fabs((double)qg->dq[row * qg->ne0 + i] * (double)yf[i]);
        }
        const double want = qg->dot[row];
        bool ok;
        if (!isfinite(want)) {
            ok = oxl_same_class(got, want);
        } else if (!isfinite(got)) {
            ok = false;
        } else {
            const double rel = abs_terms > 0.0 ? fabs(got - want) / abs_terms : fabs(got - want);
            ok = rel <= OXL_DOT_TOLERANCE;
            worst = fmax(worst, rel);
            if (qg->dot_f64 != NULL && abs_terms > 0.0) {
                worst_f64 = fmax(worst_f64, fabs(got - (double)qg->dot_f64[row]) / abs_terms);
            }
        }
        if (!ok && bad_rows++ == 0) {
            first_bad = row;
        }
    }
    free(yf);
    if (bad_rows == 0) {
        oxl_golden_line(r, true, "%s  %s vs dot: %lld rows, max |Δ|/Σ|terms| = %.3g (vs dot_f64: %.3g; tolerance %g)",
                        name, what, (long long)qg->nrows, worst, worst_f64, OXL_DOT_TOLERANCE);
    } else {
        oxl_golden_line(r, false,
                        "%s  %s vs dot: %d/%lld rows out of tolerance %g, first row %lld; max |Δ|/Σ|terms| = %.3g",
                        name, what, bad_rows, (long long)qg->nrows, OXL_DOT_TOLERANCE, (long long)first_bad, worst);
    }
}

void oxl_golden_check_dequant_activation(const oxl_quant_golden *qg, oxl_dequant_fn fn, const char *name,
                                         oxl_golden_report *r) {
    if (qg->dq == NULL || qg->yq == NULL || qg->dot_f64 == NULL) {
        oxl_golden_line(r, false, "%s  %s has no tensors 'dq', 'yq' and 'dot_f64'", name, qg->path);
        return;
    }
    float *yf = malloc((size_t)qg->ne0 * sizeof(float));
    if (yf == NULL) {
        oxl_golden_line(r, false, "%s  out of memory", name);
        return;
    }
    const size_t y_row = oxl_row_size(qg->yq_type, qg->ne0);
    double worst = 0.0;
    int bad_rows = 0;
    for (int64_t row = 0; row < qg->nrows; row++) {
        fn((const uint8_t *)qg->yq + row * y_row, yf, qg->ne0);
        double sum = 0.0, abs_terms = 0.0;
        for (int64_t i = 0; i < qg->ne0; i++) {
            const double t = (double)qg->dq[row * qg->ne0 + i] * (double)yf[i];
            sum += t;
            abs_terms += fabs(t);
        }
        const double want = qg->dot_f64[row];
        bool ok;
        if (!isfinite(want) || !isfinite(sum)) {
            ok = oxl_same_class((float)sum, want);
        } else {
            const double rel = abs_terms > 0.0 ? fabs(sum - want) / abs_terms : fabs(sum - want);
            worst = fmax(worst, rel);
            ok = rel <= OXL_DOT_F64_TOLERANCE;
        }
        bad_rows += !ok;
    }
    free(yf);
    oxl_golden_line(r, bad_rows == 0,
                    "%s  sum of dq * dequant(yq) vs dot_f64: %lld/%lld rows, max |Δ|/Σ|terms| = %.3g (tolerance %g)",
                    name, (long long)(qg->nrows - bad_rows), (long long)qg->nrows, worst, OXL_DOT_F64_TOLERANCE);
}

void oxl_golden_check_vec_dot(const oxl_quant_golden *qg, oxl_vec_dot_fn fn, const char *name, oxl_golden_report *r) {
    if (qg->dq == NULL || qg->yq == NULL || qg->dot == NULL) {
        oxl_golden_line(r, false, "%s  %s has no tensors 'dq', 'yq' and 'dot'", name, qg->path);
        return;
    }
    float *got = malloc((size_t)qg->nrows * sizeof(float));
    if (got == NULL) {
        oxl_golden_line(r, false, "%s  out of memory", name);
        return;
    }
    const size_t x_row = oxl_row_size(qg->type, qg->ne0), y_row = oxl_row_size(qg->yq_type, qg->ne0);
    for (int64_t row = 0; row < qg->nrows; row++) {
        fn(qg->ne0, &got[row], (const uint8_t *)qg->q + row * x_row, (const uint8_t *)qg->yq + row * y_row);
    }
    oxl_compare_dots(qg, got, "vec_dot", name, r);
    free(got);
}

void oxl_golden_check_gemm(const oxl_quant_golden *qg, oxl_gemm_fn fn, const char *name, oxl_golden_report *r) {
    if (qg->dq == NULL || qg->yq == NULL || qg->dot == NULL) {
        oxl_golden_line(r, false, "%s  %s has no tensors 'dq', 'yq' and 'dot'", name, qg->path);
        return;
    }
    if (qg->ne0 % oxl_gemm_k_step(qg->type) != 0) {
        oxl_golden_line(r, false, "%s  rows of %lld are not a multiple of %lld", name, (long long)qg->ne0,
                        (long long)oxl_gemm_k_step(qg->type));
        return;
    }
    /* every q row times every yq row; the diagonal holds the golden's row pairs */
    float *c = malloc((size_t)qg->nrows * (size_t)qg->nrows * sizeof(float));
    float *got = malloc((size_t)qg->nrows * sizeof(float));
    if (c == NULL || got == NULL) {
        free(c);
        free(got);
        oxl_golden_line(r, false, "%s  out of memory", name);
        return;
    }
    fn(qg->ne0, qg->nrows, qg->nrows, qg->q, oxl_row_size(qg->type, qg->ne0), qg->yq,
       oxl_row_size(qg->yq_type, qg->ne0), c, qg->nrows);
    for (int64_t row = 0; row < qg->nrows; row++) {
        got[row] = c[row * qg->nrows + row];
    }
    oxl_compare_dots(qg, got, "gemm", name, r);
    free(c);
    free(got);
}

void oxl_golden_check_reference_quant(const oxl_quant_golden *qg, oxl_golden_report *r) {
    const oxl_type_traits *tr = oxl_type_traits_get(qg->type);
    if (!oxl_quantize_supported(qg->type)) {
        oxl_golden_line(r, false, "quantize %s: no reference quantizer", tr->name);
        return;
    }
    const size_t row_size = oxl_row_size(qg->type, qg->ne0);
    uint8_t *out = malloc(row_size * (size_t)qg->nrows);
    if (out == NULL) {
        oxl_golden_line(r, false, "quantize %s: out of memory", tr->name);
        return;
    }
    struct {
        const char *what;
        const float *imatrix;
        const void *want;
    } runs[2] = {
        {"q == quantize(x)", qg->requires_imatrix ? qg->imatrix : NULL, qg->q},
        {"q_imatrix == quantize(x, imatrix)", qg->imatrix, qg->q_imatrix},
    };
    char name[64];
    snprintf(name, sizeof name, "quantize %s", tr->name);
    for (int i = 0; i < 2; i++) {
        oxl_error err = {{0}};
        if (oxl_quantize_rows(qg->type, qg->x, out, qg->nrows, qg->ne0, runs[i].imatrix, &err) < 0) {
            oxl_golden_line(r, false, "%s  %s: %s", name, runs[i].what, err.msg);
            continue;
        }
        oxl_compare_rows(qg, out, runs[i].want, row_size, tr->type_size, runs[i].what, name, r);
    }
    free(out);
}

/* ---- the runner: every kernel cell of the list whose format the file covers ---- */

typedef enum oxl_cell_op {
#define X(op) OXL_CELL_##op,
    OXL_KERNEL_OPS(X)
#undef X
} oxl_cell_op;

static const struct {
    oxl_cell_op op;
    oxl_type type;
    oxl_isa isa;
    const char *name;
    union {
#define X(op) oxl_##op##_fn op;
        OXL_KERNEL_OPS(X)
#undef X
    } fn;
} oxl_cells[] = {
#define OXL_KERNEL(op, type, isa, fn) {OXL_CELL_##op, type, isa, #fn, {.op = fn}},
#include "oxl_kernel_list.inc"
#undef OXL_KERNEL
};

int oxl_golden_quant(const oxl_gguf *g, oxl_golden_report *r, oxl_error *err) {
    oxl_quant_golden qg;
    if (oxl_quant_golden_read(g, &qg, err) < 0) {
        return -1;
    }
    const char *tname = oxl_type_traits_get(qg.type)->name;
    bool any_dequant = false, any_dot = false;
    for (size_t i = 0; i < sizeof oxl_cells / sizeof oxl_cells[0]; i++) {
        /* the activation format's dequantizer is checked through the weight format's dot_f64 */
        const bool activation_dequant = oxl_cells[i].op == OXL_CELL_dequant && qg.yq != NULL && qg.yq_type != qg.type &&
                                        oxl_cells[i].type == qg.yq_type;
        const bool covers = oxl_cells[i].op == OXL_CELL_quant ? (qg.yq != NULL && oxl_cells[i].type == qg.yq_type)
                            : oxl_cells[i].op == OXL_CELL_dequant
                                ? (activation_dequant || (oxl_cells[i].type == qg.type && qg.dq != NULL))
                                : oxl_cells[i].type == qg.type;
        if (!covers) {
            continue;
        }
        any_dequant |= oxl_cells[i].op == OXL_CELL_dequant && !activation_dequant;
        any_dot |= oxl_cells[i].op == OXL_CELL_vec_dot;
        if (!oxl_cpu_has_isa(oxl_cells[i].isa)) {
            if (r->out) {
                fprintf(r->out, "SKIP  %s  this CPU has no %s\n", oxl_cells[i].name, oxl_isa_name(oxl_cells[i].isa));
            }
            continue;
        }
        switch (oxl_cells[i].op) {
        case OXL_CELL_dequant:
            if (activation_dequant) {
                oxl_golden_check_dequant_activation(&qg, oxl_cells[i].fn.dequant, oxl_cells[i].name, r);
            } else {
                oxl_golden_check_dequant(&qg, oxl_cells[i].fn.dequant, oxl_cells[i].name, r);
            }
            break;
        case OXL_CELL_quant: oxl_golden_check_quant(&qg, oxl_cells[i].fn.quant, oxl_cells[i].name, r); break;
        case OXL_CELL_vec_dot: oxl_golden_check_vec_dot(&qg, oxl_cells[i].fn.vec_dot, oxl_cells[i].name, r); break;
        case OXL_CELL_gemm: oxl_golden_check_gemm(&qg, oxl_cells[i].fn.gemm, oxl_cells[i].name, r); break;
        case OXL_CELL_swiglu:
        case OXL_CELL_mad:
        case OXL_CELL_mad_rows:
        case OXL_CELL_dot_rows:
        case OXL_CELL_repack:
        case OXL_CELL_gemm_rp:
        case OXL_CELL_sgemm_acc:
        case OXL_CELL_softmax:
            /* activations, attention steps and the repacked layouts: the quant goldens hold
             * nothing for them (their checks are the kernel tests') */
            break;
        }
    }
    if (qg.dq != NULL && !any_dequant) {
        oxl_golden_line(r, false, "dequant %s: no kernel", tname);
    }
    if (qg.dot != NULL && !any_dot) {
        oxl_golden_line(r, false, "vec_dot %s: no kernel", tname);
    }
    oxl_golden_check_reference_quant(&qg, r);
    return 0;
}
