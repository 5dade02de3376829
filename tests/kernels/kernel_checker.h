/* The one checker behind the generated kernel tests (generated/tests/kernels.c): each cell of the
 * kernel list calls the function of its op, which skips when this CPU lacks the ISA and otherwise
 * compares the kernel against golden/quant/<format>.gguf (src/check/golden_quant.h). f32, which has no
 * golden file, is checked on the f32 tensors of golden/quant/f16.gguf: conversions must be exact
 * copies and the dot within tolerance of a double-precision sum.
 *
 * The f32 and f16 dots and gemms must also equal, bit for bit, the scalar reference of ggml's
 * AVX-512 summation order in kernel_checker.c (written independently of the generated kernels), on
 * lengths that exercise every part of that order; every ISA is held to the same reference, so the
 * ISAs agree with each other too. */
#ifndef OXL_KERNEL_CHECKER_H
#define OXL_KERNEL_CHECKER_H

#include "kernels.h"

void oxl_check_dequant(oxl_type type, oxl_isa isa, oxl_dequant_fn fn, const char *name);
void oxl_check_quant(oxl_type type, oxl_isa isa, oxl_quant_fn fn, const char *name);
void oxl_check_vec_dot(oxl_type type, oxl_isa isa, oxl_vec_dot_fn fn, const char *name);
void oxl_check_gemm(oxl_type type, oxl_isa isa, oxl_gemm_fn fn, const char *name);
/* swiglu: bit for bit against a scalar reference of ggml_vec_swiglu_f32 (AVX-512 build) on
 * activations that reach every branch of ggml's vector expf, in place and not */
void oxl_check_swiglu(oxl_type type, oxl_isa isa, oxl_swiglu_fn fn, const char *name);
/* mad: bit for bit against fmaf (ggml_vec_mad_f32) and, on f16, fmaf then rounding to the nearest
 * half (ggml_vec_mad_f16), over lengths that leave every leftover size. */
/* repack and gemm_rp (one check, run for both cells): weights from the reference quantizer of
 * random values, repacked by the ISA's repack kernel and multiplied by its gemm_rp against columns
 * from the partner's quantizer, for several k, m and column counts (every tile remainder); each
 * output against the scalar vec_dot of the plain rows, within 1e-5 of sum |w x| (the block integers
 * are exact; only the float sums are ordered differently). Outputs outside m x n stay untouched. */
void oxl_check_repack(oxl_type type, oxl_isa isa, oxl_repack_fn fn, const char *name);
void oxl_check_gemm_rp(oxl_type type, oxl_isa isa, oxl_gemm_rp_fn fn, const char *name);
/* sgemm_acc and softmax: bit for bit against scalar references of ggml's simd_gemm (fmaf per kk in
 * order) and ggml_vec_soft_max_f32 (ggml_v_expf per group of 16, GCC's _mm512_reduce_add_ps order,
 * double sum; expf on the rest). */
void oxl_check_sgemm_acc(oxl_type type, oxl_isa isa, oxl_sgemm_acc_fn fn, const char *name);
void oxl_check_softmax(oxl_type type, oxl_isa isa, oxl_softmax_fn fn, const char *name);
void oxl_check_mad(oxl_type type, oxl_isa isa, oxl_mad_fn fn, const char *name);
/* mad_rows: bit for bit against its definition row by row (ms[r] != 1: y * ms[r] rounded to a half;
 * then fmaf(x_r, vs[r], y) rounded to a half), over lengths that leave every leftover size, padded
 * rows, runs of 0 to 9 rows for 1 to 3 heads, scales of exactly 1 (skipped), 0 (a first maximum) and
 * in between. */
void oxl_check_mad_rows(oxl_type type, oxl_isa isa, oxl_mad_rows_fn fn, const char *name);
/* dot_rows: bit for bit against the same ISA's vec_dot of each row and head, over lengths that leave
 * every leftover size, runs of 0 to 9 rows (whole fours and the rest) and 1 to 3 heads. */
void oxl_check_dot_rows(oxl_type type, oxl_isa isa, oxl_dot_rows_fn fn, const char *name);

/* The references themselves (exported for the cross-ISA tests in test_kernels.c). */
float oxl_ref_dot_f32(int64_t n, const float *x, const float *y);
float oxl_ref_dot_f16(int64_t n, const uint16_t *x, const uint16_t *y);
/* ggml_vec_dot_bf16 of the AVX512-BF16 build (vdpbf16ps emulated per element) */
float oxl_ref_dot_bf16(int64_t n, const uint16_t *x, const uint16_t *y);
/* one output of the bf16 gemm (tinyBLAS<32, __m512, __m512bh>): k % 32 == 0 */
float oxl_ref_gemm_bf16_one(int64_t k, const uint16_t *a, const uint16_t *b);
/* one output of the gemm: a and b are k floats (f16 inputs converted exactly), k % 16 == 0 */
float oxl_ref_gemm_one(int64_t k, const float *a, const float *b);
/* ggml_v_silu of one lane (ggml-cpu/vec.h, AVX-512 form) */
float oxl_ref_vsilu(float x);
/* ggml_v_expf of one lane (AVX-512 build) */
float oxl_ref_vexpf(float t);

#endif
