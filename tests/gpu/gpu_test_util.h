/* Shared by the GPU tests: the device (skipped when there is none, failed under
 * OXILLAMA_REQUIRE_VULKAN=1), buffers from host arrays, and a seeded generator. */
#ifndef OXL_GPU_TEST_UTIL_H
#define OXL_GPU_TEST_UTIL_H

#include "gpu.h"
#include "oxl_types.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The device of the test, opened once per test process; skips (or fails under
 * OXILLAMA_REQUIRE_VULKAN=1) when there is none. */
oxl_gpu *gpu_test_device(void);
/* A device buffer holding n bytes of src (src NULL: zeros). */
oxl_gpu_buf *gpu_test_buf(oxl_gpu *g, const void *src, size_t n);
/* Reads n bytes of b into a new host array (free it). */
void *gpu_test_read(oxl_gpu *g, oxl_gpu_buf *b, size_t n);
/* Uniform floats in [lo, hi) from a fixed-seed LCG. */
void gpu_test_fill(float *x, size_t n, float lo, float hi, uint32_t seed);
/* |a-b| <= rel * max(|b|, floor) for every element; reports the first that is not. */
void gpu_test_close(const float *a, const float *b, size_t n, float rel, float floor, const char *what);
/* The CPU's product Y (nrows, ncols) = W . X for f32, f16 or bf16 weights, as src/kernels/matmul.c
 * computes it (ggml's choice): the gemm kernel (tinyBLAS's order) when ncols >= 2, K is a multiple of
 * oxl_gemm_k_step(t) and nrows of 4, else one vec_dot per output. w: nrows rows of K elements, wrow
 * bytes apart; x: ncols columns in t's vec_dot_type, xrow bytes apart; y[c * nrows + r]. Returns
 * whether it took the gemm order. */
bool gpu_test_cpu_product(oxl_type t, int64_t K, int64_t nrows, int64_t ncols, const void *w, size_t wrow,
                          const void *x, size_t xrow, float *y);
/* Whether g is Mesa's lavapipe (llvmpipe), whose float division and square root are correctly
 * rounded as the CPU's: ops built from them are checked for the CPU's bits there, within a bound
 * elsewhere (Vulkan allows 2.5 ulp for a division). */
bool gpu_test_exact_math(const oxl_gpu *g);
/* Every a[i] has b[i]'s bits (the device summed in the CPU's order); reports the first that has not. */
void gpu_test_same_bits(const float *a, const float *b, size_t n, const char *what);

#endif
