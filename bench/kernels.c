/* oxl-bench-kernels: throughput of every generated kernel cell this CPU supports, one table row per
 * (format, op, ISA), driven by the generated kernel list (generated/oxl_kernel_list.inc).
 *
 *   oxl-bench-kernels [--isa NAME] [--type NAME] [--op NAME] [--mib N] [--min-time SECONDS]
 *
 * Each cell runs on rows of 4096 elements, enough rows for about --mib MiB of weights (default 16:
 * beyond the caches, as token generation reads them), repeated until --min-time (default 0.2 s).
 * Columns: GB/s of weight bytes consumed (vec_dot, dequant, gemm: the weight format's bytes; quant
 * and swiglu: the f32 input), and ns per block of the format (per 32 elements for block-size-1
 * formats). Weights come from the reference quantizer (src/quantize/quantize.h) of random normal values,
 * activations from the partner format's scalar quant kernel. */
#include "file.h"
#include "kernels.h"
#include "oxl_kernel_decls.h"
#include "oxl_blocks.h"
#include "matmul.h"
#include "quantize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OXL_BENCH_K = 4096, OXL_BENCH_GEMM_N = 8 };

typedef enum {
#define X(op) OP_##op,
    OXL_KERNEL_OPS(X)
#undef X
} oxl_bench_op;
static const char *const oxl_bench_op_names[] = {
#define X(op) #op,
    OXL_KERNEL_OPS(X)
#undef X
};

static const struct {
    oxl_bench_op op;
    oxl_type type;
    oxl_isa isa;
    const char *name;
    union {
#define X(op) oxl_##op##_fn op;
        OXL_KERNEL_OPS(X)
#undef X
    } fn;
} oxl_bench_cells[] = {
#define OXL_KERNEL(op, type, isa, fn) {OP_##op, type, isa, #fn, {.op = fn}},
#include "oxl_kernel_list.inc"
#undef OXL_KERNEL
};

static uint64_t oxl_rng = 0x9e3779b97f4a7c15ull;

/* normal(0, 1) by Box-Muller on a 64-bit LCG */
static float oxl_randn(void) {
    oxl_rng = oxl_rng * 6364136223846793005ull + 1442695040888963407ull;
    const double u1 = ((double)(oxl_rng >> 11) + 1.0) / 9007199254740993.0;
    oxl_rng = oxl_rng * 6364136223846793005ull + 1442695040888963407ull;
    const double u2 = (double)(oxl_rng >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* rows of x converted to t: the reference quantizer where there is one, else t's scalar quant
 * kernel (f32, f16, bf16, the activation formats). NULL when t has neither. */
static void *oxl_bench_convert(const oxl_kernels *scalar, oxl_type t, const float *x, int64_t nrows) {
    const size_t row = oxl_row_size(t, OXL_BENCH_K);
    uint8_t *out = malloc(row * (size_t)nrows);
    if (out == NULL) {
        return NULL;
    }
    oxl_error err = {{0}};
    if (oxl_quantize_supported(t) && oxl_quantize_rows(t, x, out, nrows, OXL_BENCH_K, NULL, &err) == 0) {
        return out;
    }
    if (scalar->quant[t] == NULL) {
        free(out);
        return NULL;
    }
    for (int64_t r = 0; r < nrows; r++) {
        scalar->quant[t](x + r * OXL_BENCH_K, out + (size_t)r * row, OXL_BENCH_K);
    }
    return out;
}

static void usage(void) {
    fprintf(stderr, "usage: oxl-bench-kernels [--isa NAME] [--type NAME] [--op NAME] [--mib N] [--min-time SECONDS]\n");
}

int main(int argc, char **argv) {
    const char *want_isa = NULL, *want_type = NULL, *want_op = NULL;
    double mib = 16.0, min_time = 0.2;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--isa") == 0) {
            want_isa = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--type") == 0) {
            want_type = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--op") == 0) {
            want_op = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--mib") == 0) {
            mib = atof(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--min-time") == 0) {
            min_time = atof(argv[++i]);
        } else {
            usage();
            return 2;
        }
    }
    if (!(mib > 0.0 && mib <= 4096.0) || !(min_time > 0.0 && min_time <= 60.0)) {
        fprintf(stderr, "oxl-bench-kernels: --mib must be in (0, 4096] and --min-time in (0, 60]\n");
        return 2;
    }
    oxl_kernels scalar;
    oxl_kernels_build(&scalar, OXL_ISA_SCALAR);

    printf("%-8s %-8s %-11s %-40s %9s %12s\n", "format", "op", "isa", "kernel", "GB/s", "ns/block");
    for (size_t c = 0; c < sizeof oxl_bench_cells / sizeof oxl_bench_cells[0]; c++) {
        const oxl_type t = oxl_bench_cells[c].type;
        const oxl_type_traits *tr = oxl_type_traits_get(t);
        const oxl_bench_op op = oxl_bench_cells[c].op;
        const char *isa = oxl_isa_name(oxl_bench_cells[c].isa);
        if ((want_isa && strcmp(want_isa, isa) != 0) || (want_type && strcmp(want_type, tr->name) != 0) ||
            (want_op && strcmp(want_op, oxl_bench_op_names[op]) != 0)) {
            continue;
        }
        if (!oxl_cpu_has_isa(oxl_bench_cells[c].isa)) {
            printf("%-8s %-8s %-11s %-40s %9s %12s\n", tr->name, oxl_bench_op_names[op], isa, oxl_bench_cells[c].name,
                   "-", "(no ISA)");
            continue;
        }
        const size_t wrow = oxl_row_size(t, OXL_BENCH_K);
        int64_t nrows = (int64_t)(mib * 1048576.0 / (double)wrow);
        nrows = nrows < 1 ? 1 : nrows;
        /* quant and swiglu read f32 rows: size them by the f32 bytes */
        if (op == OP_quant || op == OP_swiglu || op == OP_mad || op == OP_mad_rows || op == OP_dot_rows ||
            op == OP_sgemm_acc || op == OP_softmax) {
            nrows = (int64_t)(mib * 1048576.0 / (OXL_BENCH_K * sizeof(float)));
            nrows = nrows < 1 ? 1 : nrows;
        }
        float *xf = malloc((size_t)(nrows * OXL_BENCH_K) * sizeof(float));
        float *out = malloc((size_t)(OXL_BENCH_K * OXL_BENCH_GEMM_N) * sizeof(float) + wrow);
        if (xf == NULL || out == NULL) {
            fprintf(stderr, "oxl-bench-kernels: out of memory\n");
            return 1;
        }
        for (int64_t i = 0; i < nrows * OXL_BENCH_K; i++) {
            xf[i] = oxl_randn();
        }
        const oxl_type pt = tr->vec_dot_type;
        void *w = NULL, *act = NULL;
        const bool rp = op == OP_repack || op == OP_gemm_rp;
        const int rp_rows = oxl_repack_rows(t, oxl_bench_cells[c].isa);
        if (rp) {
            nrows = nrows / rp_rows * rp_rows;
        }
        if (op == OP_dequant || op == OP_vec_dot || op == OP_gemm || rp) {
            w = oxl_bench_convert(&scalar, t, xf, nrows);
        }
        if (op == OP_vec_dot || op == OP_gemm || op == OP_gemm_rp) {
            act = oxl_bench_convert(&scalar, pt, xf, OXL_BENCH_GEMM_N);
        }
        /* gemm_rp: the weights in its layout, and the activation block sums a q8_0 partner needs */
        void *wrp = NULL;
        int32_t bsum[OXL_BENCH_GEMM_N * (OXL_BENCH_K / 32 + OXL_BENCH_K / 4)];
        if (rp && w != NULL) {
            wrp = malloc((size_t)nrows / (size_t)rp_rows * (size_t)(OXL_BENCH_K / tr->blck_size) *
                         oxl_repack_group_bytes(t, oxl_bench_cells[c].isa));
            oxl_kernels kk;
            oxl_kernels_build(&kk, oxl_bench_cells[c].isa);
            if (wrp != NULL && kk.repack[t] != NULL) {
                kk.repack[t](OXL_BENCH_K, nrows, w, wrow, wrp);
            }
            for (int j = 0; act != NULL && pt == OXL_TYPE_Q8_0 && j < OXL_BENCH_GEMM_N; j++) {
                oxl_q8_0_sums((const char *)act + (size_t)j * oxl_row_size(pt, OXL_BENCH_K), OXL_BENCH_K,
                              bsum + j * (OXL_BENCH_K / 32 + OXL_BENCH_K / 4));
            }
        }
        if ((op == OP_dequant || op == OP_vec_dot || op == OP_gemm || rp) &&
            (w == NULL || (rp && wrp == NULL) || (op != OP_dequant && op != OP_repack && act == NULL))) {
            printf("%-8s %-8s %-11s %-40s %9s %12s\n", tr->name, oxl_bench_op_names[op], isa, oxl_bench_cells[c].name,
                   "-", "(no data)");
            free(xf);
            free(out);
            free(w);
            free(wrp);
            free(act);
            continue;
        }
        const int64_t gemm_m = 64;
        double bytes_per_pass = 0.0, blocks_per_pass = 0.0;
        int passes = 0;
        volatile float sink = 0.0f;
        const double t0 = oxl_clock_s();
        double t1 = t0;
        const int64_t blck = tr->blck_size > 1 ? tr->blck_size : 32;
        while (t1 - t0 < min_time) {
            switch (op) {
            case OP_dequant:
                for (int64_t r = 0; r < nrows; r++) {
                    oxl_bench_cells[c].fn.dequant((const uint8_t *)w + (size_t)r * wrow, out, OXL_BENCH_K);
                }
                bytes_per_pass = (double)wrow * (double)nrows;
                blocks_per_pass = (double)nrows * OXL_BENCH_K / (double)blck;
                break;
            case OP_quant:
                for (int64_t r = 0; r < nrows; r++) {
                    oxl_bench_cells[c].fn.quant(xf + r * OXL_BENCH_K, out, OXL_BENCH_K);
                }
                bytes_per_pass = (double)nrows * OXL_BENCH_K * sizeof(float);
                blocks_per_pass = (double)nrows * OXL_BENCH_K / (double)blck;
                break;
            case OP_vec_dot:
                for (int64_t r = 0; r < nrows; r++) {
                    float s = 0.0f;
                    oxl_bench_cells[c].fn.vec_dot(OXL_BENCH_K, &s, (const uint8_t *)w + (size_t)r * wrow, act);
                    sink += s;
                }
                bytes_per_pass = (double)wrow * (double)nrows;
                blocks_per_pass = (double)nrows * OXL_BENCH_K / (double)blck;
                break;
            case OP_gemm:
                for (int64_t r = 0; r + gemm_m <= nrows; r += gemm_m) {
                    oxl_bench_cells[c].fn.gemm(OXL_BENCH_K, gemm_m, OXL_BENCH_GEMM_N,
                                               (const uint8_t *)w + (size_t)r * wrow, wrow, act,
                                               oxl_row_size(pt, OXL_BENCH_K), out, gemm_m);
                }
                bytes_per_pass = (double)wrow * (double)(nrows / gemm_m * gemm_m);
                blocks_per_pass = (double)(nrows / gemm_m * gemm_m) * OXL_BENCH_K / (double)blck;
                break;
            case OP_swiglu:
                for (int64_t r = 0; r + 1 < nrows; r += 2) {
                    oxl_bench_cells[c].fn.swiglu(OXL_BENCH_K, out, xf + r * OXL_BENCH_K, xf + (r + 1) * OXL_BENCH_K);
                }
                bytes_per_pass = (double)(nrows / 2) * OXL_BENCH_K * sizeof(float);
                blocks_per_pass = (double)(nrows / 2) * OXL_BENCH_K / (double)blck;
                break;
            case OP_repack:
                oxl_bench_cells[c].fn.repack(OXL_BENCH_K, nrows, w, wrow, wrp);
                bytes_per_pass = (double)wrow * (double)nrows;
                blocks_per_pass = (double)nrows * OXL_BENCH_K / (double)blck;
                break;
            case OP_gemm_rp:
                oxl_bench_cells[c].fn.gemm_rp(OXL_BENCH_K, nrows, OXL_BENCH_GEMM_N, wrp, act,
                                              oxl_row_size(pt, OXL_BENCH_K), pt == OXL_TYPE_Q8_0 ? bsum : NULL, out, 0);
                bytes_per_pass = (double)wrow * (double)nrows;
                blocks_per_pass = (double)nrows * OXL_BENCH_K / (double)blck;
                break;
            case OP_sgemm_acc:
                /* flash attention's shape: 64 x 64 tiles, k = 64 */
                for (int64_t r = 0; r + 2 <= nrows; r += 2) {
                    oxl_bench_cells[c].fn.sgemm_acc(64, 64, 64, out, xf + r * OXL_BENCH_K, xf + (r + 1) * OXL_BENCH_K);
                }
                bytes_per_pass = (double)(nrows / 2) * OXL_BENCH_K * sizeof(float);
                blocks_per_pass = (double)(nrows / 2) * OXL_BENCH_K / (double)blck;
                break;
            case OP_softmax:
                for (int64_t r = 0; r < nrows; r++) {
                    sink += (float)oxl_bench_cells[c].fn.softmax(OXL_BENCH_K, out, xf + r * OXL_BENCH_K, 4.0f);
                }
                bytes_per_pass = (double)nrows * OXL_BENCH_K * sizeof(float);
                blocks_per_pass = (double)nrows * OXL_BENCH_K / (double)blck;
                break;
            case OP_mad:
                for (int64_t r = 0; r < nrows; r++) {
                    oxl_bench_cells[c].fn.mad(OXL_BENCH_K, out, xf + r * OXL_BENCH_K, 0.5f);
                }
                bytes_per_pass = (double)nrows * OXL_BENCH_K * sizeof(float);
                blocks_per_pass = (double)nrows * OXL_BENCH_K / (double)blck;
                break;
            case OP_dot_rows: {
                /* flash attention's decode scores: the buffer as f16 cache rows of 64, in runs of 64,
                 * against one query of 64 */
                const int64_t n_rows = nrows * OXL_BENCH_K / 128;
                for (int64_t r = 0; r + 64 <= n_rows; r += 64) {
                    oxl_bench_cells[c].fn.dot_rows(64, 64, 1, out, (const char *)xf + r * 128, 128, xf, 128);
                }
                bytes_per_pass = (double)(n_rows / 64 * 64) * 128;
                blocks_per_pass = (double)(n_rows / 64 * 64) * 64 / (double)blck;
                break;
            }
            case OP_mad_rows: {
                /* flash attention's decode shape: the buffer as f16 cache rows of 64, in runs of 64 */
                float ones[64], halves[64];
                for (int i = 0; i < 64; i++) {
                    ones[i] = 1.0f;
                    halves[i] = 0.5f;
                    out[i] = 0.0f;
                }
                const int64_t n_rows = nrows * OXL_BENCH_K / 128;
                for (int64_t r = 0; r + 64 <= n_rows; r += 64) {
                    oxl_bench_cells[c].fn.mad_rows(64, 64, 1, out, (const char *)xf + r * 128, 128, ones, halves);
                }
                bytes_per_pass = (double)(n_rows / 64 * 64) * 128;
                blocks_per_pass = (double)(n_rows / 64 * 64) * 64 / (double)blck;
                break;
            }
            }
            passes++;
            t1 = oxl_clock_s();
        }
        const double secs = t1 - t0;
        printf("%-8s %-8s %-11s %-40s %9.2f %12.2f\n", tr->name, oxl_bench_op_names[op], isa, oxl_bench_cells[c].name,
               bytes_per_pass * passes / secs * 1e-9, secs * 1e9 / (blocks_per_pass * passes));
        fflush(stdout);
        free(xf);
        free(out);
        free(w);
        free(wrp);
        free(act);
    }
    return 0;
}
