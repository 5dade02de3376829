/* Shared by the GPU tests: the device (skipped when there is none, failed under
 * OXILLAMA_REQUIRE_VULKAN=1), buffers from host arrays, and a seeded generator. */
#ifndef OXL_GPU_TEST_UTIL_H
#define OXL_GPU_TEST_UTIL_H

#include "gpu.h"

#include <criterion/criterion.h>
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

#endif
