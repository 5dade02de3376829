/* The quant golden (golden/quant/<type>.gguf, layout in golden/README.md) and its per-kernel
 * checks, shared by `oxillama golden` (oxl_golden_quant) and the generated kernel tests. */
#ifndef OXL_GOLDEN_QUANT_H
#define OXL_GOLDEN_QUANT_H

#include "errors.h"
#include "gguf.h"
#include "golden_report.h"
#include "kernels.h"

/* Views into an open golden file; every array has nrows rows of ne0 elements unless noted. */
typedef struct oxl_quant_golden {
    const char *path;      /* for messages */
    oxl_type type;         /* golden.type_id: the format of q, q_imatrix */
    oxl_type yq_type;      /* golden.vec_dot_type_id: the format of yq */
    bool requires_imatrix; /* golden.requires_imatrix: q was made with the imatrix */
    int64_t ne0, nrows;
    const float *x;        /* inputs to the reference quantizer */
    const float *imatrix;  /* (ne0) importance weights */
    const void *q;         /* reference quantization of x */
    const void *q_imatrix; /* the same with the imatrix */
    const float *dq;       /* to_float(q); NULL for activation-only formats */
    const float *y;        /* activations */
    const void *yq;        /* y converted to yq_type by the CPU backend; NULL when absent */
    const float *dot;      /* (nrows) vec_dot(q row, yq row); NULL when absent */
    const float *dot_f64;  /* (nrows) the same in double precision from dq and dequantized yq */
} oxl_quant_golden;

/* Reads the tensors and keys of a golden.kind = quant file (views into g). -1 with err naming the
 * file and the tensor or key when one is missing or has the wrong type or shape. */
int oxl_quant_golden_read(const oxl_gguf *g, oxl_quant_golden *qg, oxl_error *err);

/* One check line each in r; `name` is the kernel's name (format, op and ISA).
 *   dequant: fn(q) == dq bit for bit (qg->type must be fn's format)
 *   quant:   fn(y) == yq byte for byte (qg->yq_type must be fn's format)
 *   vec_dot: |fn(q, yq) - dot| <= 1e-5 * sum |dq * dequant(yq)| per row; non-finite golden dots
 *            must match by class (both NaN, or the same infinity)
 *   gemm:    every q row times every yq row; the diagonal (row r with row r) checked as vec_dot */
void oxl_golden_check_dequant(const oxl_quant_golden *qg, oxl_dequant_fn fn, const char *name, oxl_golden_report *r);
void oxl_golden_check_quant(const oxl_quant_golden *qg, oxl_quant_fn fn, const char *name, oxl_golden_report *r);
/* fn is the dequantizer of the activation format yq_type (q8_1, q8_K: their own goldens hold no dq):
 * the double sum of dq * fn(yq) per row within 1e-7 * sum |terms| of dot_f64 */
void oxl_golden_check_dequant_activation(const oxl_quant_golden *qg, oxl_dequant_fn fn, const char *name,
                                         oxl_golden_report *r);
void oxl_golden_check_vec_dot(const oxl_quant_golden *qg, oxl_vec_dot_fn fn, const char *name, oxl_golden_report *r);
void oxl_golden_check_gemm(const oxl_quant_golden *qg, oxl_gemm_fn fn, const char *name, oxl_golden_report *r);
/* The reference quantizer (src/quantize/quantize.h) against q and q_imatrix, byte for byte. */
void oxl_golden_check_reference_quant(const oxl_quant_golden *qg, oxl_golden_report *r);

/* golden.kind = quant: dequantization (bit-exact), reference quantization (byte-identical),
 * activation quantization and vec_dot (relative 1e-5 of sum |terms|), for every ISA cell this CPU
 * supports. Returns 0 when it could run (failures are counted in r), -1 with err on unusable files. */
int oxl_golden_quant(const oxl_gguf *g, oxl_golden_report *r, oxl_error *err);

#endif
