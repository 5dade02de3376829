/* Kernel dispatch: the best kernel per (op, format) for this CPU, chosen once at start-up by a loop
 * over the generated kernel list (generated/oxl_kernel_list.inc, best ISA first, scalar last),
 * capped by OXILLAMA_ISA=<isa name>.
 *
 * Kernel signatures (ggml's, from ggml/src/ggml-cpu/ggml-cpu.h type traits):
 *   dequant:  y[0..n) = to_float(x), n a multiple of the format's block size
 *   quant:    activation quantizer, y = from_float(x) in the format (Q8_0, F16, BF16, F32 copy)
 *   vec_dot:  *s = dot(x, y) over n elements, x in the weight format, y in its vec_dot_type
 *   gemm:     c[j * ldc + i] = dot(row i of a, column j of b) for i < m, j < n: a holds m weight rows
 *             of k elements (lda bytes apart), b n columns of k in the vec_dot_type (ldb bytes
 *             apart), c floats; k a multiple of oxl_gemm_k_step(type) (generated/oxl_kernel_decls.h:
 *             16, bf16 32). f32, f16 and bf16 only, summed as llamafile's tinyBLAS on AVX-512 (bf16:
 *             its AVX512-BF16 vdpbf16ps; docs/kernels.md).
 *   swiglu:   y[i] = silu(x[i]) * g[i] over one row of n (y may be x), f32 only: ggml_vec_swiglu_f32
 *             of the AVX-512 build (its vector SiLU on whole groups of 16, expf on the rest), so
 *             the row boundaries matter: call it once per row.
 *   repack:   rows 0..m of a weight matrix (m a multiple of the layout's rows) rewritten into the
 *             ISA's interleaved layout (gen/spec.py REPACKS; oxl_repack_rows/_group_bytes in
 *             generated/oxl_kernel_decls.h): group g, block b at (g * blocks per row + b) * group bytes
 *   gemm_rp:  gemm over repacked weights: c[j * ldc + i] = row i . column j for i < m, j < n, the
 *             columns in the vec_dot_type (ldb bytes apart); for a q8_0 partner bsum holds per column
 *             (k / 32 + k / 4 apart) the sum of each block's quants, then of each group of 4 (NULL
 *             for q8_K, which carries bsums). One column (n == 1) is summed in ggml's vec_dot order
 *             where the layout's template says so (Q4_0, Q8_0: decoding equals the plain rows')
 *   sgemm_acc: c[m x n] += a[m x k] b[k x n] (row-major, n % 16 == 0), each output one FMA per kk in
 *             order: ggml's simd_gemm, the products of its tiled flash attention (f32 only)
 *   softmax:  y[i] = exp(x[i] - max), returning the sum in double: ggml_vec_soft_max_f32 (f32 only)
 *   mad:      y[i] = fma(x[i], s, y[i]) over n (ggml_vec_mad_f32); on f16, each result rounded to
 *             the nearest half (ggml_vec_mad_f16: y holds an f16 accumulator's values as floats).
 */
#ifndef OXL_KERNELS_H
#define OXL_KERNELS_H

#include "oxl_types.h" /* generated: oxl_type enum, oxl_type_traits, oxl_isa enum */

#include <stddef.h>
#include <stdint.h>

typedef void (*oxl_dequant_fn)(const void *restrict x, float *restrict y, int64_t n);
typedef void (*oxl_quant_fn)(const float *restrict x, void *restrict y, int64_t n);
typedef void (*oxl_vec_dot_fn)(int64_t n, float *restrict s, const void *restrict x, const void *restrict y);
typedef void (*oxl_gemm_fn)(int64_t k, int64_t m, int64_t n, const void *restrict a, size_t lda,
                            const void *restrict b, size_t ldb, float *restrict c, int64_t ldc);
typedef void (*oxl_swiglu_fn)(int64_t n, float *y, const float *x, const float *g);
typedef void (*oxl_repack_fn)(int64_t k, int64_t m, const void *restrict src, size_t src_row, void *restrict dst);
typedef void (*oxl_gemm_rp_fn)(int64_t k, int64_t m, int64_t n, const void *restrict a, const void *restrict b,
                               size_t ldb, const int32_t *restrict bsum, float *restrict c, int64_t ldc);
typedef void (*oxl_sgemm_acc_fn)(int64_t m, int64_t k, int64_t n, float *restrict c, const float *restrict a,
                                 const float *restrict b);
typedef double (*oxl_softmax_fn)(int64_t n, float *y, const float *x, float max);
typedef void (*oxl_mad_fn)(int64_t n, float *restrict y, const float *restrict x, float s);

/* The chosen kernel per format (indexed by oxl_type; NULL where the format has no such op). */
typedef struct oxl_kernels {
    oxl_dequant_fn dequant[OXL_TYPE_COUNT];
    oxl_quant_fn quant[OXL_TYPE_COUNT];     /* for formats that are an activation type */
    oxl_vec_dot_fn vec_dot[OXL_TYPE_COUNT]; /* indexed by the weight format */
    oxl_gemm_fn gemm[OXL_TYPE_COUNT];       /* indexed by the weight format */
    oxl_swiglu_fn swiglu[OXL_TYPE_COUNT];   /* [OXL_TYPE_F32] only */
    oxl_repack_fn repack[OXL_TYPE_COUNT];   /* weight formats with a repacked layout on this CPU */
    oxl_gemm_rp_fn gemm_rp[OXL_TYPE_COUNT];
    int repack_rows[OXL_TYPE_COUNT];        /* the chosen layout's rows per group (0: none) */
    size_t repack_group_bytes[OXL_TYPE_COUNT];
    oxl_mad_fn mad[OXL_TYPE_COUNT];
    oxl_sgemm_acc_fn sgemm_acc[OXL_TYPE_COUNT]; /* [OXL_TYPE_F32] only */
    oxl_softmax_fn softmax[OXL_TYPE_COUNT];     /* [OXL_TYPE_F32] only */         /* [OXL_TYPE_F32], [OXL_TYPE_F16]: the accumulator's type */
    oxl_isa dequant_isa[OXL_TYPE_COUNT];
    oxl_isa quant_isa[OXL_TYPE_COUNT];
    oxl_isa vec_dot_isa[OXL_TYPE_COUNT];
    oxl_isa gemm_isa[OXL_TYPE_COUNT];
    oxl_isa swiglu_isa[OXL_TYPE_COUNT];
    oxl_isa mad_isa[OXL_TYPE_COUNT];
    oxl_isa repack_isa[OXL_TYPE_COUNT];
} oxl_kernels;

/* The process-wide table, built on first use (thread-safe). */
const oxl_kernels *oxl_kernels_get(void);
/* Builds a table using only ISAs <= cap that the CPU supports (tests pin every ISA this way). */
void oxl_kernels_build(oxl_kernels *k, oxl_isa cap);

/* CPU support for an ISA level (CPUID + XGETBV on x86). */
bool oxl_cpu_has_isa(oxl_isa isa);
/* The cap from OXILLAMA_ISA, or the best ISA this CPU runs when it is unset, not an ISA's name, or
 * names an ISA this CPU cannot run (oxl_isa_env_check reports those two cases). */
oxl_isa oxl_isa_cap(void);
/* 0 when OXILLAMA_ISA is unset or names an ISA this CPU runs; otherwise -1 with err saying which
 * (an unknown name, or an ISA the CPU lacks, with the ISAs it has). oxl_model_load and the CLI refuse
 * to run on such a setting rather than silently use another ISA. */
struct oxl_error;
int oxl_isa_env_check(struct oxl_error *err);
const char *oxl_isa_name(oxl_isa isa);
/* -1 when name is not an ISA of the spec. */
int oxl_isa_from_name(const char *name);

#endif
